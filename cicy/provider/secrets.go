package provider

import (
	"bytes"
	"errors"
	"regexp"
	"slices"
	"strings"

	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// Credentials are the variables that hold a secret: a provider's key, the
// supervisor's database URL (which may carry a password), PostgreSQL
// password and cluster secret. This list is the one place that says which
// variables a tool, a shell pane or the private tmux server must never be
// given, and whose values are scrubbed from error and log text.
var Credentials = []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
	"CICY_DB", "PGPASSWORD", "CICY_CLUSTER_TOKEN"}

// ProviderKeys are the Credentials that are a model provider's key.
var ProviderKeys = Credentials[:5]

// IsCredential reports whether name is one of Credentials.
func IsCredential(name string) bool { return slices.Contains(Credentials, name) }

// WithoutCredentials returns env (NAME=VALUE entries) without the
// credential variables.
func WithoutCredentials(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !IsCredential(name) {
			out = append(out, kv)
		}
	}
	return out
}

// redacted replaces a credential in scrubbed text.
const redacted = "[redacted]"

// minSecret is the shortest value treated as a secret: replacing a
// one-letter "key" would mangle every message.
const minSecret = 6

// Scrubber removes the credential values a process holds from text, and
// the secrets its patterns describe.
type Scrubber struct {
	secrets  []string
	patterns []Pattern
}

// Pattern describes secrets made by a program (the gateway's pane tokens):
// every match of Re in a text that holds Prefix is replaced.
type Pattern struct {
	Prefix string
	Re     *regexp.Regexp
}

// NewScrubber reads the credential variables with getenv; patterns add
// secrets that have a recognisable shape.
func NewScrubber(getenv func(string) string, patterns ...Pattern) *Scrubber {
	s := &Scrubber{patterns: patterns}
	for _, name := range Credentials {
		if v := strings.TrimSpace(getenv(name)); len(v) >= minSecret && !slices.Contains(s.secrets, v) {
			s.secrets = append(s.secrets, v)
		}
	}
	// The longest first, so a key that contains another is replaced whole.
	slices.SortFunc(s.secrets, func(a, b string) int { return len(b) - len(a) })
	return s
}

// With returns a scrubber that also removes the given secrets (one that
// was read from a file, not the environment).
func (s *Scrubber) With(secrets ...string) *Scrubber {
	out := &Scrubber{secrets: slices.Clone(s.secrets), patterns: s.patterns}
	for _, v := range secrets {
		if v = strings.TrimSpace(v); len(v) >= minSecret && !slices.Contains(out.secrets, v) {
			out.secrets = append(out.secrets, v)
		}
	}
	slices.SortFunc(out.secrets, func(a, b string) int { return len(b) - len(a) })
	return out
}

// String returns text with every credential replaced by [redacted].
func (s *Scrubber) String(text string) string {
	if s == nil {
		return text
	}
	for _, v := range s.secrets {
		text = strings.ReplaceAll(text, v, redacted)
	}
	for _, p := range s.patterns {
		if strings.Contains(text, p.Prefix) {
			text = p.Re.ReplaceAllLiteralString(text, redacted)
		}
	}
	return text
}

// Bytes is String for a byte slice; b is returned as is when it holds no
// credential.
func (s *Scrubber) Bytes(b []byte) []byte {
	if s == nil {
		return b
	}
	for _, v := range s.secrets {
		if bytes.Contains(b, []byte(v)) {
			b = bytes.ReplaceAll(b, []byte(v), []byte(redacted))
		}
	}
	for _, p := range s.patterns {
		if bytes.Contains(b, []byte(p.Prefix)) {
			b = p.Re.ReplaceAllLiteral(b, []byte(redacted))
		}
	}
	return b
}

// Error returns err with the credentials removed from its text: an
// APIError is cleaned in place (callers test for it with errors.As); any
// other error holding a credential becomes a plain error with the cleaned
// text.
func (s *Scrubber) Error(err error) error {
	if err == nil || s == nil || len(s.secrets)+len(s.patterns) == 0 {
		return err
	}
	var ae *wire.APIError
	if errors.As(err, &ae) {
		ae.Message, ae.Type = s.String(ae.Message), s.String(ae.Type)
	}
	if text := err.Error(); s.String(text) != text {
		return scrubbedError{text: s.String(text), err: err}
	}
	return err
}

// scrubbedError keeps the wrapped error for errors.Is/As (a context
// cancel, an APIError) while showing only the cleaned text.
type scrubbedError struct {
	text string
	err  error
}

func (e scrubbedError) Error() string { return e.text }
func (e scrubbedError) Unwrap() error { return e.err }
