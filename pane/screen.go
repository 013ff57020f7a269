package pane

import (
	"bytes"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/ansi/parser"
	"github.com/charmbracelet/x/vt"
)

// screen is a PTY pane's terminal emulator, fed so that a flood of output
// costs what can still be seen rather than every byte.
//
// The emulator spends most of a flood scrolling: each line feed at the
// bottom moves every cell of the screen up one row (≈ 30 µs on a 120×40
// screen), so `yes` reached the screen at 70 KB/s. Lines that scroll off
// before anyone could look at them need not be drawn. write looks for long
// runs of plain text — printable characters, UTF-8, tabs, CR, LF, and the
// colour (SGR) and erase-in-line (EL) sequences — and leaves out the head
// of a run when the rest of the run scrolls every row the head drew off the
// screen; the colour changes left out are replayed (they change the pen,
// which outlives the run). What is left out could only have changed rows
// that scroll off, the scrollback, and the character REP repeats (when the
// rest of the run prints no ASCII character).
//
// That holds when line feeds scroll the whole screen: while a program has
// set a scroll region (DECSTBM) or left/right margins (DECLRMM), rows
// outside it keep what was written there, so every byte is emulated. The
// emulator's own handlers tell this type when those change.
//
// The scrollback is not kept: nothing reads it (the screen API and an
// attach repaint show the visible screen), and the emulator's default of
// 10,000 lines cost up to ~200 MB for a pane printing long lines.
//
// One goroutine (the pane's loop) owns a screen.
type screen struct {
	emu *vt.Emulator
	// parser follows the emulator's parser byte for byte (the same state
	// machine, fed the same bytes), so write knows where a sequence ends.
	parser *ansi.Parser
	// region[alt] is set while the main (0) or alternate (1) screen has a
	// scroll region that is not the whole screen.
	region [2]bool
	// lrMargins is set once the program enabled left/right margins.
	lrMargins bool
	// skipped counts the bytes left out of the emulator.
	skipped int64
	// pending is output not yet given to the emulator (see add).
	pending []byte
}

// maxPending bounds the output queued for the emulator.
const maxPending = 512 << 10

// add queues output for the emulator. It is fed when the queue reaches
// maxPending, when the loop's feed timer fires, or when someone looks (view),
// so a flood is emulated a few dozen times a second, not once per read.
// It reports whether the queue was empty before (the loop then arms its
// feed timer).
func (s *screen) add(b []byte) (first bool) {
	first = len(s.pending) == 0
	s.pending = append(s.pending, b...)
	if len(s.pending) >= maxPending {
		s.flush()
	}
	return first
}

// flush gives the queued output to the emulator.
func (s *screen) flush() {
	if len(s.pending) == 0 {
		return
	}
	s.write(s.pending)
	s.pending = s.pending[:0]
}

// release lets the queue's memory go once output is quiet, so a pane that
// flooded once keeps no big buffer.
func (s *screen) release() {
	if len(s.pending) == 0 {
		s.pending = nil
	}
}

// view returns the emulator with all output given to it.
func (s *screen) view() *vt.Emulator {
	s.flush()
	return s.emu
}

// scrollbackLines is the emulator's scrollback bound (its API has no way
// to turn it off).
const scrollbackLines = 1

func newScreen(cols, rows int) *screen {
	s := &screen{emu: vt.NewEmulator(cols, rows), parser: ansi.NewParser()}
	s.parser.SetDataSize(1) // it only follows states; the data is the emulator's
	s.emu.SetScrollbackSize(scrollbackLines)
	// Observers: each returns false so the emulator's own handler runs.
	s.emu.RegisterCsiHandler('r', func(params ansi.Params) bool { // DECSTBM
		top, _, _ := params.Param(0, 1)
		bottom, _, _ := params.Param(1, s.emu.Height())
		top = max(top, 1)
		if bottom < 1 {
			bottom = s.emu.Height()
		}
		if top < bottom { // the emulator ignores the others
			s.region[s.altIndex()] = top != 1 || bottom != s.emu.Height()
		}
		return false
	})
	lrm := func(params ansi.Params) bool { // DECSET ?69 (DECLRMM)
		params.ForEach(0, func(_, p int, _ bool) {
			if p == 69 {
				s.lrMargins = true
			}
		})
		return false
	}
	s.emu.RegisterCsiHandler(ansi.Command('?', 0, 'h'), lrm)
	return s
}

func (s *screen) altIndex() int {
	if s.emu.IsAltScreen() {
		return 1
	}
	return 0
}

// feed gives bytes to the emulator and to the parser that follows it.
func (s *screen) feed(b []byte) {
	if len(b) == 0 {
		return
	}
	s.emu.Write(b) //nolint:errcheck // the emulator never fails a write
	for _, c := range b {
		s.parser.Advance(c)
	}
}

// resize changes the emulator's size; it resets both screens' margins.
func (s *screen) resize(cols, rows int) {
	s.flush()
	s.emu.Resize(cols, rows)
	s.region = [2]bool{}
}

// write takes a batch of the program's output.
func (s *screen) write(b []byte) {
	for len(b) > 0 {
		start, end, ok := nextPlainRun(b, s.emu.Height())
		if !ok {
			s.feed(b)
			return
		}
		s.feed(b[:start])
		b = b[start:]
		if s.parser.State() != parser.GroundState {
			// The run starts inside a sequence (its tail looks like text):
			// give the emulator the sequence, then look again.
			k := 0
			for k < len(b) && s.parser.State() != parser.GroundState {
				s.parser.Advance(b[k])
				k++
			}
			s.emu.Write(b[:k]) //nolint:errcheck // the emulator never fails a write
			b = b[k:]
			continue
		}
		run := b[:end-start]
		b = b[end-start:]
		if s.region[s.altIndex()] || s.lrMargins {
			s.feed(run)
			continue
		}
		cut := s.cutPoint(run)
		s.replaySGR(run[:cut])
		s.skipped += int64(cut)
		s.feed(run[cut:])
	}
}

// cutPoint is how much of the head of run, plain text starting with the
// parser in its ground state, can be left out: the rest begins with CR LF
// and holds enough line feeds after it to scroll every visible row in,
// wherever the cursor stands now. The CR LF puts the cursor in column 0 of
// a fresh row as it would have been after the whole run, and from there
// on the output is the same bytes; from the cursor's row y, at most h-1-y
// line feeds move it to the bottom and h more replace every row.
func (s *screen) cutPoint(run []byte) int {
	h := s.emu.Height()
	need := (h - 1 - s.emu.CursorPosition().Y) + h + 1
	lfs := 0
	for i := len(run) - 1; i > 0; i-- {
		if run[i] != '\n' {
			continue
		}
		if lfs >= need && run[i-1] == '\r' {
			return i - 1
		}
		lfs++
	}
	return 0
}

// replaySGR gives the emulator the colour changes of the part of a run it
// does not see, from the last full reset on.
func (s *screen) replaySGR(skipped []byte) {
	var sgr []byte
	for {
		i := bytes.IndexByte(skipped, ansi.ESC)
		if i < 0 {
			break
		}
		n := csiLen(skipped[i:])
		if n == 0 { // cannot happen in a plain run; stay safe
			skipped = skipped[i+1:]
			continue
		}
		if seq := skipped[i : i+n]; seq[n-1] == 'm' {
			if string(seq) == "\x1b[m" || string(seq) == "\x1b[0m" {
				sgr = sgr[:0]
			}
			sgr = append(sgr, seq...)
		}
		skipped = skipped[i+n:]
	}
	s.feed(sgr)
}

// plain classifies bytes for nextPlainRun: 1 a printable ASCII character
// or a tab, CR or LF; 2, 3, 4 the lead byte of a UTF-8 sequence that long.
var plain = func() (t [256]byte) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = 1
	}
	t['\t'], t['\r'], t['\n'] = 1, 1, 1
	for c := 0xc2; c <= 0xdf; c++ {
		t[c] = 2
	}
	for c := 0xe0; c <= 0xef; c++ {
		t[c] = 3
	}
	for c := 0xf0; c <= 0xf4; c++ {
		t[c] = 4
	}
	return t
}()

// csiLen is the length of the SGR or EL sequence (ESC [ digits ; : then m
// or K) at the head of b, or 0 if b does not start with one.
func csiLen(b []byte) int {
	if len(b) < 3 || b[0] != ansi.ESC || b[1] != '[' {
		return 0
	}
	for i := 2; i < len(b); i++ {
		switch c := b[i]; {
		case c >= '0' && c <= '9' || c == ';' || c == ':':
		case c == 'm' || c == 'K':
			return i + 1
		default:
			return 0
		}
	}
	return 0
}

// plainLen is the length of the plain text at the head of b: what moves
// the emulator's parser from its ground state back to it without leaving
// the current line's business (printing, tabs, CR, LF, SGR, EL).
func plainLen(b []byte) int {
	i := 0
	for i < len(b) {
		switch n := int(plain[b[i]]); {
		case n == 1:
			i++
		case n > 1:
			if i+n > len(b) {
				return i
			}
			for _, c := range b[i+1 : i+n] {
				if c < 0x80 || c > 0xbf {
					return i
				}
			}
			i += n
		default:
			m := csiLen(b[i:])
			if m == 0 {
				return i
			}
			i += m
		}
	}
	return i
}

// nextPlainRun finds the first run of plain text in b long enough to be
// worth cutting: more than 2h+1 line feeds, h the screen's height.
func nextPlainRun(b []byte, h int) (start, end int, ok bool) {
	for i := 0; i < len(b); {
		n := plainLen(b[i:])
		if n == 0 {
			i++
			continue
		}
		if bytes.Count(b[i:i+n], []byte{'\n'}) > 2*h+1 {
			return i, i + n, true
		}
		i += n
	}
	return 0, 0, false
}
