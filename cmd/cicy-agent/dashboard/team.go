// Package dashboard is `cicy-agent dashboard`: a Bubble Tea
// program fed by the supervisor's team event stream, and the team model
// that `status --watch` shares with it.
package dashboard

import (
	"cmp"
	"slices"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/topology"
)

// Team is the team as a subscriber of the event stream knows it: the
// snapshot, with every change after it applied.
type Team struct {
	Panes   []api.PaneInfo // in id order
	Tasks   map[int64]api.TaskInfo
	Summary api.TaskSummary
	// Home is what needs a person about the home as a whole.
	Home api.HomeInfo
	// Synced is false until the first snapshot.
	Synced bool
}

// NewTeam is an empty team.
func NewTeam() *Team { return &Team{Tasks: map[int64]api.TaskInfo{}} }

// Apply folds one event into the team.
func (t *Team) Apply(ev api.Event) {
	switch ev.Type {
	case "snapshot":
		if ev.Snapshot == nil {
			return
		}
		t.Panes = slices.Clone(ev.Snapshot.Panes)
		t.Tasks = map[int64]api.TaskInfo{}
		for _, k := range ev.Snapshot.Tasks {
			t.Tasks[k.ID] = k
		}
		t.Summary = ev.Snapshot.Summary
		t.Home = ev.Snapshot.Home
		t.Synced = true
	case "pane":
		if ev.Pane == nil {
			return
		}
		if i := t.index(ev.Pane.ID); i >= 0 {
			t.Panes[i] = *ev.Pane
			return
		}
		t.Panes = append(t.Panes, *ev.Pane)
		slices.SortFunc(t.Panes, func(a, b api.PaneInfo) int { return api.ComparePaneIDs(a.ID, b.ID) })
	case "state":
		if i := t.index(ev.ID); i >= 0 && ev.State != nil {
			p := &t.Panes[i]
			p.State, p.Reason, p.Since, p.PID, p.ExitCode = string(ev.State.State), ev.State.Reason, ev.State.Since, ev.State.PID, ev.State.ExitCode
		}
	case "pane_removed":
		if i := t.index(ev.ID); i >= 0 {
			t.Panes = slices.Delete(t.Panes, i, i+1)
		}
	case "task":
		if ev.Task != nil {
			t.Tasks[ev.Task.ID] = *ev.Task
			t.trim()
		}
	case "summary":
		if ev.Summary != nil {
			t.Summary = *ev.Summary
		}
	case "home":
		if ev.Home != nil {
			t.Home = *ev.Home
		}
	}
}

// trim forgets finished tasks beyond the recent ones, so a long-lived
// dashboard does not grow.
func (t *Team) trim() {
	var finished []int64
	for id, k := range t.Tasks {
		if k.Ended() {
			finished = append(finished, id)
		}
	}
	if len(finished) <= api.RecentTasks {
		return
	}
	slices.Sort(finished)
	for _, id := range finished[:len(finished)-api.RecentTasks] {
		delete(t.Tasks, id)
	}
}

func (t *Team) index(id string) int {
	return slices.IndexFunc(t.Panes, func(p api.PaneInfo) bool { return p.ID == id })
}

// Pane returns a pane by id.
func (t *Team) Pane(id string) (api.PaneInfo, bool) {
	if i := t.index(id); i >= 0 {
		return t.Panes[i], true
	}
	return api.PaneInfo{}, false
}

// Status is the topology view, built as the supervisor builds it.
func (t *Team) Status(now time.Time) topology.Status {
	return api.TeamStatus(t.Panes, t.open(), t.Summary, t.Home, now)
}

// Current maps each worker to the task it works on now.
func (t *Team) Current() map[string]api.TaskInfo { return api.CurrentTasks(t.open()) }

// open are the tasks not finished, in id order.
func (t *Team) open() []api.TaskInfo {
	open := make([]api.TaskInfo, 0, len(t.Tasks))
	for _, k := range t.Tasks {
		if !k.Ended() {
			open = append(open, k)
		}
	}
	slices.SortFunc(open, func(a, b api.TaskInfo) int { return cmp.Compare(a.ID, b.ID) })
	return open
}

// Recent are the tasks, latest first.
func (t *Team) Recent() []api.TaskInfo {
	out := make([]api.TaskInfo, 0, len(t.Tasks))
	for _, k := range t.Tasks {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b api.TaskInfo) int { return cmp.Compare(b.ID, a.ID) })
	return out
}
