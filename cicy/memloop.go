package cicy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/clip"
	"github.com/cicy-ai/cicy-agent/cicy/memory"
	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// Clock is the time of the memory triggers; tests pass a fake one so they
// never wait.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc.
type Timer interface{ Stop() bool }

type realClock struct{}

func (realClock) Now() time.Time                            { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// The memory loop's triggers and limits (issue 4).
const (
	MemoryIdle        = 5 * time.Minute  // since the last turn (restarted by each turn)
	MemoryBatch       = 6                // buffered turns
	MemoryMaxWait     = 20 * time.Minute // since the oldest buffered turn
	memoryClip        = 2000             // bytes of question and answer kept per turn
	memoryMaxAttempts = 5                // recognizer failures before a batch is set aside
	memoryRetry       = time.Minute      // wait before retrying a failed recognition
)

// explicitRe finds a request to remember in the user's text.
var explicitRe = regexp.MustCompile(`记住|别忘了|记下来|记一下|(?i:remember|don'?t forget)`)

// memState is the loop-owned state of the memory loop. The buffer file
// holds inflight and waiting turns both, so a crash mid-flush loses
// nothing: the next start finds them all waiting.
type memState struct {
	waiting  []memory.Turn
	inflight []memory.Turn
	timer    Timer
	attempts int
	waiters  []chan FlushResult
}

// FlushResult is the outcome of a recognition.
type FlushResult struct {
	Turns  int    `json:"turns"`  // turns recognised
	Stored int    `json:"stored"` // memories written
	Error  string `json:"error,omitempty"`
}

func (a *Agent) memDir() string     { return filepath.Join(a.cfg.Workspace, ".cicy", "memory") }
func (a *Agent) bufferFile() string { return filepath.Join(a.memDir(), "buffer.json") }

// restoreMemory loads the turns a previous run had not recognised yet and
// arms their triggers.
func (a *Agent) restoreMemory() {
	var doc struct {
		Turns []memory.Turn `json:"turns"`
	}
	if ok, err := readJSON(a.bufferFile(), &doc); err != nil {
		a.log.WithError(err).Warn("Memory buffer unreadable; kept aside")
		_ = os.Rename(a.bufferFile(), a.bufferFile()+".corrupt")
	} else if ok {
		a.mem.waiting = doc.Turns
	}
	a.armMemory(false)
}

func (a *Agent) saveBuffer() {
	turns := append(append([]memory.Turn{}, a.mem.inflight...), a.mem.waiting...)
	if len(turns) == 0 {
		if err := os.Remove(a.bufferFile()); err != nil && !errors.Is(err, os.ErrNotExist) {
			a.log.WithError(err).Warn("Could not remove the memory buffer")
		}
		return
	}
	if err := writeScrubbed(a.bufferFile(), map[string]any{"turns": turns}, a.env.Scrub); err != nil {
		a.log.WithError(err).Error("Could not write the memory buffer")
	}
}

// harvest buffers a completed turn for recognition. Runs on the loop.
func (a *Agent) harvest(question, answer string, calls []ToolCall) {
	if strings.TrimSpace(question) == "" && strings.TrimSpace(answer) == "" {
		return
	}
	var tools []string
	seen := map[string]bool{}
	for _, c := range calls {
		if !seen[c.Name] {
			seen[c.Name] = true
			tools = append(tools, c.Name)
		}
	}
	a.mem.waiting = append(a.mem.waiting, memory.Turn{
		Question: clip.Bytes(question, memoryClip), Answer: clip.Bytes(answer, memoryClip),
		Tools: tools, At: a.env.Clock.Now(),
	})
	a.saveBuffer()
	a.armMemory(explicitRe.MatchString(question))
}

// armMemory flushes when a trigger holds, else (re)arms the timer for the
// next one: idle since the last turn, capped by the oldest turn's wait.
func (a *Agent) armMemory(now bool) {
	if a.mem.timer != nil {
		a.mem.timer.Stop()
		a.mem.timer = nil
	}
	if len(a.mem.waiting) == 0 {
		return
	}
	age := a.env.Clock.Now().Sub(a.mem.waiting[0].At)
	if now || len(a.mem.waiting) >= MemoryBatch || age >= MemoryMaxWait {
		a.flushMemory()
		return
	}
	d := min(MemoryIdle, MemoryMaxWait-age)
	a.mem.timer = a.env.Clock.AfterFunc(d, func() {
		a.post(func() {
			a.mem.timer = nil
			a.flushMemory()
		})
	})
}

// FlushMemory recognises the buffered turns now; with wait the result
// comes back on the channel.
func (a *Agent) FlushMemory(wait bool) <-chan FlushResult {
	var ch chan FlushResult
	if wait {
		ch = make(chan FlushResult, 1)
	}
	if !a.do(func() {
		if ch != nil {
			if len(a.mem.waiting) == 0 && len(a.mem.inflight) == 0 {
				ch <- FlushResult{}
				return
			}
			a.mem.waiters = append(a.mem.waiters, ch)
		}
		a.flushMemory()
	}) && ch != nil {
		ch <- FlushResult{Error: "the pane is closed"}
	}
	return ch
}

// flushMemory starts one recognition of everything waiting, unless one
// runs (what arrives meanwhile waits for the next). Runs on the loop.
func (a *Agent) flushMemory() {
	if len(a.mem.inflight) > 0 || len(a.mem.waiting) == 0 {
		return
	}
	if a.mem.timer != nil {
		a.mem.timer.Stop()
		a.mem.timer = nil
	}
	batch := a.mem.waiting
	a.mem.inflight, a.mem.waiting = batch, nil
	a.saveBuffer()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	a.jobs.Add(1)
	go func() {
		defer a.jobs.Done()
		defer cancel()
		go func() { // a closing agent cancels the call
			select {
			case <-a.quit:
				cancel()
			case <-ctx.Done():
			}
		}()
		stored, err := a.recognize(ctx, batch)
		a.post(func() { a.flushDone(batch, stored, err) })
	}()
}

// flushDone takes the recognition's result back on the loop.
func (a *Agent) flushDone(batch []memory.Turn, stored int, err error) {
	a.mem.inflight = nil
	res := FlushResult{Turns: len(batch), Stored: stored}
	if err != nil {
		a.mem.attempts++
		res.Error = err.Error()
		if a.mem.attempts >= memoryMaxAttempts {
			a.setAside(batch, err)
		} else {
			a.log.WithError(err).Warnf("Memory recognition failed (attempt %d of %d); the %d turns are kept for a retry", a.mem.attempts, memoryMaxAttempts, len(batch))
			a.mem.waiting = append(batch, a.mem.waiting...)
		}
	} else {
		a.mem.attempts = 0
	}
	a.saveBuffer()
	for _, w := range a.mem.waiters {
		w <- res
	}
	a.mem.waiters = nil
	if err != nil && len(a.mem.waiting) > 0 {
		a.mem.timer = a.env.Clock.AfterFunc(memoryRetry, func() { a.post(func() { a.mem.timer = nil; a.flushMemory() }) })
		return
	}
	a.armMemory(false)
}

// setAside moves a batch that failed every attempt to a file beside the
// memories: never dropped, and the loop goes on with newer turns.
func (a *Agent) setAside(batch []memory.Turn, err error) {
	a.mem.attempts = 0
	path := filepath.Join(a.memDir(), fmt.Sprintf("unrecognised-%d.json", a.env.Clock.Now().UnixNano()))
	if werr := writeScrubbed(path, map[string]any{"error": err.Error(), "turns": batch}, a.env.Scrub); werr != nil {
		a.log.WithError(werr).Error("Could not set aside a batch the recognizer failed on; keeping it")
		a.mem.waiting = append(batch, a.mem.waiting...)
		return
	}
	a.log.WithError(err).Errorf("Memory recognition failed %d times; the batch is kept in %s", memoryMaxAttempts, path)
}

// recognize makes the aux call and stores what it returns.
func (a *Agent) recognize(ctx context.Context, batch []memory.Turn) (int, error) {
	s, err := a.resolve()
	if err != nil {
		return 0, err
	}
	store := a.store
	req := &wire.Request{
		Model: s.model, MaxTokens: 2048, PaneID: a.cfg.ID, Aux: "memory",
		System:   []wire.Block{wire.Text(memory.SystemPrompt)},
		Messages: []wire.Message{{Role: wire.RoleUser, Content: []wire.Block{wire.Text(memory.RecognizerInput(store.IndexLines(), batch))}}},
	}
	start := time.Now()
	resp, err := s.prov.Stream(ctx, req, nil)
	if err != nil {
		return 0, errors.New(describe(err))
	}
	a.recordUsage(UsageRecord{PaneID: a.cfg.ID, Aux: "memory", Model: s.model, Usage: resp.Usage, Latency: time.Since(start)})
	mems, err := memory.ParseAnswer(wire.Message{Content: resp.Content}.JoinedText())
	if err != nil {
		return 0, fmt.Errorf("the recognizer's answer is not the JSON asked for: %w", err)
	}
	if len(mems) == 0 {
		return 0, nil // nothing worth keeping: the store is left as it is
	}
	stored, problems, err := store.Upsert(mems, a.env.Clock.Now())
	for _, p := range problems {
		a.log.Warnf("Memory %s refused: %s", p.File, p.Err)
	}
	if err != nil {
		return stored, err
	}
	a.log.WithField("stored", stored).Infof("Memory recognised %d turns", len(batch))
	return stored, nil
}

// Memory is the pane's memory store.
func (a *Agent) Memory() *memory.Store { return a.store }

// BufferedTurns is how many turns wait for recognition (in flight too).
func (a *Agent) BufferedTurns() int {
	n := 0
	a.do(func() { n = len(a.mem.waiting) + len(a.mem.inflight) })
	return n
}
