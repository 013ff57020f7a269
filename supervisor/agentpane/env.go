package agentpane

import (
	"slices"
	"strings"

	"github.com/cicy-ai/cicy-agent/cicy/provider"
)

// Env is the environment of a terminal pane's program, a CLI agent's
// (cli) or a shell's: the supervisor's own (environ) less what no pane
// gets, plus the variables of pass the supervisor has (read with getenv),
// the terminal type and where the pane is (see paneEnv).
//
// No pane gets the supervisor's upstream URLs (one may carry a password,
// and they lead past the gateway): a CLI agent reaches its model through
// the gateway only (its seed sets the gateway's URLs); a shell pane gets
// one only when it asks by name (--env). A CLI agent's key is its gateway
// token, not a provider's, and its upstream the gateway: a name of those
// it asked for is not passed (it would come first, and win, in its
// environment). A CLI agent's pane is an interactive terminal, even when
// the supervisor runs in a CI job: Gemini CLI runs headless when it sees
// CI=true or GITHUB_ACTIONS=true, and Ink draws no screen under CI.
func Env(home, id string, cli bool, environ, pass []string, getenv func(string) string) []string {
	if cli {
		pass = slices.DeleteFunc(slices.Clone(pass), func(name string) bool {
			return provider.IsCredential(name) || slices.Contains(provider.Upstreams, name)
		})
	}
	environ = slices.DeleteFunc(slices.Clone(environ), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(provider.Upstreams, name) || cli && ciMarker(name)
	})
	return paneEnv(home, id, environ, pass, getenv)
}

// ciMarker reports whether name is one of the variables programs read to
// tell they run in a CI job (non-interactive, no live screen).
func ciMarker(name string) bool {
	switch name {
	case "CI", "CONTINUOUS_INTEGRATION", "GITHUB_ACTIONS", "BUILD_NUMBER", "RUN_ID":
		return true
	}
	return strings.HasPrefix(name, "CI_")
}

// paneEnv is the environment of a pane's process: the supervisor's own
// (environ) without the provider credentials, plus those of pass the
// supervisor has (read with getenv: asked for with --env, or needed by a
// CLI agent), the terminal type our emulator speaks, and where the pane
// is (the home's root, its id).
func paneEnv(home, id string, environ, pass []string, getenv func(string) string) []string {
	env := []string{}
	for _, kv := range provider.WithoutCredentials(environ) {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "TERM", "CICY_PANE_ID", "CICY_HOME", "TMUX":
			continue
		}
		if slices.Contains(pass, name) {
			continue // set below, once
		}
		env = append(env, kv)
	}
	var given []string
	for _, name := range pass {
		if v := getenv(name); v != "" && !slices.Contains(given, name) {
			env = append(env, name+"="+v)
			given = append(given, name)
		}
	}
	return append(env, "TERM=xterm-256color", "CICY_HOME="+home, "CICY_PANE_ID="+id)
}
