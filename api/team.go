package api

import (
	"slices"
	"strconv"
	"time"

	"github.com/cicy-ai/cicy-agent/topology"
)

// CurrentTasks maps each worker to the task it works on now: its
// delivered task (the latest, of tasks in id order).
func CurrentTasks(tasks []TaskInfo) map[string]TaskInfo {
	current := map[string]TaskInfo{}
	for _, t := range tasks {
		if t.Status == TaskDelivered {
			current[t.To] = t
		}
	}
	return current
}

// TeamStatus is the status view (see docs/http-api.md) of panes in display order, given
// the tasks in flight (those delivered are their workers' current tasks),
// the task summary and the home (its needs come first). The supervisor
// and the stream's subscribers build it the same way.
func TeamStatus(panes []PaneInfo, tasks []TaskInfo, sum TaskSummary, home HomeInfo, now time.Time) topology.Status {
	current := CurrentTasks(tasks)
	queued := map[string][]int64{}
	for _, t := range tasks {
		if t.Status == TaskQueued {
			queued[t.To] = append(queued[t.To], t.ID)
		}
	}
	ps := make([]topology.Pane, 0, len(panes))
	for _, pi := range panes {
		u := pi.Usage
		tp := topology.Pane{ID: pi.ID, Title: pi.Title, Type: pi.Type, Role: pi.Role, Node: pi.Node, State: pi.State, Reason: pi.Reason,
			Tokens: u.InputTokens + u.OutputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens, CacheHit: pi.CacheHit, Compactable: pi.Compactable,
			OverBudget: pi.OverBudget, Upstream: pi.Upstream, NoProvider: pi.ProviderError}
		if pi.Master != nil {
			tp.Master = *pi.Master
		}
		if q := queued[pi.ID]; len(q) > 0 {
			tp.Queued, tp.FirstQueued = len(q), slices.Min(q)
		}
		if w := pi.Worktree; w != nil {
			tp.Work = topology.Work{Branch: w.Branch, Ahead: w.Ahead, Added: w.Added, Deleted: w.Deleted}
		}
		if t, ok := current[pi.ID]; ok {
			tp.CurrentTask = strconv.FormatInt(t.ID, 10)
			if t.DeliveredAt != nil {
				tp.Elapsed = now.Sub(*t.DeliveredAt).Seconds()
			}
		}
		ps = append(ps, tp)
	}
	counts := make(map[string]topology.TaskCounts, len(sum.Counts))
	for master, m := range sum.Counts {
		counts[master] = topology.TaskCounts{Queued: m[TaskQueued], Delivered: m[TaskDelivered], Done: m[TaskDone], Failed: m[TaskFailed], Cancelled: m[TaskCancelled]}
	}
	st := topology.Build(ps, counts, sum.Failed)
	if needs := home.Needs(); len(needs) > 0 {
		st.NeedsYou = append(needs, st.NeedsYou...)
	}
	st.CameBack = home.CameBack
	st.Notify = home.Notify
	return st
}
