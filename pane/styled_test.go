package pane

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"
)

// noControls fails when a run holds an ESC or another control byte.
func noControls(t *testing.T, lines []StyledLine) {
	t.Helper()
	for i, l := range lines {
		for _, r := range l {
			for _, c := range []byte(r.Text) {
				if c < 0x20 || c == 0x7f {
					t.Fatalf("line %d: run %q holds control byte %#x", i, r.Text, c)
				}
			}
		}
	}
}

func TestParseStyledSGR(t *testing.T) {
	t.Parallel()
	red, brightBlue := Palette(1), Palette(12)
	cases := []struct {
		name string
		in   string
		want StyledLine
	}{
		{"plain", "hello", StyledLine{{Text: "hello"}}},
		{"fg 30-37", "\x1b[31mred\x1b[0m x", StyledLine{{Text: "red", FG: red}, {Text: " x"}}},
		{"fg 90-97", "\x1b[94mb", StyledLine{{Text: "b", FG: brightBlue}}},
		{"bg 40-47", "\x1b[42mg", StyledLine{{Text: "g", BG: Palette(2)}}},
		{"bg 100-107", "\x1b[107mw", StyledLine{{Text: "w", BG: Palette(15)}}},
		{"fg 38;5", "\x1b[38;5;208mo", StyledLine{{Text: "o", FG: Palette(208)}}},
		{"fg 38;2", "\x1b[38;2;1;2;3mt", StyledLine{{Text: "t", FG: RGB(1, 2, 3)}}},
		{"bg 48;5", "\x1b[48;5;17mb", StyledLine{{Text: "b", BG: Palette(17)}}},
		{"bg 48;2", "\x1b[48;2;250;128;0mb", StyledLine{{Text: "b", BG: RGB(250, 128, 0)}}},
		{"colon form", "\x1b[38:2::9:8:7mc", StyledLine{{Text: "c", FG: RGB(9, 8, 7)}}},
		{"attrs", "\x1b[1;3;4;7ma\x1b[22mb\x1b[23mc\x1b[24md\x1b[27me", StyledLine{
			{Text: "a", Bold: true, Italic: true, Underline: true, Reverse: true},
			{Text: "b", Italic: true, Underline: true, Reverse: true},
			{Text: "c", Underline: true, Reverse: true},
			{Text: "d", Reverse: true},
			{Text: "e"},
		}},
		{"39 and 49", "\x1b[31;41ma\x1b[39mb\x1b[49mc", StyledLine{{Text: "a", FG: red, BG: red}, {Text: "b", BG: red}, {Text: "c"}}},
		{"reset m", "\x1b[1;31ma\x1b[mb", StyledLine{{Text: "a", FG: red, Bold: true}, {Text: "b"}}},
		{"several in one", "\x1b[1;38;5;9;48;2;0;0;255mx", StyledLine{{Text: "x", FG: Palette(9), BG: RGB(0, 0, 255), Bold: true}}},
		{"unknown escapes dropped", "a\x1b[2Jb\x1b]0;title\x07c\x1b]8;;http://x\x1b\\d\x1b(Be\x1b[?25lf\x1b[>4;2mg\x07\bh",
			StyledLine{{Text: "abcdefgh"}}},
		{"bad sgr ignored", "\x1b[38;5;999mx\x1b[38;2;1mq", StyledLine{{Text: "xq"}}},
		{"trailing blanks", "a   ", StyledLine{{Text: "a"}}},
		{"coloured blanks kept", "a\x1b[41m  ", StyledLine{{Text: "a"}, {Text: "  ", BG: red}}},
		{"truncated escape", "a\x1b[3", StyledLine{{Text: "a"}}},
	}
	for _, c := range cases {
		got := ParseStyled(c.in)
		noControls(t, got)
		if len(got) != 1 || !reflect.DeepEqual(got[0], c.want) {
			t.Errorf("%s: %q gave %#v, want %#v", c.name, c.in, got, c.want)
		}
	}
}

func TestParseStyledLinesAndPenCarry(t *testing.T) {
	t.Parallel()
	got := ParseStyled("\x1b[32mone\ntwo\x1b[0m\n\nthree\n\n\n")
	want := []StyledLine{
		{{Text: "one", FG: Palette(2)}},
		{{Text: "two", FG: Palette(2)}},
		nil,
		{{Text: "three"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v\nwant %#v", got, want)
	}
	if StyledText(got) != "one\ntwo\n\nthree" {
		t.Fatalf("text %q", StyledText(got))
	}
}

func TestParseStyledNeverPassesEscapes(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("\x1b[]();:?0123456789mKHJab \x07\\\n\t\x9b\xc2")
	for range 2000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		noControls(t, ParseStyled(string(b)))
	}
}

func TestStyledScreenFromVTCells(t *testing.T) {
	t.Parallel()
	emu := vt.NewEmulator(20, 4)
	emu.Write([]byte("plain \x1b[1;31mred\x1b[0m \x1b[38;2;10;20;30;48;5;100mrgb\x1b[0m\r\n\x1b[7mrev\x1b[0m\x1b[4mu\x1b[3mi\x1b[0m")) //nolint:errcheck
	got := styledScreen(emu)
	want := []StyledLine{
		{{Text: "plain "}, {Text: "red", FG: Palette(1), Bold: true}, {Text: " "}, {Text: "rgb", FG: RGB(10, 20, 30), BG: Palette(100)}},
		{{Text: "rev", Reverse: true}, {Text: "u", Underline: true}, {Text: "i", Underline: true, Italic: true}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v\nwant %#v", got, want)
	}
	if StyledText(got) != strings.TrimRight(emu.String(), "\n ") {
		t.Fatalf("styled text %q is not the screen %q", StyledText(got), emu.String())
	}
}

// TestStyledScreenWideCharacters: a wide character is one run character,
// not followed by its placeholder cell.
func TestStyledScreenWideCharacters(t *testing.T) {
	t.Parallel()
	emu := vt.NewEmulator(20, 2)
	emu.Write([]byte("\x1b[32m日本\x1b[0mx ✓")) //nolint:errcheck
	got := styledScreen(emu)
	want := []StyledLine{{{Text: "日本", FG: Palette(2)}, {Text: "x ✓"}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v\nwant %#v", got, want)
	}
	if StyledText(got) != strings.TrimRight(emu.String(), "\n ") {
		t.Fatalf("styled text %q is not the screen %q", StyledText(got), emu.String())
	}
}

func BenchmarkStyledScreen(b *testing.B) {
	emu := vt.NewEmulator(120, 40)
	for i := range 40 {
		fmt.Fprintf(emu, "\x1b[3%dmline %d \x1b[1mbold\x1b[0m plain text to the end of the row %s\r\n", i%8, i, strings.Repeat("x", 40))
	}
	b.ReportAllocs()
	for b.Loop() {
		styledScreen(emu)
	}
}

func TestPTYStyledScreen(t *testing.T) {
	t.Parallel()
	p := startBash(t, nil)
	tok := fmt.Sprintf("tok%d", rand.Int64())
	if err := p.SendText(`printf '\033[32m%s\033[0m\n' `+tok, true); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "green token", func() bool {
		return hasRun(p.StyledScreen(), Run{Text: tok, FG: Palette(2)})
	})
}

func hasRun(lines []StyledLine, want Run) bool {
	for _, l := range lines {
		for _, r := range l {
			if r == want {
				return true
			}
		}
	}
	return false
}

func TestTmuxStyledScreen(t *testing.T) {
	t.Parallel()
	s := tmuxServer(t)
	p, err := s.Start("w-1", bashOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "idle", func() bool { return p.Status().State == Idle })
	tok := fmt.Sprintf("tok%d", rand.Int64())
	cmd := `printf '\033[1;31m%s\033[0m \033[38;5;208m%s\033[0m \033[38;2;1;2;3;44m%s\033[0m\n' R` + tok + ` P` + tok + ` T` + tok
	if err := p.SendText(cmd, true); err != nil {
		t.Fatal(err)
	}
	var got []StyledLine
	eventually(t, 15*time.Second, "coloured runs", func() bool {
		got = p.StyledScreen()
		return hasRun(got, Run{Text: "T" + tok, FG: RGB(1, 2, 3), BG: Palette(4)})
	})
	noControls(t, got)
	for _, want := range []Run{
		{Text: "R" + tok, FG: Palette(1), Bold: true},
		{Text: "P" + tok, FG: Palette(208)},
	} {
		if !hasRun(got, want) {
			t.Errorf("no run %+v in %#v", want, got)
		}
	}
	if plain := p.Screen(); !strings.Contains(StyledText(got), "R"+tok+" P"+tok+" T"+tok) || !strings.Contains(plain, "R"+tok) {
		t.Errorf("text differs: %q vs %q", StyledText(got), plain)
	}
}
