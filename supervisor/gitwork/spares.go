package gitwork

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/cicy/atomicfile"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/worktree"
)

// Spares keeps one worktree checked out ahead for each repository the
// home's panes branch from. Checking a worktree out writes every file of
// the repository (0.4 s for 10,000 files on a small machine); create
// --worktree instead takes the spare, moves it into place and checks out
// the pane's branch there, which writes only the files that changed since
// the spare was made. A new spare is then made in the background.
//
// A spare lives in the home's spares folder, detached at the commit it
// was made from; its mark file (<key>.json beside it) says it is whole.
// A folder without a mark (a crash while it was made) is removed before
// the next one is made there.
type Spares struct {
	git worktree.Git
	dir string
	log *logrus.Entry
	// Settle is how long after a spare is checked out its index is
	// written again, so its files' times can be trusted (git counts in
	// seconds) and the pane's first commit does not read every file.
	// Tests shorten it before the first worktree is made.
	Settle time.Duration

	mu       sync.Mutex
	busy     map[string]chan struct{} // repositories whose spare is being made or refreshed
	unwanted map[string]bool          // repositories whose spare goes once it is not busy
	closed   bool
	quit     chan struct{}
	wg       sync.WaitGroup
}

// spareMark is a spare's mark file.
type spareMark struct {
	Repo string `json:"repo"`
	Path string `json:"path"`
	Rev  string `json:"rev"`
}

func newSpares(git worktree.Git, dir string, log *logrus.Entry) *Spares {
	return &Spares{git: git, dir: dir, log: log, Settle: 1100 * time.Millisecond,
		busy: map[string]chan struct{}{}, unwanted: map[string]bool{}, quit: make(chan struct{})}
}

// Key names repo's spare in the spares folder (git's name of the
// worktree too).
func (sp *Spares) Key(repo string) string {
	sum := sha256.Sum256([]byte(repo))
	return hex.EncodeToString(sum[:8])
}

// Path is where repo's spare is checked out.
func (sp *Spares) Path(repo string) string { return filepath.Join(sp.dir, sp.Key(repo)) }

// Mark is repo's spare's mark file: there while the spare is whole.
func (sp *Spares) Mark(repo string) string { return filepath.Join(sp.dir, sp.Key(repo)+".json") }

// Idle reports whether repo's spare is whole and nothing works on it.
func (sp *Spares) Idle(repo string) bool {
	sp.mu.Lock()
	busy := sp.busy[repo] != nil
	sp.mu.Unlock()
	_, err := os.Stat(sp.Mark(repo))
	return err == nil && !busy
}

// take hands repo's spare over; ok false when there is none. A spare
// being made is waited for (it is nearer done than a new checkout).
func (sp *Spares) take(ctx context.Context, repo string) (m spareMark, ok bool) {
	for {
		sp.mu.Lock()
		ch, busy := sp.busy[repo]
		if !busy {
			m, ok = sp.claim(repo)
			sp.mu.Unlock()
			return m, ok
		}
		sp.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return spareMark{}, false
		}
	}
}

// claim removes repo's mark and returns it; false when repo has no spare
// that is whole. Called with mu held.
func (sp *Spares) claim(repo string) (spareMark, bool) {
	b, err := os.ReadFile(sp.Mark(repo))
	if err != nil {
		return spareMark{}, false
	}
	var m spareMark
	if json.Unmarshal(b, &m) != nil || m.Repo != repo || m.Path != sp.Path(repo) {
		return spareMark{}, false
	}
	if os.Remove(sp.Mark(repo)) != nil {
		return spareMark{}, false
	}
	if _, err := os.Stat(m.Path); err != nil {
		return spareMark{}, false
	}
	return m, true
}

// putBack returns a spare take handed out and nobody used.
func (sp *Spares) putBack(m spareMark) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.writeMark(m.Repo, m.Rev)
}

// writeMark says repo's spare is whole. Called with mu held.
func (sp *Spares) writeMark(repo, rev string) {
	b, _ := json.Marshal(spareMark{Repo: repo, Path: sp.Path(repo), Rev: rev}) // strings always encode
	if err := atomicfile.Write(sp.Mark(repo), b, 0o600); err != nil {
		sp.log.WithError(err).WithField("repo", repo).Warn("Could not mark a spare worktree whole")
	}
}

// refill makes repo's next spare at rev in the background, unless it has
// one or one is being made.
func (sp *Spares) refill(repo, rev string) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	delete(sp.unwanted, repo)
	if sp.closed || sp.busy[repo] != nil {
		return
	}
	if _, err := os.Stat(sp.Mark(repo)); err == nil {
		return
	}
	sp.spell(repo, func() func() {
		if !sp.make(repo, rev) {
			return nil
		}
		return func() { sp.refresh(repo, rev) }
	})
}

// spell runs work in the background as repo's busy spell, and then what
// work returns (nil for nothing) once the spell is over. Called with mu
// held.
func (sp *Spares) spell(repo string, work func() (then func())) {
	ch := make(chan struct{})
	sp.busy[repo] = ch
	sp.wg.Add(1)
	go func() {
		defer sp.wg.Done()
		then := work()
		sp.done(repo, ch)
		if then != nil {
			then()
		}
	}()
}

// done ends repo's busy spell; a spare dropped meanwhile goes now.
func (sp *Spares) done(repo string, ch chan struct{}) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	delete(sp.busy, repo)
	close(ch)
	if sp.unwanted[repo] {
		sp.dropLocked(repo)
	}
}

// make checks repo's spare out at rev and marks it whole.
func (sp *Spares) make(repo, rev string) bool {
	ctx, cancel := sp.context()
	defer cancel()
	path := sp.Path(repo)
	log := sp.log.WithField("repo", repo)
	if _, err := os.Stat(path); err == nil { // a crash left it half made
		if err := sp.git.DropSpare(ctx, repo, path); err != nil {
			log.WithError(err).Warn("Could not remove a spare worktree left half made")
			return false
		}
	}
	if err := os.MkdirAll(sp.dir, 0o700); err != nil {
		log.WithError(err).Warn("Could not make the spare worktrees' folder")
		return false
	}
	if err := sp.git.AddSpare(ctx, repo, path, rev); err != nil {
		if ctx.Err() == nil {
			log.WithError(err).Warn("Could not check out a spare worktree")
		}
		return false
	}
	sp.mu.Lock()
	sp.writeMark(repo, rev)
	sp.mu.Unlock()
	return true
}

// refresh writes repo's new spare's index again once its files are older
// than it, unless it was taken meanwhile; a spare that cannot be
// refreshed is dropped.
func (sp *Spares) refresh(repo, rev string) {
	select {
	case <-time.After(sp.Settle):
	case <-sp.quit:
		return
	}
	sp.mu.Lock()
	if _, ok := sp.claim(repo); sp.closed || sp.busy[repo] != nil || !ok {
		sp.mu.Unlock()
		return // taken, or going
	}
	ch := make(chan struct{})
	sp.busy[repo] = ch
	sp.mu.Unlock()
	defer sp.done(repo, ch)
	ctx, cancel := sp.context()
	defer cancel()
	if err := sp.git.Refresh(ctx, sp.Path(repo)); err != nil {
		sp.log.WithError(err).WithField("repo", repo).Warn("Could not refresh a spare worktree; dropped it")
		_ = sp.git.DropSpare(ctx, repo, sp.Path(repo))
		return
	}
	sp.mu.Lock()
	sp.writeMark(repo, rev)
	sp.mu.Unlock()
}

// context is a git call's context: bounded, and cut when the supervisor
// stops.
func (sp *Spares) context() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	go func() {
		select {
		case <-sp.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// drop removes repo's spare in the background; one being made or
// refreshed goes when that is over.
func (sp *Spares) drop(repo string) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.dropLocked(repo)
}

// dropLocked is drop with mu held.
func (sp *Spares) dropLocked(repo string) {
	if sp.closed {
		return
	}
	if sp.busy[repo] != nil {
		sp.unwanted[repo] = true
		return
	}
	delete(sp.unwanted, repo)
	m, ok := sp.claim(repo)
	if !ok {
		return
	}
	sp.spell(repo, func() func() {
		ctx, cancel := sp.context()
		defer cancel()
		if err := sp.git.DropSpare(ctx, repo, m.Path); err != nil {
			sp.log.WithError(err).WithField("repo", repo).Warn("Could not remove a spare worktree")
		}
		return nil
	})
}

// close stops making spares and waits for the ones being made (cut
// short: the next one made there replaces them).
func (sp *Spares) close() {
	sp.mu.Lock()
	if sp.closed {
		sp.mu.Unlock()
		return
	}
	sp.closed = true
	close(sp.quit)
	sp.mu.Unlock()
	sp.wg.Wait()
}

// checkout makes w's worktree: from repo's spare when there is one,
// else by a full checkout (worktree.Add). A new spare follows a worktree
// made.
func (k *Keeper) checkout(ctx context.Context, w worktree.Worktree) error {
	err := k.takeSpare(ctx, w)
	if err == nil {
		k.spares.refill(w.Repo, w.Base)
	}
	return err
}

// takeSpare is checkout's work.
func (k *Keeper) takeSpare(ctx context.Context, w worktree.Worktree) error {
	spare, ok := k.spares.take(ctx, w.Repo)
	if !ok {
		_, err := k.Git.Add(ctx, w)
		return err
	}
	_, err := k.Git.Adopt(ctx, spare.Path, spare.Rev, w)
	if err == nil {
		return nil
	}
	if errors.Is(err, worktree.ErrBranchUse) {
		k.spares.putBack(spare) // untouched; Add says what the branch is
		_, err := k.Git.Add(ctx, w)
		return err
	}
	at := spare.Path
	if moved := (*worktree.MovedError)(nil); errors.As(err, &moved) {
		at = moved.Path
	}
	k.log.WithError(err).WithField("repo", w.Repo).Warn("Could not take the spare worktree; checking out a new one")
	if err := k.Git.DropSpare(ctx, w.Repo, at); err != nil {
		k.log.WithError(err).WithField("repo", w.Repo).Warn("Could not remove the spare worktree")
	}
	_, err = k.Git.Add(ctx, w)
	return err
}

// DropSpare removes the spare of a killed pane's repository when no
// other pane of the home branches from it (the killed one is gone from
// the registry).
func (k *Keeper) DropSpare(cfg schema.Pane) {
	if w, ok := Of(cfg); ok {
		k.dropSpareIfIdle(w.Repo)
	}
}

// dropSpareIfIdle removes repo's spare when no pane of the home (the
// killed one is gone from the registry) runs in a worktree of it.
func (k *Keeper) dropSpareIfIdle(repo string) {
	for _, p := range k.panes.All() {
		if w, ok := Of(p.Config); ok && w.Repo == repo {
			return
		}
	}
	k.spares.drop(repo)
}
