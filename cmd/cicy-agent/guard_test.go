package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestJSONSafe(t *testing.T) {
	t.Parallel()
	v := map[string]string{"result": "a\x1b]52;c;aGk=\x07b\u009b31m\u2028é"}
	var b bytes.Buffer
	if err := printJSON(&b, v); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(b.String(), "\x1b\x07\u009b\u2028") {
		t.Fatalf("control characters unescaped in %q", b.String())
	}
	var back map[string]string
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back["result"] != v["result"] {
		t.Fatalf("round trip: %q, %v", back["result"], err)
	}
}

func TestReportSafe(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if code := report(failf("task 3 failed: \x1b]52;c;aGk=\x07boom\x07"), &b); code != 1 {
		t.Fatalf("exit %d", code)
	}
	if b.String() != "cicy-agent: task 3 failed: boom^G\n" {
		t.Fatalf("got %q", b.String())
	}
}
