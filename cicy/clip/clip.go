// Package clip shortens text, always on a rune boundary and marking the
// cut with "…". A budget is counted one of two ways: in bytes where a
// size limit holds (what is stored or sent to a model), in runes where
// text goes on a screen (a table cell).
package clip

import "unicode/utf8"

const ellipsis = "…"

// Bytes returns s, or when s is longer than n bytes, its start cut on a
// rune boundary and ending in "…", at most n bytes in all.
func Bytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := max(n-len(ellipsis), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// Runes returns s, or when s has more than n runes, its first n-1 runes
// and "…", n runes in all.
func Runes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:max(n-1, 0)]) + ellipsis
}
