package clip

import (
	"testing"
	"unicode/utf8"
)

func TestBytes(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijk", 10, "abcdefg…"},
		{"héllo wörld", 8, "héll…"}, // é is 2 bytes: the budget holds 4 of them and the ellipsis
		{"日本語のテキスト", 10, "日本…"},     // never half a rune
		{"abcdef", 2, "…"},
	} {
		got := Bytes(tc.s, tc.n)
		if got != tc.want || !utf8.ValidString(got) || (len(tc.s) > tc.n && len(got) > max(tc.n, len("…"))) {
			t.Errorf("Bytes(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

func TestRunes(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"日本語", 3, "日本語"},
		{"日本語のテキスト", 4, "日本語…"},
		{"abcdef", 1, "…"},
	} {
		if got := Runes(tc.s, tc.n); got != tc.want {
			t.Errorf("Runes(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
