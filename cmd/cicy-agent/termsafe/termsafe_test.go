package termsafe

import (
	"bytes"
	"testing"
)

func TestSafeWriter(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, in, want string }{
		{"plain", "hello, wörld\n\tok\n", "hello, wörld\n\tok\n"},
		{"osc52 bel", "a\x1b]52;c;aGk=\x07b\n", "ab\n"},
		{"osc0 st", "a\x1b]0;owned\x1b\\b\n", "ab\n"},
		{"csi colour", "\x1b[31mred\x1b[0m\n", "red\n"},
		{"csi clear", "x\x1b[2J\x1b[H\n", "x\n"},
		{"reset", "a\x1bcb\n", "ab\n"},
		{"charset", "a\x1b(Bb\n", "ab\n"},
		{"dcs", "a\x1bPq#0;2;0;0;0\x1b\\b\n", "ab\n"},
		{"c1 csi", "a\u009b31mb\n", "ab\n"},
		{"c1 osc", "a\u009d52;c;aGk=\u009cb\n", "ab\n"},
		{"c1 other", "a\u0085b\n", "ab\n"},
		{"bell and backspace", "a\x07b\x08c\n", "a^Gb^Hc\n"},
		{"del", "a\x7fb", "a^?b"},
		{"crlf", "one\r\ntwo\r\n", "one\ntwo\n"},
		{"lone cr", "secret\rcover\n", "secret^Mcover\n"},
		{"cr at end", "x\r", "x^M"},
		{"invalid utf8", "a\xffb\xc2", "a\ufffdb\ufffd"},
		{"unterminated osc ends at the line", "a\x1b]0;title\nb\n", "a\nb\n"},
		{"can aborts", "a\x1b]0;x\x18b", "ab"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// Whole, and one byte at a time (a sequence split between writes).
			for _, split := range []bool{false, true} {
				var b bytes.Buffer
				w := NewWriter(&b)
				if split {
					for i := 0; i < len(c.in); i++ {
						w.Write([]byte{c.in[i]})
					}
				} else {
					w.Write([]byte(c.in))
				}
				if err := w.Flush(); err != nil {
					t.Fatal(err)
				}
				if b.String() != c.want {
					t.Errorf("split=%v: %q gave %q, want %q", split, c.in, b.String(), c.want)
				}
			}
			if got := Text(c.in); got != c.want {
				t.Errorf("Text(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestJSON(t *testing.T) {
	t.Parallel()
	in := []byte(`{"r":"a` + "\u009b\u0085é" + `"}`)
	if got, want := string(JSON(in)), `{"r":"a\u009b\u0085é"}`; got != want {
		t.Fatalf("JSON(%q) = %q, want %q", in, got, want)
	}
	if plain := []byte(`{"r":"é"}`); string(JSON(plain)) != string(plain) {
		t.Fatalf("JSON changed %q", plain)
	}
}
