package provider_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
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
