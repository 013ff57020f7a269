package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strconv"
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

// Upstreams are the variables that name the real model upstreams. Their
// URLs may carry a password (https://user:password@proxy/), and they lead
// past the gateway: a tool, a shell pane and a CLI agent are not given
// them (a CLI agent gets the gateway's instead), and the password in one
// is scrubbed like a credential.
var Upstreams = []string{"ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "GOOGLE_GEMINI_BASE_URL"}

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

// ForTools returns env (NAME=VALUE entries) without the credentials and
// the upstream URLs: the environment of a command whose output a model
// or a person reads.
func ForTools(env []string) []string {
	return slices.DeleteFunc(WithoutCredentials(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(Upstreams, name)
	})
}

// redacted replaces a credential in scrubbed text.
const redacted = "[redacted]"

// minSecret is the shortest value treated as a secret: replacing a
// one-letter "key" would mangle every message.
const minSecret = 6

// Scrubber removes the credential values a process holds from text, and
// the secrets its patterns describe.
//
// A secret is found as it is written and as JSON and Go quoting write it
// (a key holding < is \u003c in an API answer, a quote is \" in a log
// line), and across line breaks — a newline, or \n inside a quoted string,
// with the blanks that start the next line — so that a key a terminal
// wrapped at its width is found whole. Such a key is replaced where it
// starts and its rest removed, the line breaks kept: a screen keeps its
// rows.
type Scrubber struct {
	secrets  []string // the values
	forms    []string // the values as text may hold them, longest first
	patterns []Pattern
}

// Pattern describes secrets made by a program (the gateway's pane tokens):
// every match of Re in a text that holds Prefix is replaced.
type Pattern struct {
	Prefix string
	Re     *regexp.Regexp
}

// NewScrubber reads the credential variables with getenv, and the
// password of the upstream URLs (and the database's); patterns add
// secrets that have a recognisable shape.
func NewScrubber(getenv func(string) string, patterns ...Pattern) *Scrubber {
	var secrets []string
	for _, name := range Credentials {
		secrets = append(secrets, getenv(name))
	}
	for _, name := range append(slices.Clone(Upstreams), "CICY_DB") {
		secrets = append(secrets, URLPasswords(getenv(name))...)
	}
	return (&Scrubber{patterns: patterns}).With(secrets...)
}

// URLPasswords returns the password of a URL's userinfo
// (scheme://user:password@host), as written and decoded; when the
// userinfo has no password, its user name, which then is the token
// (https://TOKEN@host).
func URLPasswords(raw string) []string {
	raw = strings.TrimSpace(raw)
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return nil
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return nil
	}
	info := rest[:at]
	user, pass, hasPass := strings.Cut(info, ":")
	secret := pass
	if !hasPass {
		secret = user
	}
	if secret == "" {
		return nil
	}
	out := []string{secret}
	if dec, err := url.PathUnescape(secret); err == nil && dec != secret {
		out = append(out, dec)
	}
	return out
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
	for _, v := range out.secrets {
		for _, f := range quotedForms(v) {
			if !slices.Contains(out.forms, f) {
				out.forms = append(out.forms, f)
			}
		}
	}
	// The longest first, so a key that contains another is replaced whole.
	slices.SortStableFunc(out.forms, func(a, b string) int { return len(b) - len(a) })
	return out
}

// quotedForms are v as written, as JSON writes it inside a string (with
// and without HTML escaping: Go's encoder writes < as \u003c) and as Go's
// %q does (logrus quotes a field so).
func quotedForms(v string) []string {
	forms := []string{v}
	add := func(q string) {
		if len(q) >= 2 {
			if q = q[1 : len(q)-1]; !slices.Contains(forms, q) {
				forms = append(forms, q)
			}
		}
	}
	b, _ := json.Marshal(v)
	add(string(b))
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	add(strings.TrimSuffix(buf.String(), "\n"))
	add(strconv.Quote(v))
	return forms
}

// String returns text with every credential replaced by [redacted].
func (s *Scrubber) String(text string) string {
	if s == nil || len(s.forms)+len(s.patterns) == 0 {
		return text
	}
	return s.scrub(text)
}

// Bytes is String for a byte slice; b is returned as is when it holds no
// credential.
func (s *Scrubber) Bytes(b []byte) []byte {
	if s == nil || len(s.forms)+len(s.patterns) == 0 {
		return b
	}
	text := string(b)
	if out := s.scrub(text); out != text {
		return []byte(out)
	}
	return b
}

// lineBreak is a line break in a text: at its offset, n bytes long (the
// break and the blanks after it), before the byte at j of the joined text.
type lineBreak struct{ at, n, j int }

// joinLines returns text without its line breaks, and where they were. A
// break is \n or \r\n, or, as a quoted string writes them, the two
// characters \n or the four \r\n (an escaped backslash is not the start
// of one); the blanks that follow a break belong to it.
func joinLines(text string) (string, []lineBreak) {
	if !strings.ContainsAny(text, "\n\\") {
		return text, nil
	}
	var b strings.Builder
	var breaks []lineBreak
	last := 0
	for i := 0; i < len(text); {
		n := 0
		switch c := text[i]; {
		case c == '\n':
			n = 1
		case c == '\r' && strings.HasPrefix(text[i+1:], "\n"):
			n = 2
		case c == '\\' && strings.HasPrefix(text[i+1:], "n"):
			n = 2
		case c == '\\' && strings.HasPrefix(text[i+1:], `r\n`):
			n = 4
		case c == '\\':
			i += 2 // an escape pair: \\ is no break
			continue
		}
		if n == 0 {
			i++
			continue
		}
		end := i + n
		for end < len(text) && (text[end] == ' ' || text[end] == '\t') {
			end++
		}
		if breaks == nil {
			b.Grow(len(text))
		}
		b.WriteString(text[last:i])
		breaks = append(breaks, lineBreak{at: i, n: end - i, j: b.Len()})
		last, i = end, end
	}
	if breaks == nil {
		return text, nil
	}
	b.WriteString(text[last:])
	return b.String(), breaks
}

// scrub replaces every secret in text, whole or across line breaks.
func (s *Scrubber) scrub(text string) string {
	for _, f := range s.forms {
		if strings.Contains(text, f) {
			text = strings.ReplaceAll(text, f, redacted)
		}
	}
	for _, p := range s.patterns {
		if strings.Contains(text, p.Prefix) {
			text = p.Re.ReplaceAllLiteralString(text, redacted)
		}
	}
	return s.acrossBreaks(text)
}

// acrossBreaks replaces the secrets that line breaks split.
func (s *Scrubber) acrossBreaks(text string) string {
	joined, breaks := joinLines(text)
	if len(breaks) == 0 {
		return text
	}
	var spans [][2]int // in joined
	for _, f := range s.forms {
		for off := 0; off < len(joined); {
			i := strings.Index(joined[off:], f)
			if i < 0 {
				break
			}
			spans = append(spans, [2]int{off + i, off + i + len(f)})
			off += i + len(f)
		}
	}
	for _, p := range s.patterns {
		if strings.Contains(joined, p.Prefix) {
			for _, m := range p.Re.FindAllStringIndex(joined, -1) {
				spans = append(spans, [2]int{m[0], m[1]})
			}
		}
	}
	if len(spans) == 0 {
		return text
	}
	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	merged := spans[:1]
	for _, sp := range spans[1:] {
		if last := &merged[len(merged)-1]; sp[0] < last[1] {
			last[1] = max(last[1], sp[1])
		} else {
			merged = append(merged, sp)
		}
	}
	// orig maps a byte of joined to its offset in text.
	bi, shift := 0, 0
	orig := func(j int) int {
		for bi < len(breaks) && breaks[bi].j <= j {
			shift += breaks[bi].n
			bi++
		}
		return j + shift
	}
	var out strings.Builder
	out.Grow(len(text))
	prev := 0
	for _, sp := range merged {
		start := orig(sp[0])
		first := bi // the breaks after the secret's first byte
		end := orig(sp[1]-1) + 1
		out.WriteString(text[prev:start])
		out.WriteString(redacted)
		for _, br := range breaks[first:bi] {
			out.WriteString(text[br.at : br.at+br.n])
		}
		prev = end
	}
	out.WriteString(text[prev:])
	return out.String()
}

// Error returns err with the credentials removed from its text: an
// APIError is cleaned in place (callers test for it with errors.As); any
// other error holding a credential becomes a plain error with the cleaned
// text.
func (s *Scrubber) Error(err error) error {
	if err == nil || s == nil || len(s.forms)+len(s.patterns) == 0 {
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
