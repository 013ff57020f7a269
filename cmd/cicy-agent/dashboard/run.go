package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"golang.org/x/term"

	"github.com/cicy-ai/cicy-agent/api"
)

// Client is what Run needs of the supervisor: the stream, the preview and
// the actions.
type Client interface {
	Backend
	TeamEvents(ctx context.Context) (*api.EventStream, error)
	Preview(ctx context.Context, id string, lines int) (io.ReadCloser, error)
}

// RunOptions configure Run.
type RunOptions struct {
	// Attach is the command Enter runs to attach to a pane.
	Attach func(id string) *exec.Cmd
	Bell   bool
	// In and Out are the terminal (default: stdin and stdout).
	In  io.Reader
	Out io.Writer
	// ProgramOptions are passed to Bubble Tea (tests and benchmarks).
	ProgramOptions []tea.ProgramOption
}

// previewLines is how much of a pane's screen the preview asks for.
const previewLines = 200

// Run shows the dashboard until the user quits or ctx ends. The terminal
// is restored however it ends (Bubble Tea does, on a panic too).
func Run(ctx context.Context, cl Client, o RunOptions) error {
	if o.In == nil {
		o.In = os.Stdin
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	msgs := make(chan tea.Msg, 64)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // runs before wg.Wait: every goroutine below ends with ctx

	// The preview follows one pane at a time; a new selection ends the
	// last one's stream.
	// A panic in a helper goroutine must not leave the terminal raw:
	// it ends the program (which restores the terminal) and comes back
	// as Run's error. Bubble Tea does the same for its own loop.
	var (
		crashMu sync.Mutex
		crashed any
		p       *tea.Program
	)
	guard := func(f func()) {
		defer wg.Done()
		defer func() {
			if r := recover(); r != nil {
				crashMu.Lock()
				crashed = r
				crashMu.Unlock()
				p.Kill()
			}
		}()
		f()
	}
	var (
		pmu         sync.Mutex
		stopPreview = func() {}
	)
	preview := func(seq int, id string) {
		pmu.Lock()
		defer pmu.Unlock()
		stopPreview()
		pctx, pcancel := context.WithCancel(ctx)
		stopPreview = pcancel
		wg.Add(1)
		go guard(func() { followPreview(pctx, cl, seq, id, msgs) })
	}
	out := o.Out
	if colorprofile.Detect(o.Out, os.Environ()) == colorprofile.ASCII {
		out = colorprofile.NewWriter(o.Out, os.Environ()) // NO_COLOR, or a terminal without colour
	}
	screen := &screenWriter{out: out}
	defer screen.leave() // however the program ended, a panic included
	// A terminal: raw input, and its size now and whenever it changes
	// (SIGWINCH), since Bubble Tea without its renderer does neither.
	var tty *rawTerm
	if f, ok := o.In.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		tty = &rawTerm{fd: int(f.Fd())}
		if err := tty.raw(); err != nil {
			return err
		}
		defer tty.restore()
	}
	if f, ok := o.Out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		size := func() tea.Msg {
			w, h, err := term.GetSize(int(f.Fd()))
			if err != nil {
				return nil
			}
			return tea.WindowSizeMsg{Width: w, Height: h}
		}
		if msg, ok := size().(tea.WindowSizeMsg); ok {
			o.ProgramOptions = append([]tea.ProgramOption{tea.WithWindowSize(msg.Width, msg.Height)}, o.ProgramOptions...)
		}
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		defer signal.Stop(winch)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case <-winch:
					if msg := size(); msg != nil {
						select {
						case msgs <- msg:
						case <-ctx.Done():
							return
						}
					}
				}
			}
		}()
	}
	started := make(chan struct{})
	m := NewModel(Options{Backend: cl, Attach: o.Attach, Preview: preview, Bell: o.Bell, BellOut: screen,
		OnStart: func() { screen.enter(); close(started) }})
	m.term, m.tty = screen, tty
	opts := append([]tea.ProgramOption{tea.WithoutRenderer(), tea.WithContext(ctx), tea.WithInput(o.In), tea.WithOutput(o.Out)}, o.ProgramOptions...)
	p = tea.NewProgram(m, opts...)
	pump := func() { // hands messages to the program, folding event batches
		for {
			var msg tea.Msg
			select {
			case <-ctx.Done():
				return
			case msg = <-msgs:
			}
			if evs, ok := msg.(eventsMsg); ok {
				var rest tea.Msg
				msg, rest = drainEvents(evs, msgs)
				if rest != nil {
					p.Send(msg)
					msg = rest
				}
			}
			p.Send(msg)
		}
	}
	// The helpers start once the program runs: a helper's crash kills
	// it, which must not race its start.
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-started:
		case <-ctx.Done():
			return
		}
		wg.Add(2)
		go guard(func() { followTeam(ctx, cl, msgs) })
		go guard(pump)
	}()
	_, err := p.Run()
	crashMu.Lock()
	defer crashMu.Unlock()
	if crashed != nil {
		return fmt.Errorf("the dashboard crashed (the terminal is restored): %v", crashed)
	}
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil
	}
	return err
}

// drainEvents folds the event batches already waiting into one; the first
// other message met is returned too, to be sent after them.
func drainEvents(evs eventsMsg, msgs chan tea.Msg) (tea.Msg, tea.Msg) {
	for {
		select {
		case next := <-msgs:
			more, ok := next.(eventsMsg)
			if !ok {
				return evs, next
			}
			evs = append(evs, more...)
		default:
			return evs, nil
		}
	}
}

// followTeam reads the team's events, reconnecting (with a new snapshot)
// whenever the stream breaks, until ctx ends.
func followTeam(ctx context.Context, cl Client, msgs chan<- tea.Msg) {
	send := func(m tea.Msg) bool {
		select {
		case msgs <- m:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for ctx.Err() == nil {
		st, err := cl.TeamEvents(ctx)
		if err == nil {
			if !send(linkMsg{up: true}) {
				st.Close()
				return
			}
			var batch eventsMsg
			for {
				ev, rerr := st.Next()
				if rerr != nil {
					err = rerr
					break
				}
				batch = append(batch, ev)
				if st.Pending() {
					continue
				}
				if !send(batch) {
					st.Close()
					return
				}
				batch = nil
			}
			st.Close()
		}
		if ctx.Err() != nil || !send(linkMsg{up: false, err: err}) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// followPreview streams one pane's screen to the program.
func followPreview(ctx context.Context, cl Client, seq int, id string, msgs chan<- tea.Msg) {
	body, err := cl.Preview(ctx, id, previewLines)
	if err != nil {
		return // the pane is gone or the link is down; the table says so
	}
	defer body.Close()
	dec := json.NewDecoder(body)
	for {
		var sc api.ScreenResponse
		if dec.Decode(&sc) != nil {
			return
		}
		select {
		case msgs <- previewMsg{seq: seq, screen: sc}:
		case <-ctx.Done():
			return
		}
	}
}
