package gitwork

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy/atomicfile"
	"github.com/cicy-ai/cicy-agent/panetype"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
	"github.com/cicy-ai/cicy-agent/supervisor/outbox"
	"github.com/cicy-ai/cicy-agent/supervisor/worktree"
)

// gitTimeout bounds one worktree operation (a commit of a large tree, a
// merge).
const gitTimeout = 2 * time.Minute

// PaneWorktree is what a pane's config keeps of its worktree (its
// "worktree" member): the repository it came from, the branch it merges
// into and the commit it started at. Its path is the pane's workspace,
// its branch cicy/<tag>/<id>, tag being the home's (cicy/<id> when it has
// none: a pane made before homes had tags).
type PaneWorktree struct {
	Repo   string `json:"repo"`
	Target string `json:"target"`
	Base   string `json:"base"`
	Tag    string `json:"tag,omitempty"`
}

// paneConfig is the part of a pane's config (agent_config.config) that
// is the worktrees'.
type paneConfig struct {
	Worktree *PaneWorktree `json:"worktree,omitempty"`
}

// configWorktree is what config (a pane's) keeps of its worktree; nil
// when it runs in none.
func configWorktree(config string) *PaneWorktree {
	var c paneConfig
	_ = json.Unmarshal([]byte(config), &c)
	return c.Worktree
}

// Of is pane cfg's worktree; false when it runs in none.
func Of(cfg schema.Pane) (worktree.Worktree, bool) {
	pw := configWorktree(cfg.Config)
	if pw == nil {
		return worktree.Worktree{}, false
	}
	return worktree.Worktree{Path: cfg.Workspace, Repo: pw.Repo, Branch: worktree.BranchFor(pw.Tag, cfg.ID),
		Target: pw.Target, Base: pw.Base}, true
}

// ForCreate checks that a pane asked to run in a worktree can: the
// folder it names (its workspace, else its master's) is a checkout of a
// git repository on a branch with a commit. The answer is what its
// config keeps.
func (k *Keeper) ForCreate(ctx context.Context, req api.CreateRequest) (*PaneWorktree, error) {
	dir := req.Workspace
	if dir == "" && req.Master != "" {
		if ws, ok := k.panes.Workspace(req.Master); ok {
			dir = ws
		}
	}
	if dir == "" {
		return nil, api.Usagef("--worktree needs the repository to branch from: name it with --workspace, or give the pane a --master whose workspace is in one")
	}
	w, err := k.Git.Resolve(ctx, dir)
	if err != nil {
		return nil, worktreeErr(err, dir)
	}
	tag, err := k.Tag()
	if err != nil {
		return nil, api.Failedf("--worktree: %v", err)
	}
	return &PaneWorktree{Repo: w.Repo, Target: w.Target, Base: w.Base, Tag: tag}, nil
}

// tagFile holds the home's tag: the part of its workers' branch names
// (cicy/<tag>/w-3) that keeps them apart from another home's workers in
// the same repository.
func (k *Keeper) tagFile() string { return filepath.Join(k.root, "worktree-tag") }

// Tag is the home's tag, made (random, 6 hex digits) the first time a
// worker gets a worktree.
func (k *Keeper) Tag() (string, error) {
	if b, err := os.ReadFile(k.tagFile()); err == nil {
		if tag := strings.TrimSpace(string(b)); validTag(tag) {
			return tag, nil
		}
	}
	var r [3]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", fmt.Errorf("make the home's worktree tag: %w", err)
	}
	tag := hex.EncodeToString(r[:])
	f, err := os.OpenFile(k.tagFile(), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) { // a damaged one, or made meanwhile
		b, rerr := os.ReadFile(k.tagFile())
		if t := strings.TrimSpace(string(b)); rerr == nil && validTag(t) {
			return t, nil
		}
		return tag, atomicfile.Write(k.tagFile(), []byte(tag+"\n"), 0o600)
	}
	if err != nil {
		return "", fmt.Errorf("write the home's worktree tag: %w", err)
	}
	_, err = f.WriteString(tag + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("write the home's worktree tag: %w", err)
	}
	return tag, nil
}

// validTag reports whether tag can be the home's: hex digits only.
func validTag(tag string) bool {
	if tag == "" || len(tag) > 16 {
		return false
	}
	_, err := hex.DecodeString(tag)
	return err == nil
}

// ownBranch reports whether branch, checked out at path ("" for none), is
// a worker branch of this home, and whose: cicy/<tag>/<id> with the home's
// tag, or an untagged cicy/<id> checked out under the home.
func (k *Keeper) ownBranch(branch, path string) (id string, ok bool) {
	id, tag := worktree.PaneOf(branch)
	if id == "" {
		return "", false
	}
	if tag != "" {
		mine, err := k.Tag()
		return id, err == nil && tag == mine
	}
	return id, path != "" && strings.HasPrefix(path, k.workspacesDir())
}

// workspacesDir is the folder of the home's default workspaces, with a
// separator at its end.
func (k *Keeper) workspacesDir() string {
	return filepath.Dir(k.workspace("x")) + string(filepath.Separator)
}

// worktreeErr is a refused worktree as one sentence.
func worktreeErr(err error, dir string) error {
	switch {
	case errors.Is(err, worktree.ErrNoGit):
		return api.Failedf("--worktree needs git, which is not on PATH; install git")
	case errors.Is(err, worktree.ErrBare):
		return api.Usagef("--worktree: %s is a bare repository; name a checkout of it with --workspace", dir)
	case errors.Is(err, worktree.ErrNotRepo):
		return api.Usagef("--worktree: %s is not in a git repository; run git init there, or name a repository with --workspace", dir)
	case errors.Is(err, worktree.ErrDetached):
		return api.Usagef("--worktree: the repository at %s has a detached HEAD; check out the branch the workers should start from (git switch <branch>)", dir)
	case errors.Is(err, worktree.ErrNoCommit):
		return api.Usagef("--worktree: the repository at %s has no commit yet; commit once, then create the pane", dir)
	case errors.Is(err, worktree.ErrBranchUse):
		return api.Usagef("--worktree: the branch %s exists in %s and is not this pane's worktree; rename or delete it (git branch -m …)", strings.TrimSuffix(err.Error(), ": "+worktree.ErrBranchUse.Error()), dir)
	}
	return api.Failedf("--worktree: %v", err)
}

// GuidanceFile is where the guidance file of a pane of type typ is: its
// workspace ws's own guidance file (panetype.GuidanceFile: CLAUDE.md,
// QWEN.md, AGENTS.md …), or, when the workspace is a git
// worktree (which holds only the work), the agent's own config folder
// under paneDir (a CLI agent's user-level instructions) or the .cicy
// folder git ignores there (cicy).
func GuidanceFile(paneDir, typ, ws string, inWorktree bool) string {
	name := panetype.GuidanceFile(typ)
	if !inWorktree {
		return filepath.Join(ws, name)
	}
	if k, ok := cliagent.Lookup(typ); ok {
		return k.GuidanceAt(paneDir)
	}
	return filepath.Join(ws, ".cicy", name)
}

// InWorktree reports whether pane cfg runs in a worktree of its own.
func InWorktree(cfg schema.Pane) bool { return configWorktree(cfg.Config) != nil }

// ignoreOurs makes the .cicy folder of a worktree (a cicy agent's history
// and memory, a CLI agent's long task files) invisible to git: a
// .gitignore in it that ignores everything, itself too. The repository's
// own files are not touched.
func ignoreOurs(ws string) error {
	dir := filepath.Join(ws, ".cicy")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return atomicfile.Write(filepath.Join(dir, ".gitignore"), []byte("# Written by cicy-agent: the pane's own files, no part of the work.\n*\n"), 0o600)
}

// Add makes pane id's worktree at ws and returns how to undo it.
func (k *Keeper) Add(id, ws string, pw *PaneWorktree) (func(), error) {
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	w := worktree.Worktree{Path: ws, Repo: pw.Repo, Branch: worktree.BranchFor(pw.Tag, id), Target: pw.Target, Base: pw.Base}
	// Recorded first: a crash in the middle of the checkout leaves a
	// worktree the next start finds there and removes (cleanHalfMade).
	if err := k.rememberRepo(pw.Repo); err != nil {
		k.log.WithError(err).Warn("Could not record the repository of a worktree")
	}
	if err := k.checkout(ctx, w); err != nil {
		return nil, worktreeErr(err, pw.Repo)
	}
	if err := ignoreOurs(ws); err != nil {
		_ = k.Git.Discard(ctx, w)
		return nil, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
		defer cancel()
		if err := k.Git.Discard(ctx, w); err != nil {
			k.log.WithError(err).WithField("pane", id).Warn("Could not remove the worktree of a pane that did not start")
		}
	}, nil
}

// Ensure makes a worktree pane's folder there again before it starts:
// one deleted by hand is checked out again from its branch.
func (k *Keeper) Ensure(cfg schema.Pane) (restored bool, err error) {
	w, ok := Of(cfg)
	if !ok {
		return false, nil
	}
	if _, err := os.Stat(w.Path); err == nil {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	if err := k.Git.Restore(ctx, w); err != nil {
		return false, fmt.Errorf("check out the worktree %s again: %w", w.Path, err)
	}
	k.log.WithField("pane", cfg.ID).Warn("The worktree's folder was gone; checked out " + w.Branch + " there again")
	return true, nil
}

// Prune lets git forget the worktrees of the home's workers whose
// folders were deleted by hand while no supervisor ran (a pane's own is
// checked out again when it starts: Ensure). rows are this node's panes.
func (k *Keeper) Prune(ctx context.Context, rows []schema.Pane) {
	repos := k.repos()
	for _, r := range rows {
		if w, ok := Of(r); ok && !slices.Contains(repos, w.Repo) {
			repos = append(repos, w.Repo)
		}
	}
	for _, repo := range repos {
		if _, err := os.Stat(repo); err != nil {
			continue // the repository itself is gone
		}
		if err := k.Git.Prune(ctx, repo); err != nil {
			k.log.WithError(err).WithField("repo", repo).Warn("Could not prune the repository's worktrees")
		}
		k.cleanHalfMade(ctx, repo, rows)
	}
}

// cleanHalfMade removes what a create --worktree that a crash cut short
// left in repo: a worktree of this home's whose pane has no row (it was
// never stored) and that holds no work — its branch has no commit that
// no other branch has, and it is clean or was never whole (git worktree
// add did not finish) — with its branch; and such a branch with no
// worktree. Otherwise the next pane, which gets the same id, would find
// its branch taken. A killed pane's kept work (commits, or uncommitted
// changes) is left alone.
func (k *Keeper) cleanHalfMade(ctx context.Context, repo string, rows []schema.Pane) {
	known := map[string]bool{}
	for _, r := range rows {
		known[r.ID] = true
	}
	log := k.log.WithField("repo", repo)
	listed, err := k.Git.List(ctx, repo)
	if err != nil {
		log.WithError(err).Warn("Could not list the repository's worktrees")
		return
	}
	checkedOut := k.dropHalfMadeWorktrees(ctx, log, repo, listed, known)
	k.dropHalfMadeBranches(ctx, log, repo, known, checkedOut)
}

// dropHalfMadeWorktrees removes, with its branch, each worktree of
// listed (repo's) that is this home's, whose pane is not known (has no
// row) and that holds no work. It returns the branches still checked out
// after that.
func (k *Keeper) dropHalfMadeWorktrees(ctx context.Context, log *logrus.Entry, repo string, listed []worktree.Listed, known map[string]bool) map[string]bool {
	checkedOut := map[string]bool{}
	for _, l := range listed {
		checkedOut[l.Branch] = true
		id, ours := k.halfMadeOwner(l)
		if !ours || known[id] || !k.holdsNoWork(ctx, repo, l) {
			continue
		}
		if err := k.Git.DropHalfMade(ctx, repo, l.Path); err != nil {
			log.WithError(err).Warn("Could not remove the worktree a cut-short create left")
			continue
		}
		log.WithField("pane", id).Warn("Removed the worktree a create cut short by a crash left at " + l.Path)
		if l.Branch != "" {
			checkedOut[l.Branch] = false
			if err := k.Git.DeleteBranch(ctx, repo, l.Branch); err != nil {
				log.WithError(err).Warn("Could not delete the branch a cut-short create left")
			}
		}
	}
	return checkedOut
}

// halfMadeOwner is the pane the listed worktree l was made for, and
// whether it is one of this home's: by its branch, or, for a spare moved
// into place but not yet on its branch, by its folder under the home's
// workspaces.
func (k *Keeper) halfMadeOwner(l worktree.Listed) (id string, ours bool) {
	if l.Branch == "" && strings.HasPrefix(l.Path, k.workspacesDir()) {
		return filepath.Base(l.Path), true
	}
	return k.ownBranch(l.Branch, l.Path)
}

// dropHalfMadeBranches deletes each of repo's branches of this home's
// worktree tag whose pane is not known (has no row), that no worktree
// has checked out, and that has no commit of its own.
func (k *Keeper) dropHalfMadeBranches(ctx context.Context, log *logrus.Entry, repo string, known, checkedOut map[string]bool) {
	branches, err := k.Git.Branches(ctx, repo, "cicy/")
	if err != nil {
		return
	}
	for _, b := range branches {
		id, tag := worktree.PaneOf(b)
		if mine, _ := k.Tag(); tag == "" || tag != mine || known[id] || checkedOut[b] {
			continue
		}
		if n, err := k.Git.OwnCommits(ctx, repo, b); err != nil || n > 0 {
			continue
		}
		if err := k.Git.DeleteBranch(ctx, repo, b); err == nil {
			log.WithField("pane", id).Warn("Deleted the branch " + b + " a create cut short by a crash left")
		}
	}
}

// holdsNoWork reports whether the listed worktree l of repo holds nothing
// a person could miss: no commit of its own on its branch, and no
// change, unless git never finished writing it.
func (k *Keeper) holdsNoWork(ctx context.Context, repo string, l worktree.Listed) bool {
	rev := l.Branch
	if rev == "" {
		rev = l.Head // detached: its commit must be on a branch
	}
	if n, err := k.Git.OwnCommits(ctx, repo, rev); err != nil || n > 0 {
		return false
	}
	if l.Locked == "initializing" || l.Prunable {
		return true
	}
	clean, err := k.Git.Clean(ctx, l.Path)
	return err == nil && clean
}

// reposFile lists the repositories the home's worktrees came from, so
// `worktrees` finds the ones of panes that are gone.
func (k *Keeper) reposFile() string { return filepath.Join(k.root, "worktrees.json") }

var reposMu sync.Mutex

// rememberRepo adds repo to the home's list of repositories.
func (k *Keeper) rememberRepo(repo string) error {
	reposMu.Lock()
	defer reposMu.Unlock()
	repos := k.repos()
	if slices.Contains(repos, repo) {
		return nil
	}
	b, _ := json.MarshalIndent(append(repos, repo), "", "  ") // strings always encode
	return atomicfile.Write(k.reposFile(), append(b, '\n'), 0o600)
}

// repos is the home's list of repositories worktrees came from.
func (k *Keeper) repos() []string {
	var repos []string
	if b, err := os.ReadFile(k.reposFile()); err == nil {
		_ = json.Unmarshal(b, &repos) // a damaged list is rebuilt from the panes
	}
	for _, p := range k.panes.All() {
		if w, ok := Of(p.Config); ok && !slices.Contains(repos, w.Repo) {
			repos = append(repos, w.Repo)
		}
	}
	return repos
}

// Finish is the outbox's last step before a task on a worktree worker
// is recorded done: whatever the worker left uncommitted becomes one
// commit, and the task's range (from the pane's last recorded head) and
// its stat go into the record. A crash after the commit leaves a clean
// worktree: the second call makes no commit and records the same range.
// A commit that fails (a lock a live git holds for a minute, a full
// disk) is an error: the task is recorded failed with it, never done
// without its work (which stays in the worktree, uncommitted).
func (k *Keeper) Finish(t schema.Task) (outbox.FinishedWork, error) {
	p, found := k.panes.Pane(t.To)
	if !found {
		return outbox.FinishedWork{}, nil
	}
	w, ok := Of(p.Config)
	if !ok {
		return outbox.FinishedWork{}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	log := k.log.WithFields(map[string]any{"pane": t.To, "task": t.ID})
	// the pane's last recorded head is read while git stages the work
	lastHead := sync.OnceValue(func() string {
		last, ok, err := k.store.LastWork(ctx, t.To)
		if err != nil {
			log.WithError(err).Warn("Could not read the pane's last recorded commit")
		}
		if err != nil || !ok {
			return w.Base
		}
		return last.Head
	})
	go lastHead()
	msg := fmt.Sprintf("task %d: %s\n\nCicy-Task: %d\n", t.ID, firstLine(t.Text), t.ID)
	c, made, err := k.Git.CommitTask(ctx, w.Path, lastHead, msg, t.To, nil)
	base := lastHead()
	if err != nil && !errors.Is(err, worktree.ErrStat) || c.Head == "" {
		if err == nil {
			err = errors.New("git left no commit")
		}
		log.WithError(err).Error("Could not commit the task's work on its worktree")
		return outbox.FinishedWork{}, fmt.Errorf("the task's work could not be committed on %s (it is left uncommitted in %s): %w", w.Branch, w.Path, err)
	}
	if nb := k.rebasedBase(ctx, w, base, c); nb != base {
		base = nb
		if rc, serr := k.Git.Stat(ctx, w.Path, base, c.Head); serr == nil {
			c = rc
		}
	}
	if err != nil {
		log.WithError(err).Error("Could not read the task's diff stat")
	}
	if made {
		log.WithField("head", short(c.Head)).Info("Committed the task's work on " + w.Branch)
	}
	p.Seen.Forget() // read again when asked
	work := c.Work
	work.Branch, work.Base = w.Branch, base
	return outbox.FinishedWork{Work: work, Note: k.submoduleNote(ctx, w.Path)}, nil
}

// submoduleNote says which submodules of the worktree at path hold
// changes no commit has (they are not in the task's commit); "" when
// none do.
func (k *Keeper) submoduleNote(ctx context.Context, path string) string {
	if _, err := os.Stat(filepath.Join(path, ".gitmodules")); err != nil {
		return "" // no submodule: no second look at every file
	}
	subs, err := k.Git.DirtySubmodules(ctx, path)
	if err != nil || len(subs) == 0 {
		return ""
	}
	return fmt.Sprintf("not committed: the changes inside the submodule %s (a commit records a submodule's commit, not its files; commit them inside the submodule and its new commit is recorded)",
		strings.Join(subs, ", "))
}

// rebasedBase is where a task's range starts: base, the pane's last
// recorded head, unless the task rewrote the branch so that base is no
// longer in its history (a rebase, as a merge sent back asks for); then
// the branch's fork point from its target, so the task's record shows
// the branch's own work, not the target's commits it now sits on.
func (k *Keeper) rebasedBase(ctx context.Context, w worktree.Worktree, base string, c worktree.Change) string {
	if base == c.Head || base == c.Parent { // no commit, or the task's sits on base
		return base
	}
	if kept, err := k.Git.Merged(ctx, w.Path, base, c.Head); err != nil || kept {
		return base
	}
	if fork, err := k.Git.ForkPoint(ctx, w.Path, w.Target, c.Head); err == nil && fork != "" {
		return fork
	}
	return base
}

// firstLine is a task's first non-empty line, cut to 72 runes.
func firstLine(text string) string {
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if r := []rune(l); len(r) > 72 {
				l = string(r[:71]) + "…"
			}
			return l
		}
	}
	return "(empty)"
}

func short(rev string) string {
	if len(rev) > 10 {
		return rev[:10]
	}
	return rev
}

// Info is what ls shows of pane cfg's worktree (nil for a pane that
// runs in none), read from git once and again after it changed; seen
// keeps it between.
func (k *Keeper) Info(cfg schema.Pane, seen *Seen) *api.WorktreeInfo {
	if !strings.Contains(cfg.Config, `"worktree"`) {
		return nil // ls of 100,000 panes reads no config that has none
	}
	w, ok := Of(cfg)
	if !ok {
		return nil
	}
	if r := seen.p.Load(); r != nil && time.Since(r.at) < workStale {
		return &r.info
	}
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	r := &workRead{info: k.readWorktree(ctx, w, cfg.ID), at: time.Now()}
	r.info.Title = cfg.Title
	seen.p.Store(r)
	return &r.info
}

// workRead is a worktree as git showed it at a time.
type workRead struct {
	info api.WorktreeInfo
	at   time.Time
}

// workStale is how long what ls shows of a worktree is kept: it changes
// by our commits and merges (read again at once) and by hand.
const workStale = 5 * time.Second

// readWorktree is w as git sees it now.
func (k *Keeper) readWorktree(ctx context.Context, w worktree.Worktree, pane string) api.WorktreeInfo {
	wi := api.WorktreeInfo{Pane: pane, Path: w.Path, Repo: w.Repo, Branch: w.Branch, Target: w.Target}
	if _, err := os.Stat(w.Path); err != nil {
		wi.Missing = true
	} else if wi.Clean, err = k.Git.Clean(ctx, w.Path); err != nil {
		wi.Error = err.Error()
		return wi
	}
	var err error
	if wi.Ahead, wi.Behind, err = k.Git.Ahead(ctx, w.Repo, w.Target, "refs/heads/"+w.Branch); err != nil {
		wi.Error = err.Error()
		return wi
	}
	wi.Merged = wi.Ahead == 0
	if wi.Ahead > 0 {
		if fork, err := k.Git.ForkPoint(ctx, w.Repo, w.Target, "refs/heads/"+w.Branch); err == nil {
			c, _ := k.Git.Stat(ctx, w.Repo, fork, "refs/heads/"+w.Branch)
			wi.Files, wi.Added, wi.Deleted = c.Files, c.Added, c.Deleted
		}
	}
	return wi
}

// Release removes a killed pane's worktree and branch when it is
// clean and merged; otherwise it keeps both and says why ("" when the
// pane had none or it was removed).
func (k *Keeper) Release(cfg schema.Pane) string {
	w, ok := Of(cfg)
	if !ok {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	err := k.Git.Remove(ctx, w)
	log := k.log.WithField("pane", cfg.ID)
	switch {
	case err == nil:
		log.Info("Removed the pane's worktree and branch: clean and merged")
		return ""
	case errors.Is(err, worktree.ErrDirty):
		return fmt.Sprintf("kept the worktree %s: it has uncommitted changes", w.Path)
	case errors.Is(err, worktree.ErrNotMerged):
		return fmt.Sprintf("kept the worktree %s: %s is not merged into %s ('cicy-agent merge %s' merges it)", w.Path, w.Branch, w.Target, cfg.ID)
	}
	log.WithError(err).Warn("Could not remove the pane's worktree")
	return fmt.Sprintf("kept the worktree %s: %v", w.Path, err)
}
