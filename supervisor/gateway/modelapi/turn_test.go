package modelapi

import (
	"slices"
	"strings"
	"testing"
)

func TestPieces(t *testing.T) {
	for _, s := range []string{"", "a", "héllo wörld", strings.Repeat("ü", 10)} {
		p := pieces(s, 3)
		if strings.Join(p, "") != s || len(p) > 3 || len(p) == 0 {
			t.Errorf("pieces(%q) = %q", s, p)
		}
	}
	if got := pieces("abcdefg", 3); !slices.Equal(got, []string{"abc", "def", "g"}) {
		t.Errorf("pieces = %q", got)
	}
}
