package pane

import (
	"bytes"
	"fmt"
	"strings"
)

// namedKeys are the key names `send --key` accepts, spelled as tmux spells
// them, with the bytes a VT220-style terminal sends for each.
var namedKeys = map[string]string{
	"Enter": "\r", "Tab": "\t", "Escape": "\x1b", "BSpace": "\x7f", "Space": " ",
	"Up": "\x1b[A", "Down": "\x1b[B", "Right": "\x1b[C", "Left": "\x1b[D",
	"Home": "\x1b[H", "End": "\x1b[F", "PageUp": "\x1b[5~", "PageDown": "\x1b[6~",
	"Delete": "\x1b[3~", "Insert": "\x1b[2~", "BTab": "\x1b[Z",
}

// KeyBytes turns a key name (Enter, Escape, Up, C-c, M-x, …) into the bytes
// a terminal sends for it. A single printable character (1, y) is itself,
// as tmux takes it.
func KeyBytes(name string) ([]byte, error) {
	if b, ok := namedKeys[name]; ok {
		return []byte(b), nil
	}
	if len(name) == 1 && name[0] > ' ' && name[0] < 0x7f {
		return []byte(name), nil
	}
	if rest, ok := strings.CutPrefix(name, "C-"); ok && len(rest) == 1 {
		c := rest[0]
		switch {
		case c >= 'a' && c <= 'z':
			return []byte{c - 'a' + 1}, nil
		case c >= 'A' && c <= 'Z':
			return []byte{c - 'A' + 1}, nil
		case c >= '@' && c <= '_':
			return []byte{c - '@'}, nil
		}
	}
	if rest, ok := strings.CutPrefix(name, "M-"); ok && len(rest) == 1 {
		return []byte{0x1b, rest[0]}, nil
	}
	return nil, fmt.Errorf("unknown key %q (try Enter, Escape, Tab, BSpace, Up, Down, Left, Right, C-c, M-x, or one character like 1 or y)", name)
}

// Bracketed-paste markers. A paste containing the end marker is cleaned of
// it, so pasted text can never end the paste early and run as keys.
const (
	pasteStart = "\x1b[200~"
	pasteEnd   = "\x1b[201~"
)

// pasteModeTracker follows DECSET/DECRST 2004 in a program's output, so the
// pane knows whether the program asked for bracketed paste.
type pasteModeTracker struct {
	on   bool
	tail []byte // the end of the last chunk, in case a sequence was split
}

const (
	pasteOn  = "\x1b[?2004h"
	pasteOff = "\x1b[?2004l"
)

func (t *pasteModeTracker) feed(chunk []byte) {
	// A sequence split between chunks shows in the seam, and comes before
	// any sequence wholly inside this chunk.
	t.update(append(t.tail, chunk[:min(len(chunk), len(pasteOn)-1)]...))
	t.update(chunk)
	keep := len(pasteOn) - 1
	if len(chunk) >= keep {
		t.tail = append(t.tail[:0], chunk[len(chunk)-keep:]...)
		return
	}
	t.tail = append(t.tail, chunk...)
	t.tail = append(t.tail[:0], t.tail[max(0, len(t.tail)-keep):]...)
}

func (t *pasteModeTracker) update(b []byte) {
	if bytes.IndexByte(b, '\x1b') < 0 { // most output: no sequence at all
		return
	}
	on := bytes.LastIndex(b, []byte(pasteOn))
	off := bytes.LastIndex(b, []byte(pasteOff))
	if on >= 0 || off >= 0 {
		t.on = on > off
	}
}
