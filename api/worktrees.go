package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Work is a task's change on its worker's branch: Base..Head, with git's
// diff stat. Zero when the task ran on no worktree; Branch set and Base
// == Head when it changed nothing. It is the one word for it: the store
// keeps it in a task's row (the db tags are the tasks table's columns),
// git's side of the daemon computes it (supervisor/worktree.Change) and
// the API sends it.
type Work struct {
	Branch  string `db:"branch" json:"branch"`
	Base    string `db:"base_commit" json:"base"`
	Head    string `db:"head_commit" json:"head"`
	Commits int    `db:"commits" json:"commits"`
	Files   int    `db:"diff_files" json:"files"`
	Added   int    `db:"diff_added" json:"added"`
	Deleted int    `db:"diff_deleted" json:"deleted"`
}

// WorktreeInfo is a worker's git worktree: where it is, its branch, the
// branch it merges into, how far apart they are and whether its work is
// all merged. Pane is "" when the pane was killed and its worktree kept.
type WorktreeInfo struct {
	Pane   string `json:"pane"`
	Title  string `json:"title,omitempty"`
	Path   string `json:"path"`
	Repo   string `json:"repo"`
	Branch string `json:"branch"`
	Target string `json:"target"`
	// Ahead: commits on Branch that Target lacks; Behind: the reverse.
	Ahead  int `json:"ahead"`
	Behind int `json:"behind"`
	// Added and Deleted are the lines of Branch's unmerged change (the
	// diff from where it forks from Target), Files its files.
	Files   int  `json:"files"`
	Added   int  `json:"added"`
	Deleted int  `json:"deleted"`
	Merged  bool `json:"merged"`
	Clean   bool `json:"clean"`
	// Missing: the folder was deleted by hand (git still lists it).
	Missing bool `json:"missing,omitempty"`
	// Gone: the pane it belonged to was killed.
	Gone bool `json:"gone,omitempty"`
	// Error is why the worktree could not be read.
	Error string `json:"error,omitempty"`
}

// DiffResult is `diff`: the change of a task or a worker, as git prints it.
type DiffResult struct {
	Work Work   `json:"work"`
	Diff string `json:"diff"`
	// Notes: what the diff does not show that is in the worktree now
	// (changes inside a submodule, which no commit of it holds).
	Notes []string `json:"notes,omitempty"`
}

// MergeRequest merges a task's or a worker's branch into the master's
// checkout.
type MergeRequest struct {
	// Target is a task id or a pane id.
	Target string `json:"target"`
	// Into is the branch to merge into; "" for the one checked out in the
	// repository the worktree came from.
	Into string `json:"into,omitempty"`
	// SendBack turns a conflict into a new task for the same worker.
	SendBack bool `json:"send_back,omitempty"`
	// Caller is the pane asking (a master's team tools); its master role
	// makes it the sender of a task sent back.
	Caller string `json:"caller,omitempty"`
}

// MergeResult is what a merge did. With Conflicts nothing was changed;
// SentBack is the task made of them with send_back.
type MergeResult struct {
	Target      string    `json:"target"`
	Branch      string    `json:"branch"`
	Into        string    `json:"into"`
	Repo        string    `json:"repo"`
	Head        string    `json:"head"`
	FastForward bool      `json:"fast_forward"`
	Already     bool      `json:"already"`
	Conflicts   []string  `json:"conflicts,omitempty"`
	SentBack    *TaskInfo `json:"sent_back,omitempty"`
	Work        Work      `json:"work"`
	// Warnings: what the merge did not bring that a person would expect
	// it to (recorded task commits no longer on the branch).
	Warnings []string `json:"warnings,omitempty"`
}

// KillResult is what a kill left behind: a worktree with unmerged or
// uncommitted work is kept (Kept says where and why).
type KillResult struct {
	Kept string `json:"kept,omitempty"`
}

// Diff returns the change of a task ("7") or a worker ("w-3").
func (c *Client) Diff(ctx context.Context, target string, stat bool) (DiffResult, error) {
	return call[DiffResult](ctx, c, http.MethodGet, fmt.Sprintf("/api/diff?target=%s&stat=%t", url.QueryEscape(target), stat), nil)
}

// Merge merges a task's or a worker's branch.
func (c *Client) Merge(ctx context.Context, req MergeRequest) (MergeResult, error) {
	return call[MergeResult](ctx, c, http.MethodPost, "/api/merge", req)
}

// Worktrees lists every worktree of the home's workers; with prune it
// first removes the clean, merged ones of panes that are gone.
func (c *Client) Worktrees(ctx context.Context, prune bool) ([]WorktreeInfo, error) {
	method := http.MethodGet
	if prune {
		method = http.MethodPost
	}
	return call[[]WorktreeInfo](ctx, c, method, "/api/worktrees", nil)
}

// MergeText is what a merge did, in a sentence or two: the words the
// merge command prints and the team tools give a master. sendBack is
// how the reader asks for a conflict to be sent back (the command with
// --send-back, the tool's send_back), named when the merge conflicts.
func MergeText(m MergeResult, sendBack string) string {
	text := mergeText(m, sendBack)
	for _, w := range m.Warnings {
		text += "\nwarning: " + w
	}
	return text
}

func mergeText(m MergeResult, sendBack string) string {
	switch {
	case m.SentBack != nil:
		return fmt.Sprintf("%s conflicts with %s in %s; nothing was changed. Sent back to %s as task %d.",
			m.Branch, m.Into, strings.Join(m.Conflicts, ", "), m.SentBack.To, m.SentBack.ID)
	case len(m.Conflicts) > 0:
		return fmt.Sprintf("%s conflicts with %s in %s; nothing was changed (%s gives the worker the rebase)",
			m.Branch, m.Into, strings.Join(m.Conflicts, ", "), sendBack)
	case m.Already:
		return fmt.Sprintf("%s is already in %s", m.Branch, m.Into)
	case m.FastForward:
		return fmt.Sprintf("merged %s into %s (fast-forward to %s)", m.Branch, m.Into, ShortRev(m.Head))
	}
	return fmt.Sprintf("merged %s into %s (merge commit %s)", m.Branch, m.Into, ShortRev(m.Head))
}

// Stat is the change in a few words, as every reader prints it (the
// CLI, the 🔔 line, the team tools, the web page): "3 files +42 −7 on
// cicy/w-2", "no change on cicy/w-2" when it has no commit; without
// " on …" when it has no branch.
func (w Work) Stat() string {
	s := "no change"
	if w.Base != w.Head {
		s = Lines(w.Files, w.Added, w.Deleted)
	}
	if w.Branch != "" {
		s += " on " + w.Branch
	}
	return s
}

// Lines is a change's size: "3 files +42 −7" (Work.Stat's, and a
// worktree's unmerged change's).
func Lines(files, added, deleted int) string {
	noun := "files"
	if files == 1 {
		noun = "file"
	}
	return fmt.Sprintf("%d %s +%d −%d", files, noun, added, deleted)
}

// AheadLines is a branch's unmerged work: "2↑ +42 −7", commits ahead and
// their lines.
func AheadLines(ahead, added, deleted int) string {
	return fmt.Sprintf("%d↑ +%d −%d", ahead, added, deleted)
}

// DiffText is a diff with a line saying what it is, cut after max runes
// (0: whole).
func DiffText(d DiffResult, max int) string {
	head := fmt.Sprintf("%s in %d commits (%s..%s)\n", d.Work.Stat(), d.Work.Commits, ShortRev(d.Work.Base), ShortRev(d.Work.Head))
	body := d.Diff
	if r := []rune(body); max > 0 && len(r) > max {
		body = string(r[:max]) + fmt.Sprintf("\n… (%d more characters; ask for stat, or for one task)", len(r)-max)
	}
	return head + body
}

// ShortRev is a commit id's first ten digits.
func ShortRev(r string) string {
	if len(r) > 10 {
		return r[:10]
	}
	return r
}
