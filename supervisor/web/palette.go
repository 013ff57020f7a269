package web

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cicy-ai/cicy-agent/api"
)

// A screen's colours are shown with classes only (the page's CSP allows no
// inline style): fg-N and bg-N for the 256-colour palette, a 24-bit colour
// as the palette colour nearest to it; bo, it, ul for bold, italic and
// underline; rf and rb for the default colours swapped by reverse video.
// page.js does the same for the live screen.

// paletteRGB is palette colour i as xterm draws it.
func paletteRGB(i int) (r, g, b int) {
	switch {
	case i < 16:
		c := baseColours[i]
		return c[0], c[1], c[2]
	case i < 232:
		i -= 16
		return cubeLevels[i/36], cubeLevels[i/6%6], cubeLevels[i%6]
	default:
		v := 8 + 10*(i-232)
		return v, v, v
	}
}

var baseColours = [16][3]int{
	{0, 0, 0}, {205, 0, 0}, {0, 205, 0}, {205, 205, 0}, {0, 0, 238}, {205, 0, 205}, {0, 205, 205}, {229, 229, 229},
	{127, 127, 127}, {255, 0, 0}, {0, 255, 0}, {255, 255, 0}, {92, 92, 255}, {255, 0, 255}, {0, 255, 255}, {255, 255, 255},
}

var cubeLevels = [6]int{0, 95, 135, 175, 215, 255}

// paletteIndex is the palette index of an API colour ("" the default: -1;
// "0".."255"; "#rrggbb": the nearest of colours 16 to 255, which do not
// change with the terminal's theme).
func paletteIndex(c string) int {
	if c == "" {
		return -1
	}
	if !strings.HasPrefix(c, "#") {
		n, err := strconv.Atoi(c)
		if err != nil || n < 0 || n > 255 {
			return -1
		}
		return n
	}
	v, err := strconv.ParseUint(c[1:], 16, 32)
	if err != nil || len(c) != 7 {
		return -1
	}
	r, g, b := int(v>>16), int(v>>8&255), int(v&255)
	best, bestD := 16, 1<<30
	for i := 16; i < 256; i++ {
		pr, pg, pb := paletteRGB(i)
		if d := (pr-r)*(pr-r) + (pg-g)*(pg-g) + (pb-b)*(pb-b); d < bestD {
			best, bestD = i, d
		}
	}
	return best
}

// runClass is the class attribute of a run of a screen ("" for a run of
// the default style).
func runClass(r api.StyledRun) string {
	fg, bg := paletteIndex(r.FG), paletteIndex(r.BG)
	var cls []string
	if r.Reverse {
		fg, bg = bg, fg
		if fg < 0 {
			cls = append(cls, "rf")
		}
		if bg < 0 {
			cls = append(cls, "rb")
		}
	}
	if fg >= 0 {
		cls = append(cls, "fg-"+strconv.Itoa(fg))
	}
	if bg >= 0 {
		cls = append(cls, "bg-"+strconv.Itoa(bg))
	}
	for _, a := range []struct {
		on  bool
		cls string
	}{{r.Bold, "bo"}, {r.Italic, "it"}, {r.Underline, "ul"}} {
		if a.on {
			cls = append(cls, a.cls)
		}
	}
	return strings.Join(cls, " ")
}

// paletteCSS is the palette's rules, kept at the end of page.css (a test
// checks they are there).
func paletteCSS() string {
	var b strings.Builder
	b.WriteString("/* the screen palette: generated, see palette.go */\n")
	for _, prop := range []string{"fg-%d{color:#%02x%02x%02x}", "bg-%d{background:#%02x%02x%02x}"} {
		for i := range 256 {
			r, g, bl := paletteRGB(i)
			fmt.Fprintf(&b, "."+prop, i, r, g, bl)
		}
		b.WriteString("\n")
	}
	return b.String()
}
