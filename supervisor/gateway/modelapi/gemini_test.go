package modelapi

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/cicy/apitest"
	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

func TestGeminiRoute(t *testing.T) {
	for path, want := range map[string]string{
		"/v1beta/models/gemini-2.5-pro:streamGenerateContent": geminiStream,
		"/v1beta/models/gemini-2.5-pro:generateContent":       geminiGenerate,
		"/v1/models/g:countTokens":                            geminiCountTokens,
		"/v1beta/models":                                      "/models",
		"/v1/messages":                                        "/messages",
		"/v1beta/models/a/b:generateContent":                  "/models/a/b:generateContent",
	} {
		if got := Route(path); got != want {
			t.Errorf("Route(%q) = %q, want %q", path, got, want)
		}
	}
	if got := GeminiModel("/v1beta/models/gemini-2.5-pro:generateContent"); got != "gemini-2.5-pro" {
		t.Errorf("GeminiModel = %q", got)
	}
	if got := GeminiModel("/v1/messages"); got != "" {
		t.Errorf("GeminiModel(/v1/messages) = %q", got)
	}
}

// answerModel answers every request with its text and calls, and keeps
// the query it saw.
type answerModel struct {
	text  string
	calls []wire.Block
	seen  *Query
}

func (m *answerModel) Answer(_ context.Context, q *Query) (*wire.Response, error) {
	m.seen = q
	content := []wire.Block{{Type: wire.TypeText, Text: m.text}}
	content = append(content, m.calls...)
	return &wire.Response{Content: content, Usage: wire.Usage{InputTokens: 10, OutputTokens: 4, CacheReadInputTokens: 6}}, nil
}

func (m *answerModel) CountTokens(*Query) int64 { return 42 }

const geminiBody = `{"contents":[{"role":"user","parts":[{"text":"<session_context/>"}]},{"role":"user","parts":[{"text":"say hi"}]}],
	"tools":[{"functionDeclarations":[{"name":"run_shell_command","parametersJsonSchema":{"type":"object","properties":{"command":{"type":"string"}}}}]}]}`

func postGemini(t *testing.T, h http.Handler, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
	return rec
}

func TestGeminiPlain(t *testing.T) {
	m := &answerModel{text: "hello", calls: []wire.Block{{Type: wire.TypeToolUse, Name: "run_shell_command", Input: json.RawMessage(`{"command":"ls"}`)}}}
	rec := postGemini(t, NewHandler("t", m), "/v1beta/models/gemini-x:generateContent?key=k", geminiBody)
	r := checkGeminiPlainAnswer(t, rec)
	if r.ModelVersion != "gemini-x" || m.seen.API != APIGemini || m.seen.Prompt() != "say hi" || m.seen.Request.Stream {
		t.Errorf("model %q, query %s %q stream %v", r.ModelVersion, m.seen.API, m.seen.Prompt(), m.seen.Request.Stream)
	}
	if tools := m.seen.Tools(); len(tools) != 1 || tools[0] != "run_shell_command" {
		t.Errorf("tools = %v", tools)
	}
}

// checkGeminiPlainAnswer checks TestGeminiPlain's answer: "hello" and
// one call of run_shell_command, with the usage, in Gemini's shape.
func checkGeminiPlainAnswer(t *testing.T, rec *httptest.ResponseRecorder) apitest.GeminiResponse {
	t.Helper()
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var r apitest.GeminiResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	c := r.Candidates[0]
	if c.Content.Role != "model" || c.FinishReason != "STOP" || len(c.Content.Parts) != 2 || c.Content.Parts[0].Text != "hello" {
		t.Fatalf("answer = %s", rec.Body)
	}
	if fc := c.Content.Parts[1].FunctionCall; fc == nil || fc.Name != "run_shell_command" || fc.Args["command"] != "ls" || fc.ID == "" {
		t.Errorf("function call = %s", rec.Body)
	}
	if u := r.UsageMetadata; u == nil || u.PromptTokenCount != 16 || u.CachedContentTokenCount != 6 || u.CandidatesTokenCount != 4 || u.TotalTokenCount != 20 {
		t.Errorf("usage = %s", rec.Body)
	}
	return r
}

func TestGeminiStream(t *testing.T) {
	m := &answerModel{text: "hello world"}
	rec := postGemini(t, NewHandler("t", m), "/v1beta/models/gemini-x:streamGenerateContent?alt=sse", geminiBody)
	if ct := rec.Header().Get("Content-Type"); rec.Code != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("status %d, %s", rec.Code, ct)
	}
	var text string
	var last apitest.GeminiResponse
	n := 0
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "event:") {
			t.Errorf("a Gemini stream has no event names: %q", line)
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var r apitest.GeminiResponse
		if err := json.Unmarshal([]byte(data), &r); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		if last.UsageMetadata != nil || (n > 0 && last.Candidates[0].FinishReason != "") {
			t.Errorf("chunk after the last: %s", data)
		}
		text += r.Candidates[0].Content.Parts[0].Text
		last = r
		n++
	}
	if text != "hello world" || n < 2 || last.Candidates[0].FinishReason != "STOP" || last.UsageMetadata == nil || !m.seen.Request.Stream {
		t.Errorf("text %q in %d chunks, last %+v", text, n, last)
	}
}

func TestGeminiToolResultAndCount(t *testing.T) {
	m := &answerModel{text: "done"}
	body := `{"contents":[{"role":"user","parts":[{"text":"go"}]},
		{"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{"command":"ls"}}}]},
		{"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"output":"a.txt"}}}]}],
		"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":{"type":"object"}}}`
	postGemini(t, NewHandler("t", m), "/v1beta/models/g:generateContent", body)
	if res, ok := m.seen.ToolResult(); !ok || res != "a.txt" || m.seen.Prompt() != "go" {
		t.Errorf("tool result %q %v, prompt %q", res, ok, m.seen.Prompt())
	}
	if s, ok := m.seen.Schema(); !ok || string(s) != `{"type":"object"}` {
		t.Errorf("schema %s %v", s, ok)
	}
	rec := postGemini(t, NewHandler("t", m), "/v1beta/models/g:countTokens", `{"contents":[{"role":"user","parts":[{"text":"x"}]}]}`)
	if got := rec.Body.String(); rec.Code != http.StatusOK || got != `{"totalTokens":42}` {
		t.Errorf("countTokens = %d %s", rec.Code, got)
	}
	rec = postGemini(t, NewHandler("t", m), "/v1beta/models/g:embedContent", `{}`)
	if got := rec.Body.String(); rec.Code != http.StatusNotFound || !strings.Contains(got, `"status":"NOT_FOUND"`) {
		t.Errorf("unknown method = %d %s", rec.Code, got)
	}
}
