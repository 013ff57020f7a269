package web

import (
	"os"
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/api"
)

// TestPaletteIndex: palette colours are kept, a 24-bit colour is the
// nearest of palette colours 16 to 255.
func TestPaletteIndex(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{
		"": -1, "0": 0, "15": 15, "208": 208, "256": -1, "x": -1, "#zz0000": -1, "#fff": -1,
		"#ff8000": 208, "#000000": 16, "#ffffff": 231, "#808080": 244, "#0000ff": 21, "#5f87af": 67,
	} {
		if got := paletteIndex(in); got != want {
			t.Errorf("paletteIndex(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestRunClass(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		run  api.StyledRun
		want string
	}{
		{api.StyledRun{Text: "x"}, ""},
		{api.StyledRun{FG: "1", Bold: true}, "fg-1 bo"},
		{api.StyledRun{FG: "#ff8000", BG: "4", Reverse: true}, "fg-4 bg-208"},
		{api.StyledRun{Reverse: true}, "rf rb"},
		{api.StyledRun{FG: "2", Reverse: true, Italic: true, Underline: true}, "rf bg-2 it ul"},
	} {
		if got := runClass(c.run); got != c.want {
			t.Errorf("runClass(%+v) = %q, want %q", c.run, got, c.want)
		}
	}
}

// TestPaletteCSSInPageCSS: page.css holds the palette's classes as
// paletteCSS makes them (regenerate them with paletteCSS when it changes).
func TestPaletteCSSInPageCSS(t *testing.T) {
	t.Parallel()
	css, err := os.ReadFile("assets/static/page.css")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(css), paletteCSS()) {
		t.Fatal("page.css lacks the palette's classes as paletteCSS makes them")
	}
	for _, cls := range []string{"pre.screen .bo", "pre.screen .it", "pre.screen .ul", "pre.screen .rf", "pre.screen .rb", ".fg-208{color:#ff8700}", ".bg-4{background:#0000ee}"} {
		if !strings.Contains(string(css), cls) {
			t.Errorf("page.css lacks %q", cls)
		}
	}
}

// TestPanePageScreenKeepsColours: the pane page's screen is its styled
// runs as spans with classes, their text escaped: a script in a coloured
// run is shown as text.
func TestPanePageScreenKeepsColours(t *testing.T) {
	t.Parallel()
	checkScreenColours(t, "/pane/w-2", `<pre id="screen"`)
	checkScreenColours(t, "/", `<pre class="screen" data-test="need-screen"`) // under needs you
}

// checkScreenColours: the screen on page, from its start tag, is the
// fake API's styled screen as spans of classes, its text escaped.
func checkScreenColours(t *testing.T, page, start string) {
	t.Helper()
	_, _, body := get(t, serve(t), page)
	i := strings.Index(body, start)
	if i < 0 {
		t.Fatalf("no screen:\n%s", body)
	}
	pre := body[i:]
	pre = pre[strings.Index(pre, ">")+1 : strings.Index(pre, "</pre>")]
	want := `<span class="fg-1 bo">Run this command?</span>
<span class="fg-4 bg-208">&lt;script&gt;alert(1)&lt;/script&gt;</span> after

<span class="it ul">❯ 1. Yes</span><span class="rf rb"> rev</span>`
	if pre != want {
		t.Fatalf("%s: the screen is\n%s\nwant\n%s", page, pre, want)
	}
}
