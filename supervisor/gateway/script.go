package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/cicy/provider"
	"github.com/cicy-ai/cicy-agent/cicy/wire"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
	"github.com/cicy-ai/cicy-agent/supervisor/gateway/modelapi"
)

// ScriptSource gives the scripted model as it is now: its rules and the
// cache simulator shared by every pane. The supervisor's
// *provider.Factory is one (it reloads CICY_SCRIPT when the file changes).
type ScriptSource interface {
	Script() (*provider.Script, error)
}

// NewScriptTransport is an upstream for [Config.Transport] that answers
// every request from the scripted model (CICY_PROVIDER=script) instead of
// calling one, in the API the request speaks — Anthropic Messages with
// count_tokens, Chat Completions, Responses; streamed or not — with the
// usage the script reports. A rule sees the request in the Messages API's
// shape, X-Cicy-Pane as its pane and the side-call kind the gateway
// recognises (see aux.go) as its aux kind. A
// scripted call of `shell` with {"command", "cwd"} becomes a call of the
// shell tool the request offers (Claude Code's Bash, Codex's exec_command,
// opencode's bash); OpenAI-format requests get an implicit cache
// breakpoint at their end, as OpenAI caches prompts by itself. Scripted
// errors and rules that cannot be loaded are answered in the API's error
// shape.
func NewScriptTransport(src ScriptSource, log *logrus.Entry) http.RoundTripper {
	if log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		log = logrus.NewEntry(l)
	}
	m := &scriptModel{src: src, log: log.WithField("component", "script-upstream")}
	return scriptTransport{modelapi.NewHandler("cicy scripted model", m)}
}

// scriptModel answers from the script rules.
type scriptModel struct {
	src ScriptSource
	log *logrus.Entry
}

// Answer asks the rules for the reply to q.
func (m *scriptModel) Answer(_ context.Context, q *modelapi.Query) (*wire.Response, error) {
	s, err := m.src.Script()
	if err != nil {
		m.log.WithError(err).Warn("the scripted model has no rules")
		return nil, &wire.APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: "cicy scripted model: " + err.Error()}
	}
	req := scriptRequest(q)
	resp, err := s.Rules.Respond(req, s.Sim)
	if err != nil {
		m.log.WithFields(logrus.Fields{"pane": req.PaneID, "aux": req.Aux}).Info("scripted error: " + err.Error())
		return nil, err
	}
	if err := shellCalls(resp, q); err != nil {
		return nil, err
	}
	return resp, nil
}

// CountTokens is the prompt size the scripted model counts.
func (m *scriptModel) CountTokens(q *modelapi.Query) int64 {
	return provider.PromptTokens(scriptRequest(q))
}

// scriptRequest is q's request as the rules see it.
func scriptRequest(q *modelapi.Query) *wire.Request {
	req := q.Request
	req.PaneID, req.Aux = q.Header.Get("X-Cicy-Pane"), q.Header.Get("X-Cicy-Aux")
	if q.API != modelapi.APIAnthropic {
		if n := len(req.Messages); n > 0 {
			if c := req.Messages[n-1].Content; len(c) > 0 {
				c[len(c)-1].CacheControl = wire.Ephemeral()
			}
		}
	}
	return req
}

// shellCalls turns the reply's calls of `shell` into calls of the shell
// tool q offers, in that tool's shape; a "cwd" becomes a cd before the
// command. A request that offers no shell tool keeps the call as it is.
func shellCalls(resp *wire.Response, q *modelapi.Query) error {
	for i, b := range resp.Content {
		if b.Type != wire.TypeToolUse || b.Name != "shell" {
			continue
		}
		var in struct {
			Command     string `json:"command"`
			Cwd         string `json:"cwd"`
			Description string `json:"description"`
		}
		if json.Unmarshal(b.Input, &in) != nil || in.Command == "" {
			continue
		}
		cmd := in.Command
		if in.Cwd != "" {
			cmd = "cd " + cliagent.ShellQuote(in.Cwd) + " && " + cmd
		}
		if in.Description == "" {
			in.Description = "a scripted command"
		}
		name, input, ok := q.ShellCall(cmd, in.Description)
		if !ok {
			continue
		}
		raw, err := json.Marshal(input)
		if err != nil {
			return fmt.Errorf("script: encode the %s call: %w", name, err)
		}
		resp.Content[i].Name, resp.Content[i].Input = name, raw
	}
	return nil
}

// scriptTransport carries requests to the scripted model's handler in
// process. The gateway drops a client's X-Cicy-* headers, so the
// transport recognises a side call itself, with the gateway's own
// fingerprints, and tells the model its kind in X-Cicy-Aux. The whole
// answer is produced before it is returned: the script answers at once.
type scriptTransport struct{ h http.Handler }

// RoundTrip serves req and returns the answer.
func (t scriptTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("script: read the request: %w", err)
		}
	}
	in := req.Clone(req.Context())
	in.Body = io.NopCloser(bytes.NewReader(body))
	in.URL.Path = scriptPath(in.URL.Path)
	in.Header.Del("X-Cicy-Aux")
	if r, err := parseRequest(body); err == nil {
		if kind := auxKind(req.Header, r); kind != "" {
			in.Header.Set("X-Cicy-Aux", kind)
		}
	}
	w := &answerBuffer{header: http.Header{}}
	t.h.ServeHTTP(w, in)
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return &http.Response{
		Status:     fmt.Sprintf("%d %s", w.code, http.StatusText(w.code)),
		StatusCode: w.code,
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        w.header,
		Body:          io.NopCloser(bytes.NewReader(w.body.Bytes())),
		ContentLength: int64(w.body.Len()),
		Request:       req,
	}, nil
}

// scriptPath is the route of an upstream path, whatever the upstream base
// URL's path: a Gemini model method keeps its /models/<model>:<method>.
func scriptPath(p string) string {
	if i := strings.LastIndex(p, "/models/"); i >= 0 && modelapi.IsGeminiRoute(modelapi.Route(p[i:])) {
		return p[i:]
	}
	for key, rt := range routes {
		if rt.path != "" && strings.HasSuffix(p, rt.path) {
			return key
		}
	}
	return p
}

// answerBuffer is an http.ResponseWriter that keeps the answer.
type answerBuffer struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (b *answerBuffer) Header() http.Header { return b.header }

func (b *answerBuffer) WriteHeader(code int) {
	if b.code == 0 {
		b.code = code
	}
}

func (b *answerBuffer) Write(p []byte) (int, error) {
	b.WriteHeader(http.StatusOK)
	return b.body.Write(p)
}

// Flush does nothing: the answer goes out whole.
func (b *answerBuffer) Flush() {}
