package pane

import (
	"fmt"
	"image/color"
	"strconv"
	"strings"
	"unicode/utf8"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"
)

// ColorKind says what a Color holds.
type ColorKind uint8

// The kinds of Color.
const (
	ColorDefault ColorKind = iota // the terminal's own foreground or background
	ColorPalette                  // an index in the 256-colour palette
	ColorRGB                      // a 24-bit colour
)

// Color is a cell's foreground or background colour.
type Color struct {
	Kind ColorKind
	// Index is the palette index (ColorPalette).
	Index uint8
	// R, G, B are the colour's parts (ColorRGB).
	R, G, B uint8
}

// String is the colour as the screen API spells it: "" the default, "0"
// to "255" a palette index, "#rrggbb" a 24-bit colour.
func (c Color) String() string {
	switch c.Kind {
	case ColorPalette:
		return strconv.Itoa(int(c.Index))
	case ColorRGB:
		return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B)
	default:
		return ""
	}
}

// Palette is a palette colour.
func Palette(i uint8) Color { return Color{Kind: ColorPalette, Index: i} }

// RGB is a 24-bit colour.
func RGB(r, g, b uint8) Color { return Color{Kind: ColorRGB, R: r, G: g, B: b} }

// Run is text of one style on a screen line. Its text never holds an
// escape sequence nor any other control character.
type Run struct {
	Text      string
	FG, BG    Color
	Bold      bool
	Italic    bool
	Underline bool
	Reverse   bool
}

// sameStyle reports whether two runs look alike.
func (r Run) sameStyle(o Run) bool {
	return r.FG == o.FG && r.BG == o.BG && r.Bold == o.Bold && r.Italic == o.Italic &&
		r.Underline == o.Underline && r.Reverse == o.Reverse
}

// StyledLine is one screen line: its runs, left to right.
type StyledLine []Run

// Text is the line's text without its styles.
func (l StyledLine) Text() string {
	var b strings.Builder
	for _, r := range l {
		b.WriteString(r.Text)
	}
	return b.String()
}

// StyledText is the screen's text: its lines' texts, one per line.
func StyledText(lines []StyledLine) string {
	s := make([]string, len(lines))
	for i, l := range lines {
		s[i] = l.Text()
	}
	return strings.Join(s, "\n")
}

// lineBuilder gathers a line's runs, joining text of one style.
type lineBuilder struct {
	line StyledLine
	text strings.Builder
	pen  Run
}

func (b *lineBuilder) write(s string, pen Run) {
	if s == "" {
		return
	}
	if b.text.Len() > 0 && !b.pen.sameStyle(pen) {
		b.cut()
	}
	b.pen = pen
	b.text.WriteString(s)
}

func (b *lineBuilder) cut() {
	if b.text.Len() == 0 {
		return
	}
	r := b.pen
	r.Text = b.text.String()
	b.line = append(b.line, r)
	b.text.Reset()
}

// done returns the line, its trailing spaces of no background dropped (as
// the plain screen drops them).
func (b *lineBuilder) done() StyledLine {
	b.cut()
	l := b.line
	b.line = nil
	for len(l) > 0 {
		last := &l[len(l)-1]
		if last.BG.Kind != ColorDefault || last.Reverse {
			break
		}
		last.Text = strings.TrimRight(last.Text, " ")
		if last.Text != "" {
			break
		}
		l = l[:len(l)-1]
	}
	return l
}

// trimLines drops the blank lines at the end of a screen.
func trimLines(lines []StyledLine) []StyledLine {
	for len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// ParseStyled reads text holding SGR colour sequences (what `tmux
// capture-pane -e` prints) into styled lines. Every other escape sequence
// and control character is dropped; a tab is kept as a space.
func ParseStyled(s string) []StyledLine {
	var (
		lines []StyledLine
		b     lineBuilder
		pen   Run
	)
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n':
			lines = append(lines, b.done())
			i++
		case c == ansi.ESC:
			n, final, params := escapeAt(s[i:])
			if final == 'm' {
				applySGR(&pen, params)
			}
			i += n
		case c == '\t':
			b.write(" ", pen)
			i++
		case c < 0x20 || c == 0x7f:
			i++
		case c < utf8.RuneSelf:
			j := i + 1
			for j < len(s) && s[j] >= 0x20 && s[j] < 0x7f {
				j++
			}
			b.write(s[i:j], pen)
			i = j
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			i += n
			if r == utf8.RuneError && n <= 1 || r >= 0x80 && r < 0xa0 {
				continue // not UTF-8, or a C1 control
			}
			b.write(string(r), pen)
		}
	}
	lines = append(lines, b.done())
	return trimLines(lines)
}

// escapeAt measures the escape sequence at the head of s (which starts
// with ESC): its length and, for a CSI sequence with plain parameters,
// its final byte and parameters.
func escapeAt(s string) (n int, final byte, params string) {
	if len(s) < 2 {
		return len(s), 0, ""
	}
	switch s[1] {
	case '[': // CSI: parameters, intermediates, a final byte
		j := 2
		for j < len(s) && s[j] >= 0x30 && s[j] <= 0x3f {
			j++
		}
		k := j
		for k < len(s) && s[k] >= 0x20 && s[k] <= 0x2f {
			k++
		}
		if k >= len(s) {
			return len(s), 0, ""
		}
		if s[k] < 0x40 || s[k] > 0x7e {
			return k, 0, "" // broken: drop what was read
		}
		if k > j || strings.ContainsAny(s[2:j], "<=>?") {
			return k + 1, 0, "" // a private or intermediate form: not SGR
		}
		return k + 1, s[k], s[2:j]
	case ']', 'P', '_', '^', 'X': // strings: up to BEL or ST
		for j := 2; j < len(s); j++ {
			if s[j] == 0x07 {
				return j + 1, 0, ""
			}
			if s[j] == ansi.ESC && j+1 < len(s) && s[j+1] == '\\' {
				return j + 2, 0, ""
			}
		}
		return len(s), 0, ""
	default: // ESC, intermediates, a final byte
		j := 1
		for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2f {
			j++
		}
		if j < len(s) {
			j++
		}
		return j, 0, ""
	}
}

// applySGR changes the pen as an SGR sequence's parameters say.
func applySGR(pen *Run, params string) {
	if params == "" {
		*pen = Run{}
		return
	}
	ps := strings.Split(params, ";")
	for i := 0; i < len(ps); i++ {
		p := ps[i]
		if strings.Contains(p, ":") { // 38:2::r:g:b, 4:3 and the like
			applyColon(pen, strings.Split(p, ":"))
			continue
		}
		n := atoi(p)
		if flag := sgrFlag(pen, n); flag != nil {
			*flag = n < 20 // 1, 3, 4 and 7 turn it on, 22, 23, 24 and 27 off
			continue
		}
		switch {
		case n == 0:
			*pen = Run{}
		case n >= 30 && n <= 37:
			pen.FG = Palette(uint8(n - 30))
		case n >= 90 && n <= 97:
			pen.FG = Palette(uint8(n - 90 + 8))
		case n >= 40 && n <= 47:
			pen.BG = Palette(uint8(n - 40))
		case n >= 100 && n <= 107:
			pen.BG = Palette(uint8(n - 100 + 8))
		case n == 39:
			pen.FG = Color{}
		case n == 49:
			pen.BG = Color{}
		case n == 38 || n == 48 || n == 58:
			c, used, ok := extColor(ps[i+1:])
			i += used
			if ok && n == 38 {
				pen.FG = c
			} else if ok && n == 48 {
				pen.BG = c
			}
		}
	}
}

// sgrFlag is the attribute of the pen an SGR code turns on or off (bold,
// italic, underline, reverse), or nil.
func sgrFlag(pen *Run, n int) *bool {
	switch n {
	case 1, 22:
		return &pen.Bold
	case 3, 23:
		return &pen.Italic
	case 4, 24:
		return &pen.Underline
	case 7, 27:
		return &pen.Reverse
	}
	return nil
}

// extColor reads the colour after 38, 48 or 58 in ;-form: 5;n or 2;r;g;b.
// It returns how many parameters it used.
func extColor(ps []string) (c Color, used int, ok bool) {
	if len(ps) == 0 {
		return Color{}, 0, false
	}
	switch atoi(ps[0]) {
	case 5:
		if len(ps) < 2 {
			return Color{}, len(ps), false
		}
		n := atoi(ps[1])
		return Palette(uint8(n)), 2, n >= 0 && n <= 255
	case 2:
		if len(ps) < 4 {
			return Color{}, len(ps), false
		}
		r, g, b := atoi(ps[1]), atoi(ps[2]), atoi(ps[3])
		return RGB(uint8(r), uint8(g), uint8(b)), 4, inByte(r, g, b)
	default:
		return Color{}, 1, false
	}
}

// applyColon applies one :-form parameter: 38:5:n, 38:2:[cs]:r:g:b, 4:n.
func applyColon(pen *Run, sub []string) {
	switch atoi(sub[0]) {
	case 4:
		pen.Underline = len(sub) < 2 || atoi(sub[1]) != 0
	case 38, 48:
		rest := sub[1:]
		if len(rest) >= 5 && atoi(rest[0]) == 2 { // with a colour space id
			rest = append([]string{"2"}, rest[2:]...)
		}
		c, _, ok := extColor(rest)
		if !ok {
			return
		}
		if atoi(sub[0]) == 38 {
			pen.FG = c
		} else {
			pen.BG = c
		}
	}
}

func inByte(v ...int) bool {
	for _, n := range v {
		if n < 0 || n > 255 {
			return false
		}
	}
	return true
}

// atoi reads a parameter; an empty one is 0, a bad one -1.
func atoi(s string) int {
	if s == "" {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > 1<<16 {
		return -1
	}
	return n
}

// cellColor is an emulator cell's colour as a Color.
func cellColor(c color.Color) Color {
	switch c := c.(type) {
	case nil:
		return Color{}
	case ansi.BasicColor:
		return Palette(uint8(c))
	case ansi.IndexedColor:
		return Palette(uint8(c))
	default:
		r, g, b, _ := c.RGBA()
		return RGB(uint8(r>>8), uint8(g>>8), uint8(b>>8))
	}
}

// styledScreen reads the emulator's visible cells into styled lines.
func styledScreen(emu *vt.Emulator) []StyledLine {
	w, h := emu.Width(), emu.Height()
	lines := make([]StyledLine, 0, h)
	var b lineBuilder
	for y := range h {
		for x := 0; x < w; x++ {
			c := emu.CellAt(x, y)
			if c == nil {
				continue
			}
			if c.Width == 0 && c.Content == "" {
				continue // the tail of a wide character
			}
			text := c.Content
			if text == "" {
				text = " "
			}
			b.write(cleanText(text), cellRun(&c.Style))
		}
		lines = append(lines, b.done())
	}
	return trimLines(lines)
}

func cellRun(s *uv.Style) Run {
	return Run{
		FG:        cellColor(s.Fg),
		BG:        cellColor(s.Bg),
		Bold:      s.Attrs&uv.AttrBold != 0,
		Italic:    s.Attrs&uv.AttrItalic != 0,
		Underline: s.Underline != uv.UnderlineNone,
		Reverse:   s.Attrs&uv.AttrReverse != 0,
	}
}

// cleanText drops control characters from a cell's content.
func cleanText(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r >= 0x7f && r < 0xa0 {
			return -1
		}
		return r
	}, s)
}
