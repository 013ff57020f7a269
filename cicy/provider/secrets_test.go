package provider_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/provider"
	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// echoingUpstream answers every request 401 with the credentials it got in
// the message, as some proxies do.
func echoingUpstream(t *testing.T, plain bool) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("x-api-key") + " " + r.Header.Get("Authorization")
		w.WriteHeader(http.StatusUnauthorized)
		if plain {
			_, _ = w.Write([]byte("<html>invalid key " + got + "</html>"))
			return
		}
		_, _ = w.Write([]byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ` + got + `"}}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestFactoryScrubsEchoedCredentials: whatever provider, an upstream error
// that echoes a key the supervisor holds shows [redacted] instead, and is
// still an APIError (not retried, its status kept).
func TestFactoryScrubsEchoedCredentials(t *testing.T) {
	const key, token, oaKey = "sk-ant-echo-0123456789", "tok-echo-abcdef", "sk-oa-echo-9876543210"
	for _, tc := range []struct {
		name, provider string
		plain          bool
	}{{"anthropic json", "anthropic", false}, {"anthropic text", "anthropic", true}, {"openai json", "openai", false}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := echoingUpstream(t, tc.plain)
			vars := map[string]string{
				"ANTHROPIC_API_KEY": key, "ANTHROPIC_AUTH_TOKEN": token, "ANTHROPIC_BASE_URL": srv.URL,
				"OPENAI_API_KEY": oaKey, "OPENAI_BASE_URL": srv.URL + "/v1",
			}
			f := provider.NewFactory(func(k string) string { return vars[k] })
			p, err := f.New(tc.provider)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err = p.Stream(ctx, &wire.Request{Model: "m", MaxTokens: 10,
				Messages: []wire.Message{{Role: wire.RoleUser, Content: []wire.Block{wire.Text("hi")}}}}, func(wire.Event) {})
			if err == nil {
				t.Fatal("no error from a 401")
			}
			for _, secret := range []string{key, token, oaKey} {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("the error shows a credential: %v", err)
				}
			}
			if !strings.Contains(err.Error(), "[redacted]") {
				t.Fatalf("the error does not say what was removed: %v", err)
			}
			var ae *wire.APIError
			if !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized || strings.Contains(ae.Message, "sk-") {
				t.Fatalf("not a clean APIError 401: %#v", ae)
			}
		})
	}
}

func TestScrubber(t *testing.T) {
	vars := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-longer-key", "OPENAI_API_KEY": "sk-ant-long", "ANTHROPIC_AUTH_TOKEN": "abc"}
	s := provider.NewScrubber(func(k string) string { return vars[k] })
	if got := s.String("a sk-ant-longer-key b sk-ant-long c abc"); got != "a [redacted] b [redacted] c abc" {
		t.Fatalf("String: %q", got)
	}
	if got := string(s.Bytes([]byte("k=sk-ant-long\n"))); got != "k=[redacted]\n" {
		t.Fatalf("Bytes: %q", got)
	}
	wrapped := provider.NewScrubber(func(k string) string { return vars[k] }).Error(errors.Join(context.Canceled, errors.New("sk-ant-long")))
	if strings.Contains(wrapped.Error(), "sk-ant") || !errors.Is(wrapped, context.Canceled) {
		t.Fatalf("Error: %v (is Canceled: %v)", wrapped, errors.Is(wrapped, context.Canceled))
	}
	env := provider.WithoutCredentials([]string{"A=1", "ANTHROPIC_API_KEY=x", "OPENAI_API_KEY=y", "ANTHROPIC_AUTH_TOKEN=z", "ANTHROPIC_BASE_URL=u", "GEMINI_API_KEY=g", "GOOGLE_API_KEY=k"})
	if strings.Join(env, " ") != "A=1 ANTHROPIC_BASE_URL=u" {
		t.Fatalf("WithoutCredentials: %v", env)
	}
}

// TestScrubberAcrossWraps: a key a terminal wrapped at its width (a
// newline, or \n in a JSON answer or a quoted log field, the next row
// maybe indented) is found whole; the rows stay.
func TestScrubberAcrossWraps(t *testing.T) {
	key := "sk-ant-api03-wrapped-key-0123456789"
	token := regexp.MustCompile(`cicy-pane-[0-9a-f]{48}`)
	s := provider.NewScrubber(func(k string) string { return map[string]string{"ANTHROPIC_API_KEY": key}[k] },
		provider.Pattern{Prefix: "cicy-pane-", Re: token})
	tok := "cicy-pane-" + strings.Repeat("ab", 24)
	for _, c := range []struct{ in, want string }{
		{"$ cat k\nxx sk-ant-api03-wr\napped-key-0123456789 yy\n$", "$ cat k\nxx [redacted]\n yy\n$"},
		{"sk-ant-a\npi03-wrap\nped-key-\n0123456789", "[redacted]\n\n\n"},
		{"sk-ant-api03-wrapped\r\n-key-0123456789", "[redacted]\r\n"},
		{"  sk-ant-api03-wrapped\n    -key-0123456789 x", "  [redacted]\n     x"},
		{`{"screen":"a sk-ant-api03-wrapped-key-0123456789\nb"}`, `{"screen":"a [redacted]\nb"}`},
		{`{"screen":"a sk-ant-api03-wrap\nped-key-0123456789\nb"}`, `{"screen":"a [redacted]\n\nb"}`},
		{`msg="sk-ant-api03-w\r\nrapped-key-0123456789"`, `msg="[redacted]\r\n"`},
		{"t " + tok[:30] + "\n" + tok[30:] + " u", "t [redacted]\n u"},
		{`not a break: sk-ant-api03-wrap\\nped-key-0123456789`, `not a break: sk-ant-api03-wrap\\nped-key-0123456789`},
		{"sk-ant-api03\n\nunrelated", "sk-ant-api03\n\nunrelated"},
	} {
		if got := s.String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := string(s.Bytes([]byte(c.in))); got != c.want {
			t.Errorf("Bytes(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestScrubberQuotedForms: a credential holding characters JSON or Go
// quoting escape (<, >, &, ", \) is found as an API answer or a log line
// writes it.
func TestScrubberQuotedForms(t *testing.T) {
	key := `pw<with>&"quote\and-more`
	s := provider.NewScrubber(func(k string) string { return map[string]string{"PGPASSWORD": key}[k] })
	html, _ := json.Marshal(map[string]string{"text": "before " + key + " after"})
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(map[string]string{"text": "before " + key + " after"})
	for _, in := range []string{string(html), buf.String(), strconv.Quote(key), "plain " + key} {
		got := string(s.Bytes([]byte(in)))
		if strings.Contains(got, "with") || !strings.Contains(got, "[redacted]") {
			t.Errorf("%s -> %s", in, got)
		}
		if strings.HasPrefix(in, "{") && !json.Valid([]byte(got)) {
			t.Errorf("%s is no longer JSON: %s", in, got)
		}
	}
	// Wrapped inside a JSON string as well.
	b, _ := json.Marshal(key[:9] + "\n" + key[9:])
	if got := string(s.Bytes(b)); strings.Contains(got, "quote") || !json.Valid([]byte(got)) {
		t.Errorf("wrapped: %s -> %s", b, got)
	}
}

// TestScrubberURLPasswords: the password in an upstream's URL (or the
// database's) is a secret, found wherever the URL or the password shows.
func TestScrubberURLPasswords(t *testing.T) {
	vars := map[string]string{
		"OPENAI_BASE_URL":        "https://me:open%2Fsesame-1@proxy.example/v1",
		"ANTHROPIC_BASE_URL":     "https://tok-only-user-123@gw.example",
		"GOOGLE_GEMINI_BASE_URL": "https://gemini.example", // no userinfo
		"CICY_DB":                "postgres://cicy:db-pass-456@db/cicy",
	}
	s := provider.NewScrubber(func(k string) string { return vars[k] })
	in := "calling https://me:open%2Fsesame-1@proxy.example/v1 (open/sesame-1) via https://tok-only-user-123@gw.example; db-pass-456 at https://gemini.example"
	want := "calling https://me:[redacted]@proxy.example/v1 ([redacted]) via https://[redacted]@gw.example; [redacted] at https://gemini.example"
	if got := s.String(in); got != want {
		t.Fatalf("String:\n got %q\nwant %q", got, want)
	}
	env := provider.ForTools([]string{"A=1", "OPENAI_API_KEY=y", "OPENAI_BASE_URL=u", "ANTHROPIC_BASE_URL=v", "GOOGLE_GEMINI_BASE_URL=w", "B=2"})
	if strings.Join(env, " ") != "A=1 B=2" {
		t.Fatalf("ForTools: %v", env)
	}
}
