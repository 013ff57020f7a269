package gitwork

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/panetype"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/worktree"
)

// Target is what diff and merge act on: a worker's worktree, and the
// range of commits (one task's, or the worker's unmerged work).
type Target struct {
	Pane string       // the worker
	Task *schema.Task // the task, when one was named
	w    worktree.Worktree
	base string // "" for a worker: where its branch forks from its target
	head string
}

// Resolve finds a task ("7") or a worker ("w-3") with a worktree, kept
// or running.
func (k *Keeper) Resolve(ctx context.Context, target string) (Target, error) {
	target = strings.TrimSpace(target)
	if n, err := strconv.ParseInt(target, 10, 64); err == nil && n > 0 {
		t, err := k.tasks.Task(ctx, n)
		if err != nil {
			return Target{}, err
		}
		if t.Branch == "" {
			return Target{}, api.Usagef("task %d left no change on a worktree (%s; its worker %s runs in none, or the task did not end done)", n, t.Status, t.To)
		}
		w, err := k.paneWorktree(ctx, t.To)
		if err != nil {
			return Target{}, err
		}
		return Target{Pane: t.To, w: w, Task: &t, base: t.Base, head: t.Head}, nil
	}
	var w worktree.Worktree
	var id string
	var err error
	if strings.HasPrefix(target, "cicy/") {
		if w, id, err = k.branchWorktree(ctx, target); err != nil {
			return Target{}, err
		}
	} else {
		if id, err = k.panes.ID(target); err != nil {
			return Target{}, err
		}
		if w, err = k.paneWorktree(ctx, id); err != nil {
			return Target{}, err
		}
	}
	head, err := k.Git.Rev(ctx, w.Repo, "refs/heads/"+w.Branch)
	if err != nil || head == "" {
		return Target{}, api.Failedf("the branch %s of %s is gone from %s", w.Branch, id, w.Repo)
	}
	return Target{Pane: id, w: w, head: head}, nil
}

// paneWorktree is pane id's worktree: from its config while it exists,
// else found by its branch in the repositories the home's worktrees came
// from (a killed pane whose work was kept).
func (k *Keeper) paneWorktree(ctx context.Context, id string) (worktree.Worktree, error) {
	if p, found := k.panes.Pane(id); found {
		w, ok := Of(p.Config)
		if !ok {
			return w, api.Usagef("pane %s runs in no worktree (create a worker with --worktree)", id)
		}
		return w, nil
	}
	for _, l := range k.listWorktrees(ctx) {
		if l.Pane == id {
			return worktree.Worktree{Path: l.Path, Repo: l.Repo, Branch: l.Branch, Target: l.Target}, nil
		}
	}
	if node, ok := k.panes.Elsewhere(ctx, id); ok {
		return worktree.Worktree{}, api.Usagef("%s runs on node %s: its worktree is on that machine; run diff and merge with that node's supervisor", id, node)
	}
	return worktree.Worktree{}, api.PaneNotFound(id)
}

// branchWorktree is the worktree of the home's worker branch b, kept or
// running, and its pane's id.
func (k *Keeper) branchWorktree(ctx context.Context, b string) (worktree.Worktree, string, error) {
	for _, l := range k.listWorktrees(ctx) {
		if l.Branch == b {
			return worktree.Worktree{Path: l.Path, Repo: l.Repo, Branch: l.Branch, Target: l.Target}, l.Pane, nil
		}
	}
	return worktree.Worktree{}, "", &api.Error{Kind: api.KindNotFound, Message: fmt.Sprintf("no worker branch %s of this home (see 'cicy-agent worktrees')", b)}
}

// Diff is the change of a task or a worker, as git prints it (with
// --stat, its summary).
func (k *Keeper) Diff(ctx context.Context, target string, stat bool) (api.DiffResult, error) {
	wt, err := k.Resolve(ctx, target)
	if err != nil {
		return api.DiffResult{}, err
	}
	base := wt.base
	if base == "" {
		if base, err = k.Git.ForkPoint(ctx, wt.w.Repo, wt.w.Target, wt.head); err != nil {
			return api.DiffResult{}, api.Failedf("%s and %s share no history: %v", wt.w.Branch, wt.w.Target, err)
		}
	}
	c, err := k.Git.Stat(ctx, wt.w.Repo, base, wt.head)
	if err != nil {
		return api.DiffResult{}, api.Failedf("%v", err)
	}
	text, err := k.Git.Diff(ctx, wt.w.Repo, base, wt.head, stat)
	if err != nil {
		return api.DiffResult{}, api.Failedf("%v", err)
	}
	c.Branch = wt.w.Branch
	res := api.DiffResult{Work: c.Work, Diff: text}
	if _, err := os.Stat(wt.w.Path); err == nil {
		if note := k.submoduleNote(ctx, wt.w.Path); note != "" {
			res.Notes = append(res.Notes, note)
		}
	}
	return res, nil
}

// Merge merges a task's commit or a worker's branch into the checkout
// its worktree came from (the master's): see worktree.Git.Merge. A
// conflict changes nothing; with SendBack it becomes a task for the same
// worker.
func (k *Keeper) Merge(ctx context.Context, req api.MergeRequest) (api.MergeResult, error) {
	wt, err := k.Resolve(ctx, req.Target)
	if err != nil {
		return api.MergeResult{}, err
	}
	msg := "merge " + wt.w.Branch
	if wt.Task != nil {
		msg = fmt.Sprintf("merge %s: task %d: %s", wt.w.Branch, wt.Task.ID, firstLine(wt.Task.Text))
	}
	ident := "cicy-agent"
	if req.Caller != "" {
		ident = req.Caller
	}
	var work api.Work
	if wt.Task != nil {
		work = wt.Task.Work
	} else {
		work = k.branchWork(ctx, wt, req.Into) // before the merge moves the fork point
	}
	var warnings []string
	if wt.Task == nil {
		warnings = k.rewritten(ctx, wt, req.Into)
	}
	m, err := k.Git.Merge(ctx, wt.w.Repo, wt.head, req.Into, msg, ident)
	res := api.MergeResult{Target: req.Target, Branch: wt.w.Branch, Into: m.Into, Repo: wt.w.Repo, Head: m.Head,
		FastForward: m.FastForward, Already: m.Already, Conflicts: m.Conflicts, Work: work, Warnings: warnings}
	k.forgetWork()
	switch {
	case errors.Is(err, worktree.ErrConflict):
		if req.SendBack {
			return k.sendBack(ctx, req, wt, res)
		}
		return res, nil
	case err != nil:
		return res, mergeErr(err, wt.w.Repo)
	}
	k.log.WithFields(map[string]any{"branch": wt.w.Branch, "into": m.Into, "head": short(m.Head)}).Info("Merged a worker's work")
	return res, nil
}

// branchWork is a worker's unmerged work as a merge of it into into ("":
// the branch checked out in its repository) takes it: from where the
// branch forks from into to its head.
func (k *Keeper) branchWork(ctx context.Context, wt Target, into string) api.Work {
	if into == "" {
		b, err := k.Git.CurrentBranch(ctx, wt.w.Repo)
		if err != nil {
			b = wt.w.Target
		}
		into = b
	}
	work := api.Work{Branch: wt.w.Branch, Head: wt.head}
	fork, err := k.Git.ForkPoint(ctx, wt.w.Repo, "refs/heads/"+into, wt.head)
	if err != nil || fork == "" {
		return work
	}
	c, err := k.Git.Stat(ctx, wt.w.Repo, fork, wt.head)
	if err != nil {
		work.Base = fork
		return work
	}
	c.Branch = wt.w.Branch
	return c.Work
}

// rewritten warns of the worker's recorded task commits that are no
// longer on its branch (the worker rewrote its history: a reset) and are
// not in into either, their change not carried over into the branch by
// an amend or a rebase: merging the branch does not bring them.
func (k *Keeper) rewritten(ctx context.Context, wt Target, into string) []string {
	if into == "" {
		b, err := k.Git.CurrentBranch(ctx, wt.w.Repo)
		if err != nil {
			return nil
		}
		into = b
	}
	tasks, err := k.store.ListTasks(ctx, wt.Pane)
	if err != nil {
		return nil
	}
	var lost []string
	for _, t := range tasks {
		if t.To != wt.Pane || t.Branch != wt.w.Branch || t.Commits == 0 || t.Head == t.Base {
			continue
		}
		if on, err := k.Git.Merged(ctx, wt.w.Repo, t.Head, wt.head); err != nil || on {
			continue
		}
		if in, err := k.Git.Merged(ctx, wt.w.Repo, t.Head, "refs/heads/"+into); err != nil || in {
			continue
		}
		if carried, err := k.Git.Carried(ctx, wt.w.Repo, t.Base, t.Head, wt.head); err != nil || carried {
			continue // amended or rebased: its change is there
		}
		lost = append(lost, fmt.Sprintf("task %d (%s)", t.ID, short(t.Head)))
	}
	if len(lost) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("the recorded commits of %s are no longer on %s (its history was rewritten) nor in %s; merging the branch does not bring them (merge a task by its id to take its commit)",
		strings.Join(lost, ", "), wt.w.Branch, into)}
}

// sendBack makes a merge's conflict a task for the worker that made it.
func (k *Keeper) sendBack(ctx context.Context, req api.MergeRequest, wt Target, res api.MergeResult) (api.MergeResult, error) {
	if p, found := k.panes.Pane(wt.Pane); found && panetype.RunsShellTasks(p.Config.Type) {
		return res, api.Usagef("the merge of %s into %s conflicts in %s, and %s runs its tasks as shell commands, so it cannot be sent back; resolve it in %s (git rebase %s), then merge again",
			wt.w.Branch, res.Into, strings.Join(res.Conflicts, ", "), wt.Pane, wt.w.Path, res.Into)
	}
	text := fmt.Sprintf("rebase %s on %s and resolve: %s\n\n(Merging %s into %s conflicts in those files. In your worktree run `git rebase %s`, resolve each conflict, `git add` the files and `git rebase --continue`; leave the result committed or not, it is recorded when you are done.)",
		wt.w.Branch, res.Into, strings.Join(res.Conflicts, ", "), wt.w.Branch, res.Into, res.Into)
	ti, err := k.tasks.SendBack(ctx, req.Caller, wt.Pane, text)
	if err != nil {
		return res, fmt.Errorf("the merge conflicts (%s), and sending it back failed: %w", strings.Join(res.Conflicts, ", "), err)
	}
	res.SentBack = &ti
	return res, nil
}

// mergeErr is a refused merge as one sentence.
func mergeErr(err error, repo string) error {
	var untracked *worktree.UntrackedError
	switch {
	case errors.As(err, &untracked):
		return api.Usagef("%v; nothing was changed: move or remove them, then merge again", untracked)
	case errors.Is(err, worktree.ErrDirty):
		return api.Usagef("the master's checkout %s has uncommitted changes; commit or stash them, then merge again", strings.TrimSuffix(err.Error(), ": "+worktree.ErrDirty.Error()))
	case errors.Is(err, worktree.ErrDetached):
		return api.Usagef("the checkout %s has a detached HEAD; name the branch to merge into with --into", repo)
	case errors.Is(err, worktree.ErrMoved):
		return api.Failedf("%v; nothing was changed, merge again", err)
	case errors.Is(err, worktree.ErrNoGit):
		return api.Failedf("merging needs git, which is not on PATH")
	}
	return api.Failedf("%v", err)
}

// forgetWork drops what ls shows of every worktree: a merge moved the
// branch they are measured against.
func (k *Keeper) forgetWork() {
	for _, p := range k.panes.All() {
		p.Seen.Forget()
	}
}

// listWorktrees is every worktree of the home's workers: the branches
// cicy/<tag>/w-N (cicy/w-N checked out under the home, for panes made
// before homes had tags) of the repositories they came from, with or
// without their pane, and with or without their folder (a branch of a
// gone pane whose folder was deleted by hand and pruned is listed
// Missing: its work is still there to merge).
func (k *Keeper) listWorktrees(ctx context.Context) []api.WorktreeInfo {
	var out []api.WorktreeInfo
	for _, repo := range k.repos() {
		listed, err := k.Git.List(ctx, repo)
		if err != nil {
			out = append(out, api.WorktreeInfo{Repo: repo, Error: err.Error()})
			continue
		}
		seen := map[string]bool{}
		for _, l := range listed {
			seen[l.Branch] = true
			id, ok := k.ownBranch(l.Branch, l.Path)
			if !ok {
				continue
			}
			out = append(out, k.describeWorktree(ctx, repo, id, l))
		}
		branches, err := k.Git.Branches(ctx, repo, "cicy/")
		if err != nil {
			continue
		}
		for _, b := range branches {
			id, ok := k.ownBranch(b, "")
			if !ok || seen[b] {
				continue
			}
			out = append(out, k.describeWorktree(ctx, repo, id, worktree.Listed{Path: k.workspace(id), Branch: b}))
		}
	}
	return out
}

// describeWorktree is one listed worktree of repo, pane id's.
func (k *Keeper) describeWorktree(ctx context.Context, repo, id string, l worktree.Listed) api.WorktreeInfo {
	if p, found := k.panes.Pane(id); found {
		if w, ok := Of(p.Config); ok {
			wi := k.readWorktree(ctx, w, id)
			wi.Title = p.Config.Title
			return wi
		}
	}
	target, err := k.Git.CurrentBranch(ctx, repo)
	if err != nil {
		target = "HEAD"
	}
	wi := k.readWorktree(ctx, worktree.Worktree{Path: l.Path, Repo: repo, Branch: l.Branch, Target: target}, id)
	wi.Gone = true
	return wi
}

// List lists the home's worktrees; with prune it first removes the ones
// of panes that are gone whose work is all merged and committed, and
// lets git forget the ones deleted by hand.
func (k *Keeper) List(ctx context.Context, prune bool) []api.WorktreeInfo {
	all := k.listWorktrees(ctx)
	if !prune {
		return all
	}
	for _, wi := range all {
		if wi.Gone && wi.Merged && (wi.Clean || wi.Missing) && wi.Error == "" {
			w := worktree.Worktree{Path: wi.Path, Repo: wi.Repo, Branch: wi.Branch, Target: wi.Target}
			if err := k.Git.Remove(ctx, w); err != nil {
				k.log.WithError(err).WithField("pane", wi.Pane).Warn("Could not prune a worktree")
			}
		}
	}
	for _, repo := range k.repos() {
		k.dropSpareIfIdle(repo)
		if err := k.Git.Prune(ctx, repo); err != nil {
			k.log.WithError(err).WithField("repo", repo).Warn("Could not prune the repository's worktrees")
		}
	}
	return k.listWorktrees(ctx)
}
