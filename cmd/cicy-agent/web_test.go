package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cicy-ai/cicy-agent/api"
)

// TestWebQR: the QR code is drawn two module rows a line, light modules
// as blocks, with a two-module quiet zone: the first line is all light,
// the second crosses the top of the finder patterns (dark above and
// below on their edges, dark above light inside).
func TestWebQR(t *testing.T) {
	t.Parallel()
	s, err := qrText("https://192.168.1.5:8443/login?t=0123456789abcdefghijklmnopqrstuvwxyzABCDEFG")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	width := utf8.RuneCountInString(lines[0])
	if width < 25+4 || len(lines) != (width+1)/2 {
		t.Fatalf("%d lines of %d: not a square code", len(lines), width)
	}
	for i, l := range lines {
		if utf8.RuneCountInString(l) != width {
			t.Fatalf("line %d is %d wide, not %d", i, utf8.RuneCountInString(l), width)
		}
	}
	if strings.Trim(lines[0], "█") != "" {
		t.Fatalf("quiet zone: %q", lines[0])
	}
	if !strings.HasPrefix(lines[1], "██ ▄▄▄▄▄ ") || !strings.HasSuffix(lines[1], " ▄▄▄▄▄ ██") {
		t.Fatalf("finder patterns' top: %q", lines[1])
	}
}

// TestWebLinkPrint: the link comes first, on a line of its own; the code
// only when asked; the fingerprint when the certificate is the
// supervisor's.
func TestWebLinkPrint(t *testing.T) {
	t.Parallel()
	l := api.WebLink{URL: "https://10.0.0.2:8443/login?t=abc", Fingerprint: "AB:CD", Expires: time.Now().Add(10 * time.Minute)}
	var plain, withQR bytes.Buffer
	if err := printWebLink(&plain, l, false); err != nil {
		t.Fatal(err)
	}
	if err := printWebLink(&withQR, l, true); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(plain.String(), "\n")
	if first != l.URL || strings.Contains(plain.String(), "█") {
		t.Fatalf("without the code: %q", plain.String())
	}
	first, _, _ = strings.Cut(withQR.String(), "\n")
	if first != l.URL || !strings.Contains(withQR.String(), "█") || !strings.Contains(withQR.String(), "fingerprint AB:CD") {
		t.Fatalf("with the code: %q", withQR.String())
	}
}
