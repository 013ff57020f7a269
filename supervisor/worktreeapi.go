package supervisor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/panetype"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/worktree"
)

// workTarget is what diff and merge act on: a worker's worktree, and the
// range of commits (one task's, or the worker's unmerged work).
type workTarget struct {
	pane string
	w    worktree.Worktree
	task *schema.Task
	base string // "" for a worker: where its branch forks from its target
	head string
}

// resolveWork finds a task ("7") or a worker ("w-3") with a worktree,
// kept or running.
func (s *Supervisor) resolveWork(ctx context.Context, target string) (workTarget, error) {
	target = strings.TrimSpace(target)
	if n, err := strconv.ParseInt(target, 10, 64); err == nil && n > 0 {
		t, err := s.GetTask(ctx, n)
		if err != nil {
			return workTarget{}, err
		}
		if t.Branch == "" {
			return workTarget{}, usageErr("task %d left no change on a worktree (%s; its worker %s runs in none, or the task did not end done)", n, t.Status, t.To)
		}
		w, err := s.paneWorktree(ctx, t.To)
		if err != nil {
			return workTarget{}, err
		}
		return workTarget{pane: t.To, w: w, task: &t, base: t.Base, head: t.Head}, nil
	}
	var w worktree.Worktree
	var id string
	var err error
	if strings.HasPrefix(target, "cicy/") {
		if w, id, err = s.branchWorktree(ctx, target); err != nil {
			return workTarget{}, err
		}
	} else {
		if id, err = s.paneIDOf(target); err != nil {
			return workTarget{}, err
		}
		if w, err = s.paneWorktree(ctx, id); err != nil {
			return workTarget{}, err
		}
	}
	head, err := s.git.Rev(ctx, w.Repo, "refs/heads/"+w.Branch)
	if err != nil || head == "" {
		return workTarget{}, failedErr("the branch %s of %s is gone from %s", w.Branch, id, w.Repo)
	}
	return workTarget{pane: id, w: w, head: head}, nil
}

// paneWorktree is pane id's worktree: from its config while it exists,
// else found by its branch in the repositories the home's worktrees came
// from (a killed pane whose work was kept).
func (s *Supervisor) paneWorktree(ctx context.Context, id string) (worktree.Worktree, error) {
	if e, err := s.get(id); err == nil {
		w, ok := worktreeOf(e.cfg)
		if !ok {
			return w, usageErr("pane %s runs in no worktree (create a worker with --worktree)", id)
		}
		return w, nil
	}
	for _, l := range s.listWorktrees(ctx) {
		if l.Pane == id {
			return worktree.Worktree{Path: l.Path, Repo: l.Repo, Branch: l.Branch, Target: l.Target}, nil
		}
	}
	if rm, ok := s.cl.lookup(ctx, id); ok {
		return worktree.Worktree{}, usageErr("%s runs on node %s: its worktree is on that machine; run diff and merge with that node's supervisor", id, rm.row.Node)
	}
	return worktree.Worktree{}, notFoundErr(id)
}

// branchWorktree is the worktree of the home's worker branch b, kept or
// running, and its pane's id.
func (s *Supervisor) branchWorktree(ctx context.Context, b string) (worktree.Worktree, string, error) {
	for _, l := range s.listWorktrees(ctx) {
		if l.Branch == b {
			return worktree.Worktree{Path: l.Path, Repo: l.Repo, Branch: l.Branch, Target: l.Target}, l.Pane, nil
		}
	}
	return worktree.Worktree{}, "", &api.Error{Kind: api.KindNotFound, Message: fmt.Sprintf("no worker branch %s of this home (see 'cicy-agent worktrees')", b)}
}

// Diff is the change of a task or a worker, as git prints it (with
// --stat, its summary).
func (s *Supervisor) Diff(ctx context.Context, target string, stat bool) (api.DiffResult, error) {
	wt, err := s.resolveWork(ctx, target)
	if err != nil {
		return api.DiffResult{}, err
	}
	base := wt.base
	if base == "" {
		if base, err = s.git.ForkPoint(ctx, wt.w.Repo, wt.w.Target, wt.head); err != nil {
			return api.DiffResult{}, failedErr("%s and %s share no history: %v", wt.w.Branch, wt.w.Target, err)
		}
	}
	c, err := s.git.Stat(ctx, wt.w.Repo, base, wt.head)
	if err != nil {
		return api.DiffResult{}, failedErr("%v", err)
	}
	text, err := s.git.Diff(ctx, wt.w.Repo, base, wt.head, stat)
	if err != nil {
		return api.DiffResult{}, failedErr("%v", err)
	}
	c.Branch = wt.w.Branch
	res := api.DiffResult{Work: apiWork(c), Diff: text}
	if _, err := os.Stat(wt.w.Path); err == nil {
		if note := s.submoduleNote(ctx, wt.w.Path); note != "" {
			res.Notes = append(res.Notes, note)
		}
	}
	return res, nil
}

func apiWork(c worktree.Change) api.Work {
	return api.Work{Branch: c.Branch, Base: c.Base, Head: c.Head, Commits: c.Commits, Files: c.Files, Added: c.Added, Deleted: c.Deleted}
}

// Merge merges a task's commit or a worker's branch into the checkout
// its worktree came from (the master's): see worktree.Git.Merge. A
// conflict changes nothing; with SendBack it becomes a task for the same
// worker.
func (s *Supervisor) Merge(ctx context.Context, req api.MergeRequest) (api.MergeResult, error) {
	wt, err := s.resolveWork(ctx, req.Target)
	if err != nil {
		return api.MergeResult{}, err
	}
	msg := "merge " + wt.w.Branch
	if wt.task != nil {
		msg = fmt.Sprintf("merge %s: task %d: %s", wt.w.Branch, wt.task.ID, firstLine(wt.task.Text))
	}
	ident := "cicy-agent"
	if req.Caller != "" {
		ident = req.Caller
	}
	var work api.Work
	if wt.task != nil {
		work = api.Work(wt.task.Work)
	} else {
		work = s.branchWork(ctx, wt, req.Into) // before the merge moves the fork point
	}
	var warnings []string
	if wt.task == nil {
		warnings = s.rewritten(ctx, wt, req.Into)
	}
	m, err := s.git.Merge(ctx, wt.w.Repo, wt.head, req.Into, msg, ident)
	res := api.MergeResult{Target: req.Target, Branch: wt.w.Branch, Into: m.Into, Repo: wt.w.Repo, Head: m.Head,
		FastForward: m.FastForward, Already: m.Already, Conflicts: m.Conflicts, Work: work, Warnings: warnings}
	s.forgetWork()
	switch {
	case errors.Is(err, worktree.ErrConflict):
		if req.SendBack {
			return s.sendBack(ctx, req, wt, res)
		}
		return res, nil
	case err != nil:
		return res, mergeErr(err, wt.w.Repo)
	}
	s.log.WithFields(map[string]any{"branch": wt.w.Branch, "into": m.Into, "head": short(m.Head)}).Info("Merged a worker's work")
	return res, nil
}

// branchWork is a worker's unmerged work as a merge of it into into ("":
// the branch checked out in its repository) takes it: from where the
// branch forks from into to its head.
func (s *Supervisor) branchWork(ctx context.Context, wt workTarget, into string) api.Work {
	if into == "" {
		b, err := s.git.CurrentBranch(ctx, wt.w.Repo)
		if err != nil {
			b = wt.w.Target
		}
		into = b
	}
	work := api.Work{Branch: wt.w.Branch, Head: wt.head}
	fork, err := s.git.ForkPoint(ctx, wt.w.Repo, "refs/heads/"+into, wt.head)
	if err != nil || fork == "" {
		return work
	}
	c, err := s.git.Stat(ctx, wt.w.Repo, fork, wt.head)
	if err != nil {
		work.Base = fork
		return work
	}
	c.Branch = wt.w.Branch
	return apiWork(c)
}

// rewritten warns of the worker's recorded task commits that are no
// longer on its branch (the worker rewrote its history: a reset) and are
// not in into either, their change not carried over into the branch by
// an amend or a rebase: merging the branch does not bring them.
func (s *Supervisor) rewritten(ctx context.Context, wt workTarget, into string) []string {
	if into == "" {
		b, err := s.git.CurrentBranch(ctx, wt.w.Repo)
		if err != nil {
			return nil
		}
		into = b
	}
	tasks, err := s.store.ListTasks(ctx, wt.pane)
	if err != nil {
		return nil
	}
	var lost []string
	for _, t := range tasks {
		if t.To != wt.pane || t.Branch != wt.w.Branch || t.Commits == 0 || t.Head == t.Base {
			continue
		}
		if on, err := s.git.Merged(ctx, wt.w.Repo, t.Head, wt.head); err != nil || on {
			continue
		}
		if in, err := s.git.Merged(ctx, wt.w.Repo, t.Head, "refs/heads/"+into); err != nil || in {
			continue
		}
		if carried, err := s.git.Carried(ctx, wt.w.Repo, t.Base, t.Head, wt.head); err != nil || carried {
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
func (s *Supervisor) sendBack(ctx context.Context, req api.MergeRequest, wt workTarget, res api.MergeResult) (api.MergeResult, error) {
	if e, err := s.get(wt.pane); err == nil && panetype.RunsShellTasks(e.cfg.Type) {
		return res, usageErr("the merge of %s into %s conflicts in %s, and %s runs its tasks as shell commands, so it cannot be sent back; resolve it in %s (git rebase %s), then merge again",
			wt.w.Branch, res.Into, strings.Join(res.Conflicts, ", "), wt.pane, wt.w.Path, res.Into)
	}
	from := ""
	if req.Caller != "" {
		from = s.callerMaster(req.Caller)
	}
	text := fmt.Sprintf("rebase %s on %s and resolve: %s\n\n(Merging %s into %s conflicts in those files. In your worktree run `git rebase %s`, resolve each conflict, `git add` the files and `git rebase --continue`; leave the result committed or not, it is recorded when you are done.)",
		wt.w.Branch, res.Into, strings.Join(res.Conflicts, ", "), wt.w.Branch, res.Into, res.Into)
	t, err := s.Dispatch(ctx, from, wt.pane, text)
	if err != nil {
		return res, fmt.Errorf("the merge conflicts (%s), and sending it back failed: %w", strings.Join(res.Conflicts, ", "), err)
	}
	ti := s.taskInfo(t)
	res.SentBack = &ti
	return res, nil
}

// mergeErr is a refused merge as one sentence.
func mergeErr(err error, repo string) error {
	var untracked *worktree.UntrackedError
	switch {
	case errors.As(err, &untracked):
		return usageErr("%v; nothing was changed: move or remove them, then merge again", untracked)
	case errors.Is(err, worktree.ErrDirty):
		return usageErr("the master's checkout %s has uncommitted changes; commit or stash them, then merge again", strings.TrimSuffix(err.Error(), ": "+worktree.ErrDirty.Error()))
	case errors.Is(err, worktree.ErrDetached):
		return usageErr("the checkout %s has a detached HEAD; name the branch to merge into with --into", repo)
	case errors.Is(err, worktree.ErrMoved):
		return failedErr("%v; nothing was changed, merge again", err)
	case errors.Is(err, worktree.ErrNoGit):
		return failedErr("merging needs git, which is not on PATH")
	}
	return failedErr("%v", err)
}

// forgetWork drops what ls shows of every worktree: a merge moved the
// branch they are measured against.
func (s *Supervisor) forgetWork() {
	for _, e := range s.entries() {
		e.work.Store(nil)
	}
}

// listWorktrees is every worktree of the home's workers: the branches
// cicy/<tag>/w-N (cicy/w-N checked out under the home, for panes made
// before homes had tags) of the repositories they came from, with or
// without their pane, and with or without their folder (a branch of a
// gone pane whose folder was deleted by hand and pruned is listed
// Missing: its work is still there to merge).
func (s *Supervisor) listWorktrees(ctx context.Context) []api.WorktreeInfo {
	var out []api.WorktreeInfo
	for _, repo := range s.repos() {
		listed, err := s.git.List(ctx, repo)
		if err != nil {
			out = append(out, api.WorktreeInfo{Repo: repo, Error: err.Error()})
			continue
		}
		seen := map[string]bool{}
		for _, l := range listed {
			seen[l.Branch] = true
			id, ok := s.ownBranch(l.Branch, l.Path)
			if !ok {
				continue
			}
			out = append(out, s.describeWorktree(ctx, repo, id, l))
		}
		branches, err := s.git.Branches(ctx, repo, "cicy/")
		if err != nil {
			continue
		}
		for _, b := range branches {
			id, ok := s.ownBranch(b, "")
			if !ok || seen[b] {
				continue
			}
			out = append(out, s.describeWorktree(ctx, repo, id, worktree.Listed{Path: s.cfg.Home.Workspace(id), Branch: b}))
		}
	}
	return out
}

// describeWorktree is one listed worktree of repo, pane id's.
func (s *Supervisor) describeWorktree(ctx context.Context, repo, id string, l worktree.Listed) api.WorktreeInfo {
	if e, err := s.get(id); err == nil {
		if w, ok := worktreeOf(e.cfg); ok {
			wi := s.readWorktree(ctx, w, id)
			wi.Title = e.cfg.Title
			return wi
		}
	}
	target, err := s.git.CurrentBranch(ctx, repo)
	if err != nil {
		target = "HEAD"
	}
	wi := s.readWorktree(ctx, worktree.Worktree{Path: l.Path, Repo: repo, Branch: l.Branch, Target: target}, id)
	wi.Gone = true
	return wi
}

// Worktrees lists the home's worktrees; with prune it first removes the
// ones of panes that are gone whose work is all merged and committed,
// and lets git forget the ones deleted by hand.
func (s *Supervisor) Worktrees(ctx context.Context, prune bool) []api.WorktreeInfo {
	all := s.listWorktrees(ctx)
	if !prune {
		return all
	}
	for _, wi := range all {
		if wi.Gone && wi.Merged && (wi.Clean || wi.Missing) && wi.Error == "" {
			w := worktree.Worktree{Path: wi.Path, Repo: wi.Repo, Branch: wi.Branch, Target: wi.Target}
			if err := s.git.Remove(ctx, w); err != nil {
				s.log.WithError(err).WithField("pane", wi.Pane).Warn("Could not prune a worktree")
			}
		}
	}
	for _, repo := range s.repos() {
		s.dropSpareIfIdle(repo)
		if err := s.git.Prune(ctx, repo); err != nil {
			s.log.WithError(err).WithField("repo", repo).Warn("Could not prune the repository's worktrees")
		}
	}
	return s.listWorktrees(ctx)
}

func (a *handler) worktreeRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/diff", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		res, err := a.sup.Diff(r.Context(), q.Get("target"), q.Get("stat") == "true")
		respond(w, res, err)
	})
	mux.HandleFunc("POST /api/merge", func(w http.ResponseWriter, r *http.Request) {
		var req api.MergeRequest
		if err := decode(r, &req); err != nil {
			writeErr(w, err)
			return
		}
		res, err := a.sup.Merge(r.Context(), req)
		respond(w, res, err)
	})
	mux.HandleFunc("GET /api/worktrees", func(w http.ResponseWriter, r *http.Request) {
		respond(w, a.sup.Worktrees(r.Context(), false), nil)
	})
	mux.HandleFunc("POST /api/worktrees", func(w http.ResponseWriter, r *http.Request) {
		respond(w, a.sup.Worktrees(r.Context(), true), nil)
	})
}
