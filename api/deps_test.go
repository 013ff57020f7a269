package api_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

const module = "github.com/cicy-ai/cicy-agent"

// TestClientsBuildWithoutTheDaemon: the dashboard depends on the API, not
// on the supervisor; the API itself on none of the daemon (supervisor,
// panes, the cicy runtime, the store); the cicy runtime reports its own
// status and knows nothing of terminal panes.
func TestClientsBuildWithoutTheDaemon(t *testing.T) {
	daemon := []string{module + "/supervisor", module + "/pane", module + "/cicy", module + "/schema"}
	for pkg, banned := range map[string][]string{
		module + "/cmd/cicy-agent/dashboard": {module + "/supervisor"},
		module + "/api":                      daemon,
		module + "/cicy":                     {module + "/pane"},
	} {
		for _, dep := range deps(t, pkg) {
			for _, b := range banned {
				if dep == b || strings.HasPrefix(dep, b+"/") {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
	}
}

// deps is `go list -deps pkg`: pkg and every package it imports, directly
// or not.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list imports: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, goBin, "list", "-deps", pkg).Output()
	if err != nil {
		var stderr string
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr)
	}
	list := strings.Fields(string(out))
	if len(list) == 0 || list[len(list)-1] != pkg {
		t.Fatalf("go list -deps %s listed %q", pkg, list)
	}
	return list
}

// TestProductImportsNoTestHelper: the cicy-agent binary carries none of
// the test helpers: the fake LLM server (cicy/fakellm), the API and
// Postgres test harnesses (cicy/apitest, schema/pgtest), the reaper's
// test double (reaper/reapertest), nor any package named like one (a last
// path element ending in "test" or starting with "test" or "fake", or a
// package under a testdata or testutil folder).
func TestProductImportsNoTestHelper(t *testing.T) {
	const product = module + "/cmd/cicy-agent"
	for _, dep := range deps(t, product) {
		if !strings.HasPrefix(dep, module+"/") {
			continue // the standard library and third-party modules
		}
		if isTestHelper(strings.TrimPrefix(dep, module+"/")) {
			t.Errorf("%s imports the test helper %s", product, dep)
		}
	}
}

// isTestHelper reports whether the module package at path (relative to the
// module) is a test helper by its name or its folder.
func isTestHelper(path string) bool {
	elems := strings.Split(path, "/")
	last := elems[len(elems)-1]
	if strings.HasSuffix(last, "test") || strings.HasPrefix(last, "test") || strings.HasPrefix(last, "fake") {
		return true
	}
	for _, e := range elems {
		if e == "testdata" || e == "testutil" {
			return true
		}
	}
	return false
}

func TestIsTestHelper(t *testing.T) {
	for path, want := range map[string]bool{
		"cicy/fakellm": true, "cicy/apitest": true, "schema/pgtest": true, "reaper/reapertest": true,
		"scripts/testreport": true, "x/testdata/helper": true,
		"supervisor/gateway/modelapi": false, "supervisor/gateway": false, "cicy/provider": false, "reaper": false,
	} {
		if got := isTestHelper(path); got != want {
			t.Errorf("isTestHelper(%q) = %v, want %v", path, got, want)
		}
	}
}
