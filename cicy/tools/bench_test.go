package tools

import (
	"context"
	"testing"

	"github.com/cicy-ai/cicy-agent/reaper"
)

// BenchmarkShellEcho is one shell call as a cicy pane makes it (`echo
// hi`, its run kept in the pane's set): the reaper's start, bash -l's and
// the output's.
func BenchmarkShellEcho(b *testing.B) {
	b.Setenv("HOME", b.TempDir())
	ws := b.TempDir()
	in := []byte(`{"command":"echo hi"}`)
	var kept reaper.Set
	defer kept.End()
	for b.Loop() {
		if out, isErr := ShellWatched(context.Background(), ws, in, Watch{Keep: &kept}); isErr || out != "hi\n" {
			b.Fatalf("%q %v", out, isErr)
		}
	}
}
