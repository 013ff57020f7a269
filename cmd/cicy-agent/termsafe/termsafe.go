package termsafe

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// The parser's states (ECMA-48, as a terminal reads).
const (
	stGround = iota
	stEsc    // after ESC
	stInter  // ESC and intermediates (0x20-0x2f)
	stCSI    // control sequence: parameters until a final byte
	stString // OSC, DCS, SOS, PM, APC: until ST (or BEL, or CAN/SUB)
	stStrEsc // ESC inside a string: ST if '\' follows
)

// Writer removes terminal control sequences from what goes through it.
// It keeps its state across writes, so a sequence split between two
// writes is removed whole; Flush ends the output.
type Writer struct {
	mu    sync.Mutex // the chat's two writers share one
	w     io.Writer
	state int
	cr    bool   // a CR waits to see whether LF follows (CR LF is a newline)
	carry []byte // an incomplete UTF-8 sequence at the end of the last write
	out   []byte
}

func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

func (s *Writer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(p)
	if len(s.carry) > 0 {
		p = append(s.carry, p...)
		s.carry = nil
	}
	s.out = s.out[:0]
	for len(p) > 0 {
		r, size := utf8.DecodeRune(p)
		if r == utf8.RuneError && size <= 1 && !utf8.FullRune(p) {
			s.carry = append([]byte(nil), p...)
			break
		}
		s.rune(r, size == 1 && r == utf8.RuneError)
		p = p[size:]
	}
	if len(s.out) == 0 {
		return n, nil
	}
	if _, err := s.w.Write(s.out); err != nil {
		return 0, err
	}
	return n, nil
}

// Flush writes what waits for the next byte: a CR, a UTF-8 sequence cut
// short.
func (s *Writer) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out = s.out[:0]
	if s.cr {
		s.out = append(s.out, "^M"...)
		s.cr = false
	}
	if len(s.carry) > 0 {
		s.out = utf8.AppendRune(s.out, utf8.RuneError)
		s.carry = nil
	}
	s.state = stGround
	if len(s.out) == 0 {
		return nil
	}
	_, err := s.w.Write(s.out)
	return err
}

// rune takes one character; bad is an invalid UTF-8 byte.
func (s *Writer) rune(r rune, bad bool) {
	if s.cr {
		s.cr = false
		if r == '\n' && s.state == stGround {
			s.out = append(s.out, '\n')
			return
		}
		s.out = append(s.out, "^M"...)
	}
	if r == 0x18 || r == 0x1a { // CAN, SUB: end any sequence
		if s.state != stGround {
			s.state = stGround
			return
		}
	}
	switch s.state {
	case stEsc:
		s.esc(r)
		return
	case stInter:
		switch {
		case r >= 0x20 && r <= 0x2f:
		case r == 0x1b:
			s.state = stEsc
		default:
			s.state = stGround
		}
		return
	case stCSI:
		switch {
		case r >= 0x20 && r <= 0x3f:
		case r >= 0x40 && r <= 0x7e:
			s.state = stGround
		case r == 0x1b:
			s.state = stEsc
		case r < 0x20:
			// a C0 control inside a sequence: a terminal runs it; dropped
		default:
			// not part of a sequence: the sequence ends, the text stays
			s.state = stGround
			s.ground(r, bad)
		}
		return
	case stString:
		switch r {
		case 0x07, 0x9c: // BEL (xterm's OSC end), ST
			s.state = stGround
		case 0x1b:
			s.state = stStrEsc
		case '\n':
			// No terminal gives a line back, but a reader wants it: an
			// unterminated string ends at the line's end.
			s.state = stGround
			s.out = append(s.out, '\n')
		}
		return
	case stStrEsc:
		if r == '\\' {
			s.state = stGround
			return
		}
		s.state = stEsc
		s.esc(r)
		return
	}
	s.ground(r, bad)
}

// esc is the character after ESC.
func (s *Writer) esc(r rune) {
	switch {
	case r == '[':
		s.state = stCSI
	case r == ']' || r == 'P' || r == 'X' || r == '^' || r == '_':
		s.state = stString
	case r >= 0x20 && r <= 0x2f:
		s.state = stInter
	case r == 0x1b:
		s.state = stEsc
	default: // a final byte (0x30-0x7e) ends the sequence; anything else too
		s.state = stGround
		if r == '\n' {
			s.out = append(s.out, '\n')
		}
	}
}

// ground is a character outside any sequence.
func (s *Writer) ground(r rune, bad bool) {
	switch {
	case bad:
		s.out = utf8.AppendRune(s.out, utf8.RuneError)
	case r == '\n' || r == '\t':
		s.out = append(s.out, byte(r))
	case r == '\r':
		s.cr = true
	case r == 0x1b:
		s.state = stEsc
	case r == 0x9b:
		s.state = stCSI
	case r == 0x9d || r == 0x90 || r == 0x98 || r == 0x9e || r == 0x9f:
		s.state = stString
	case r < 0x20:
		s.out = append(s.out, '^', byte(r)+'@')
	case r == 0x7f:
		s.out = append(s.out, "^?"...)
	case r >= 0x80 && r < 0xa0:
		// another C1 control: nothing to show
	default:
		s.out = utf8.AppendRune(s.out, r)
	}
}

// Text is s as a Writer prints it: for a value that is measured
// or cut before it is printed (a table's cell).
func Text(s string) string {
	if isPlain(s) {
		return s
	}
	var b strings.Builder
	w := NewWriter(&b)
	_, _ = w.Write([]byte(s))
	_ = w.Flush()
	return b.String()
}

// isPlain reports whether s has nothing for a Writer to change.
func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\n' && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}

// JSON makes JSON text safe on a terminal without changing what it
// says: Go's encoder escapes C0 (ESC is \u001b) but writes the C1 controls
// U+0080-U+009F as they are, which some terminals obey (U+009B is CSI);
// they can only stand inside strings, where \u00XX means the same.
func JSON(b []byte) []byte {
	if !bytes.Contains(b, []byte{0xc2}) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); i++ {
		if b[i] == 0xc2 && i+1 < len(b) && b[i+1] >= 0x80 && b[i+1] < 0xa0 {
			out = append(out, `\u00`...)
			out = append(out, "0123456789abcdef"[b[i+1]>>4], "0123456789abcdef"[b[i+1]&0xf])
			i++
			continue
		}
		out = append(out, b[i])
	}
	return out
}

// Underlying is what w writes to in the end: a Writer's own writer,
// for a command's own sequences (status --watch clears the screen).
func Underlying(w io.Writer) io.Writer {
	if s, ok := w.(*Writer); ok {
		return s.w
	}
	return w
}
