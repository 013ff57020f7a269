package pane

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/charmbracelet/x/vt"
)

// floodOutput is random terminal output: floods of plain lines (some with
// colours, erases and wide characters) between the sequences that make
// leaving lines out unsafe or change what a line feed does.
func floodOutput(r *rand.Rand, rows int) string {
	var b strings.Builder
	line := func() {
		n := r.IntN(120)
		for range n {
			switch k := r.IntN(40); {
			case k == 0:
				fmt.Fprintf(&b, "\x1b[%d;%dm", 30+r.IntN(8), 40+r.IntN(8))
			case k == 1:
				b.WriteString("\x1b[0m")
			case k == 2:
				b.WriteString("\x1b[K")
			case k == 3:
				b.WriteString("漢")
			case k == 4:
				b.WriteString("\t")
			case k == 5:
				b.WriteString("é")
			default:
				b.WriteByte(byte('a' + r.IntN(26)))
			}
		}
		switch r.IntN(10) {
		case 0:
			b.WriteString("\n")
		case 1:
			b.WriteString("\r")
		default:
			b.WriteString("\r\n")
		}
	}
	special := []string{
		"\x1b[5;%dr", "\x1b[r", "\x1b[%d;3H", "\x1b[?1049h", "\x1b[?1049l", "\x1b]0;title\x07",
		"\x1b[2J", "\x1b[3A", "\x1b[4h", "\x1b[4l", "\x1b[?7l", "\x1b[?7h", "\x1b[1;4r", "\x1b[20h", "\x1b[20l",
		"\x1b[38;5;200m", "\x1b(0", "\x1b(B", "\x1b[?6h", "\x1b[?6l", "\x1b[%dL",
	}
	for range 20 {
		if r.IntN(3) == 0 {
			s := special[r.IntN(len(special))]
			if strings.Contains(s, "%d") {
				s = fmt.Sprintf(s, 1+r.IntN(rows))
			}
			b.WriteString(s)
		}
		for range r.IntN(5 * rows) {
			line()
		}
	}
	return b.String()
}

// sameScreen feeds out to a screen in chunks of random size and to an
// emulator that sees every byte, and fails unless both show the same
// styled cells, cursor and screen (main or alternate).
func sameScreen(t *testing.T, name string, r *rand.Rand, cols, rows int, out string) *screen {
	t.Helper()
	ref := vt.NewEmulator(cols, rows)
	s := newScreen(cols, rows)
	for i := 0; i < len(out); {
		n := min(len(out)-i, 1+r.IntN(64<<10))
		chunk := []byte(out[i : i+n])
		ref.Write(chunk) //nolint:errcheck
		s.add(chunk)
		if r.IntN(4) == 0 {
			s.flush()
		}
		i += n
	}
	got := s.view()
	if got.Render() != ref.Render() || got.CursorPosition() != ref.CursorPosition() || got.IsAltScreen() != ref.IsAltScreen() {
		t.Fatalf("%s (%dx%d): the screen differs from one fed every byte\ngot cursor %v:\n%s\nwant cursor %v:\n%s",
			name, cols, rows, got.CursorPosition(), got.String(), ref.CursorPosition(), ref.String())
	}
	return s
}

// TestScreenFloodAfterSequences: floods after the sequences that decide
// where lines land — a cursor moved up over old text, a scroll region with
// the cursor above or below it, the alternate screen, margins, modes —
// look as they would had every byte been emulated.
func TestScreenFloodAfterSequences(t *testing.T) {
	var old, flood strings.Builder
	for i := range 60 {
		fmt.Fprintf(&old, "old text that is longer than the flood's lines %d\r\n", i)
	}
	for i := range 400 {
		switch i {
		case 50:
			flood.WriteString("\x1b[0m")
		case 100:
			flood.WriteString("\x1b[4;45m") // stays on to the end
		}
		fmt.Fprintf(&flood, "\x1b[3%dmline %d\x1b[K\r\n", i%8, i)
	}
	flood.WriteString("end")
	r := rand.New(rand.NewPCG(1, 2))
	var skipped int64
	for name, before := range map[string]string{
		"cursor home":                    "\x1b[H",
		"cursor in the middle":           "\x1b[12;7H",
		"scroll region, cursor above":    "\x1b[5;20r\x1b[1;1H",
		"scroll region, cursor inside":   "\x1b[5;20r\x1b[8;1H",
		"scroll region, cursor below":    "\x1b[5;20r\x1b[23;1H",
		"scroll region reset":            "\x1b[5;20r\x1b[r\x1b[3;1H",
		"alternate screen":               "\x1b[?1049h\x1b[3;1H",
		"alternate screen with region":   "\x1b[?1049h\x1b[2;10r\x1b[1;1H",
		"region left on the main screen": "\x1b[2;10r\x1b[?1049h\x1b[r\x1b[?1049l\x1b[1;1H",
		"left and right margins":         "\x1b[?69h\x1b[5;30s\x1b[1;1H",
		"newline mode":                   "\x1b[20h",
		"no autowrap":                    "\x1b[?7l",
		"origin mode":                    "\x1b[?6h\x1b[4;18r",
		"insert mode":                    "\x1b[4h\x1b[5;1H",
		"colours and a title":            "\x1b[1;31;42m\x1b]0;a title\x07",
	} {
		s := sameScreen(t, name, r, 80, 24, old.String()+before+flood.String())
		skipped += s.skipped
	}
	if skipped == 0 {
		t.Fatal("no byte was ever left out: the floods were all emulated")
	}
}

// TestScreenSkipsOnlyWhatCannotBeSeen: a screen fed in batches that it
// cuts shows exactly what an emulator fed every byte shows — the styled
// cells, the cursor, which screen is up — and did leave bytes out.
func TestScreenSkipsOnlyWhatCannotBeSeen(t *testing.T) {
	t.Parallel()
	var skipped int64
	for seed := range uint64(12) {
		r := rand.New(rand.NewPCG(seed, 7))
		cols, rows := []int{120, 80, 20}[seed%3], []int{40, 24, 5}[seed%3]
		s := sameScreen(t, fmt.Sprintf("seed %d", seed), r, cols, rows, floodOutput(r, rows))
		skipped += s.skipped
	}
	t.Logf("skipped %d bytes", skipped)
	if skipped == 0 {
		t.Fatal("no byte was ever left out: the floods were all emulated")
	}
}

// TestPasteModeAcrossChunks: the bracketed-paste switch is seen wherever
// the output is cut, the last one standing.
func TestPasteModeAcrossChunks(t *testing.T) {
	out := "ab" + pasteOn + "text" + pasteOff + "x" + pasteOn + "yz"
	for i := 0; i <= len(out); i++ {
		for j := i; j <= len(out); j++ {
			var tr pasteModeTracker
			tr.feed([]byte(out[:i]))
			tr.feed([]byte(out[i:j]))
			tr.feed([]byte(out[j:]))
			if !tr.on {
				t.Fatalf("cut at %d and %d: paste mode off", i, j)
			}
			tr.feed([]byte(pasteOff[:3]))
			tr.feed([]byte(pasteOff[3:]))
			if tr.on {
				t.Fatalf("cut at %d and %d: paste mode still on after %q", i, j, pasteOff)
			}
		}
	}
}
