package tools

import (
	"strings"
	"testing"
)

// TestShellGetsNoProviderCredentials: the model reads what a command
// prints, so the command never has the provider keys; the rest of the
// environment is there.
func TestShellGetsNoProviderCredentials(t *testing.T) {
	isolateHome(t)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-tool-leak-1")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "tool-leak-token-2")
	t.Setenv("OPENAI_API_KEY", "sk-tool-leak-3")
	t.Setenv("CICY_TOOL_TEST_VAR", "kept")
	out, isErr := runCmd(t, t.TempDir(), "env; cat /proc/$$/environ | tr '\\0' '\\n'")
	if isErr {
		t.Fatalf("env failed: %s", out)
	}
	if strings.Contains(out, "leak") {
		t.Fatalf("the command has a provider credential:\n%s", out)
	}
	if !strings.Contains(out, "CICY_TOOL_TEST_VAR=kept") {
		t.Fatalf("the command lost the rest of the environment:\n%s", out)
	}
}

// TestShellGetsNoUpstreamURLs: nor does it have the supervisor's upstream
// URLs (one may carry a password; they lead past the gateway).
func TestShellGetsNoUpstreamURLs(t *testing.T) {
	isolateHome(t)
	t.Setenv("OPENAI_BASE_URL", "https://me:url-leak-1@proxy.invalid/v1")
	t.Setenv("ANTHROPIC_BASE_URL", "https://proxy.invalid/url-leak-2")
	t.Setenv("GOOGLE_GEMINI_BASE_URL", "https://proxy.invalid/url-leak-3")
	out, isErr := runCmd(t, t.TempDir(), "env; cat /proc/$$/environ | tr '\\0' '\\n'")
	if isErr || strings.Contains(out, "url-leak") || !strings.Contains(out, "PATH=") {
		t.Fatalf("the command's environment:\n%s", out)
	}
}
