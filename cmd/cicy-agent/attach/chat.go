package attach

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/cicy/clip"
)

// Chat attaches to a cicy pane: each input line is sent as a message, and
// the pane's events are printed as they come — text as it streams, one line
// per tool call with the first line of its result. EOF (Ctrl-D) or /exit
// detaches; the pane goes on. When the supervisor stops, the chat says so
// and follows the pane again once a supervisor answers (it starts none:
// a view's tile outlives a shutdown); when the pane is removed, it says so
// and ends.
func Chat(ctx context.Context, cl *api.Client, id string, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := cl.Events(ctx, id)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "attached to %s; type a message and Enter, Ctrl-D detaches\n", id)
	if sc, err := cl.Screen(ctx, id, 0); err == nil && sc.Screen != "" {
		fmt.Fprintf(out, "last reply:\n%s\n", sc.Screen)
	}
	tr := newTurnTracker()
	f := &follower{src: cl, id: id, out: out, onEvent: tr.see, onLost: tr.release, retry: 250 * time.Millisecond}
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		f.run(ctx, stream)
	}()
	lines := make(chan string)
	go readLines(ctx, in, lines)
	gone := sendLines(ctx, cl, id, out, tr, lines, followed)
	if !gone && tr.pending() {
		// Piped input (echo hi | cicy-agent attach w-1) gets its answer
		// before the detach.
		select {
		case <-tr.answered:
		case <-followed:
		case <-ctx.Done():
		}
	}
	cancel()
	<-followed
	if !gone {
		fmt.Fprintf(out, "[detached from %s]\n", id)
	}
	return nil
}

// readLines sends the trimmed non-empty input lines until EOF (then closes
// lines) or ctx ends. Reading a terminal cannot be interrupted: after a
// detach this goroutine may stay blocked in Read until the process exits,
// right after.
func readLines(ctx context.Context, in io.Reader, lines chan<- string) {
	defer close(lines)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		select {
		case lines <- text:
		case <-ctx.Done():
			return
		}
	}
}

// sendLines sends each line until EOF or /exit; it reports true when the
// follower ended first (the pane was removed).
func sendLines(ctx context.Context, cl *api.Client, id string, out io.Writer, tr *turnTracker, lines <-chan string, followed <-chan struct{}) bool {
	for {
		select {
		case <-followed:
			return true
		case text, ok := <-lines:
			if !ok || text == "/exit" {
				return false
			}
			tr.sent(text)
			if _, err := cl.Send(ctx, id, api.SendRequest{Text: text}); err != nil {
				fmt.Fprintf(out, "[not sent: %v]\n", err)
				tr.sent("")
			}
		}
	}
}

// turnTracker tells when the turn carrying the last line sent has ended.
type turnTracker struct {
	mu       sync.Mutex
	lastSent string
	seen     bool
	answered chan struct{}
}

func newTurnTracker() *turnTracker { return &turnTracker{answered: make(chan struct{}, 1)} }

// sent records the line just sent ("" when it was not), forgetting an
// answer to an earlier one.
func (t *turnTracker) sent(text string) {
	t.mu.Lock()
	t.lastSent, t.seen = text, false
	t.mu.Unlock()
	select {
	case <-t.answered:
	default:
	}
}

func (t *turnTracker) pending() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lastSent != ""
}

// see follows the events: the user message of the last line, then its
// turn's end.
func (t *turnTracker) see(ev cicy.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case ev.Kind == "user" && t.lastSent != "" && strings.Contains(ev.Text, t.lastSent):
		t.seen = true
	case ev.Kind == "turn_end" && t.seen:
		t.seen, t.lastSent = false, ""
		t.release()
	}
}

// release ends a wait for an answer (also when the supervisor is gone:
// none will come on this stream).
func (t *turnTracker) release() {
	select {
	case t.answered <- struct{}{}:
	default:
	}
}

// eventSource is what the follower asks of the supervisor.
type eventSource interface {
	Events(ctx context.Context, id string) (io.ReadCloser, error)
	Health(ctx context.Context) (api.Health, error)
}

// follower prints a pane's events, through the supervisor's restarts.
type follower struct {
	src     eventSource
	id      string
	out     io.Writer
	onEvent func(cicy.Event)
	onLost  func() // the supervisor stopped
	retry   time.Duration
}

// errPaneGone ends the following: the pane was removed.
var errPaneGone = errors.New("pane gone")

// run prints the events of stream, then of each new stream, until ctx
// ends or the pane is gone.
func (f *follower) run(ctx context.Context, stream io.ReadCloser) {
	for {
		f.print(stream)
		stream.Close()
		var err error
		if stream, err = f.reopen(ctx); err != nil {
			return
		}
	}
}

func (f *follower) print(stream io.Reader) {
	dec := json.NewDecoder(stream)
	for {
		var ev cicy.Event
		if dec.Decode(&ev) != nil {
			return
		}
		printEvent(f.out, ev)
		f.onEvent(ev)
	}
}

// reopen opens the pane's events again once the supervisor answers,
// saying when it stopped and when it is back; errPaneGone when the pane
// was removed, ctx's error when it ends.
func (f *follower) reopen(ctx context.Context) (io.ReadCloser, error) {
	down := false
	for {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		_, err := f.src.Health(ctx)
		switch {
		case err != nil && !down && ctx.Err() == nil:
			down = true
			fmt.Fprintf(f.out, "\n[the supervisor stopped: %s shows nothing new until it runs again; Ctrl-D detaches]\n", f.id)
			f.onLost()
		case err == nil:
			stream, err := f.src.Events(ctx, f.id)
			if err == nil {
				if down {
					fmt.Fprintf(f.out, "[the supervisor is back: following %s again]\n", f.id)
				}
				return stream, nil
			}
			var ae *api.Error
			if errors.As(err, &ae) && ae.Kind == api.KindNotFound {
				fmt.Fprintf(f.out, "\n[pane %s was removed; detached]\n", f.id)
				return nil, errPaneGone
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(f.retry):
		}
	}
}

func printEvent(out io.Writer, ev cicy.Event) {
	switch ev.Kind {
	case "user":
		fmt.Fprintf(out, "\n› %s\n", ev.Text)
	case "text":
		fmt.Fprint(out, ev.Text)
	case "tool":
		fmt.Fprintf(out, "\n  ⚙ %s %s → %s\n", ev.Name, clip.Runes(ev.Text, 80), ev.Result)
	case "turn_end":
		switch ev.Status {
		case "completed":
			fmt.Fprintln(out)
		default:
			fmt.Fprintf(out, "\n[turn %s]\n", ev.Status)
		}
	case "queued":
		fmt.Fprintf(out, "  (queued: %s)\n", clip.Runes(ev.Text, 80))
	case "system":
		fmt.Fprintf(out, "[%s]\n", ev.Text)
	}
}
