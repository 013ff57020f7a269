package agentpane

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
)

// FindCLI looks for an agent's program on the PATH its getenv gives (the
// supervisor's environment as configured, which may not be this
// process's), skipping relative folders, then in the CLI folder; the
// error names the pinned install.
func TestFindCLIReadsItsEnvironment(t *testing.T) {
	t.Parallel()
	k, _ := cliagent.Lookup("claude")
	onPath, cliDir := t.TempDir(), t.TempDir()
	bin := filepath.Join(cliDir, "node_modules", ".bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{onPath, bin} {
		if err := os.WriteFile(filepath.Join(dir, k.Bin), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}

	got, err := FindCLI(k, env(map[string]string{"PATH": "/nonexistent:" + onPath, "CICY_CLI_DIR": cliDir}))
	if err != nil || got != filepath.Join(onPath, k.Bin) {
		t.Errorf("on its PATH: %q, %v; want %q", got, err, filepath.Join(onPath, k.Bin))
	}
	// A relative folder on PATH is not searched (exec.LookPath refuses it).
	rel, err := filepath.Rel(mustGetwd(t), onPath)
	if err != nil {
		t.Fatal(err)
	}
	got, err = FindCLI(k, env(map[string]string{"PATH": rel, "CICY_CLI_DIR": cliDir}))
	if err != nil || got != filepath.Join(bin, k.Bin) {
		t.Errorf("a relative PATH folder, then the CLI folder: %q, %v; want %q", got, err, filepath.Join(bin, k.Bin))
	}
	_, err = FindCLI(k, env(map[string]string{"PATH": "/nonexistent", "CICY_CLI_DIR": t.TempDir()}))
	if err == nil || !strings.Contains(err.Error(), "claude was not found on PATH nor in ") || !strings.Contains(err.Error(), k.Pin()) {
		t.Errorf("nowhere: %v", err)
	}
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}
