package pane

import (
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
// a terminal sends for it.
func KeyBytes(name string) ([]byte, error) {
	if b, ok := namedKeys[name]; ok {
		return []byte(b), nil
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
	return nil, fmt.Errorf("unknown key %q (try Enter, Escape, Tab, BSpace, Up, Down, Left, Right, C-c, M-x)", name)
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
	buf := append(t.tail, chunk...)
	on := strings.LastIndex(string(buf), pasteOn)
	off := strings.LastIndex(string(buf), pasteOff)
	if on >= 0 || off >= 0 {
		t.on = on > off
	}
	keep := len(pasteOn) - 1
	if len(buf) < keep {
		keep = len(buf)
	}
	t.tail = append(t.tail[:0], buf[len(buf)-keep:]...)
}
