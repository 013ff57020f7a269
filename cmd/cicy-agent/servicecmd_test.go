package main

import (
	"slices"
	"testing"
)

// TestServedEnv: the variables a service's supervisor would miss are
// the provider keys and serve's flags' variables, but not the home, which
// the unit sets.
func TestServedEnv(t *testing.T) {
	t.Parallel()
	names := (&env{}).servedEnv()
	for _, want := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "CICY_NODE"} {
		if !slices.Contains(names, want) {
			t.Errorf("servedEnv() = %q, leaves out %s", names, want)
		}
	}
	if slices.Contains(names, "CICY_HOME") {
		t.Errorf("servedEnv() = %q, holds CICY_HOME", names)
	}
}
