package dashboard

import (
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"

	tea "charm.land/bubbletea/v2"
	"golang.org/x/term"
)

// screenWriter draws frames on the terminal itself: Bubble Tea runs
// without its renderer. Its cell renderer parsed and diffed the whole
// frame at every change and woke 30–60 times a second even when nothing
// changed (half the dashboard's CPU with a busy team); this writes only
// the lines that changed, only when they did, in one write. Every frame
// line is exactly the terminal's width (Frame guarantees it), so a line
// overwrites the old one cell for cell: no clearing, no flicker.
type screenWriter struct {
	mu   sync.Mutex
	out  io.Writer
	last []string // the lines on the screen; nil: repaint everything
	on   bool     // in the alternate screen
}

const (
	enterAlt = "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J" // alternate screen, cursor hidden, cleared
	leaveAlt = "\x1b[?25h\x1b[?1049l"              // cursor shown, main screen back
)

func (s *screenWriter) enter() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.on {
		_, _ = io.WriteString(s.out, enterAlt)
		s.on, s.last = true, nil
	}
}

func (s *screenWriter) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.on {
		_, _ = io.WriteString(s.out, leaveAlt)
		s.on = false
	}
}

// invalidate makes the next draw repaint the whole screen (after a
// resize, or after another program had the terminal).
func (s *screenWriter) invalidate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.on {
		_, _ = io.WriteString(s.out, "\x1b[H\x1b[2J")
	}
	s.last = nil
}

// draw puts the frame on the screen, writing the lines that changed.
func (s *screenWriter) draw(frame string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.on {
		return
	}
	lines := strings.Split(frame, "\n")
	var b strings.Builder
	for i, l := range lines {
		if i < len(s.last) && s.last[i] == l {
			continue
		}
		b.WriteString("\x1b[")
		b.WriteString(strconv.Itoa(i + 1))
		b.WriteString(";1H\x1b[0m")
		b.WriteString(l)
	}
	if len(s.last) > len(lines) { // the terminal got shorter
		b.WriteString("\x1b[0m\x1b[J")
	}
	s.last = lines
	if b.Len() > 0 {
		b.WriteString("\x1b[0m")
		_, _ = io.WriteString(s.out, b.String())
	}
}

// Write lets the bell's writer be the screen (one writer, one lock).
func (s *screenWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.Write(p)
}

// rawTerm is the terminal's input mode. Without its renderer Bubble Tea
// leaves the terminal as it is: the dashboard puts it in raw mode itself
// (keys arrive one by one, unechoed) and back when it ends or hands the
// terminal to attach.
type rawTerm struct {
	fd    int
	saved *term.State
}

func (r *rawTerm) raw() error {
	if r == nil {
		return nil
	}
	st, err := term.MakeRaw(r.fd)
	if err != nil {
		return fmt.Errorf("put the terminal in raw mode: %w", err)
	}
	r.saved = st
	return nil
}

func (r *rawTerm) restore() {
	if r != nil && r.saved != nil {
		_ = term.Restore(r.fd, r.saved)
		r.saved = nil
	}
}

// execOnMain runs a command (attach) on the main screen in the terminal's
// usual mode: the dashboard's alternate screen is left before and entered
// again after, then repainted.
type execOnMain struct {
	cmd    *exec.Cmd
	screen *screenWriter
	tty    *rawTerm
}

var _ tea.ExecCommand = (*execOnMain)(nil)

func (e *execOnMain) Run() error {
	e.screen.leave()
	e.tty.restore()
	defer func() {
		_ = e.tty.raw()
		e.screen.enter()
		e.screen.invalidate()
	}()
	return e.cmd.Run()
}

func (e *execOnMain) SetStdin(r io.Reader)  { e.cmd.Stdin = r }
func (e *execOnMain) SetStdout(w io.Writer) { e.cmd.Stdout = w }
func (e *execOnMain) SetStderr(w io.Writer) { e.cmd.Stderr = w }
