package gateway

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// Gemini CLI may send its key as ?key= instead of x-goog-api-key: the
// pane token is taken from there, and never goes upstream, where the
// rest of the query (?alt=sse) does.
func TestGeminiKeyInQuery(t *testing.T) {
	rg := startRig(t, nil)
	sh := geminiCLI("say hi", true)
	sh.header.Del("x-goog-api-key")
	resp, got := rg.post(t, sh.path+"&key="+paneToken, sh.header, sh.body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, got)
	}
	r := rg.tap.fake.Requests()[0]
	if r.Path != sh.path || strings.Contains(r.Path, paneToken) {
		t.Errorf("upstream path %q, want %q", r.Path, sh.path)
	}
	if r.Header.Get("X-Goog-Api-Key") != geminiKey {
		t.Errorf("the real key did not go upstream")
	}
	c := rg.rec.wait(t, 1)
	if c.Pane != paneID || c.API != Gemini || c.Model != "gemini-2.5-pro" || !c.Stream || c.Aux != "" {
		t.Errorf("call %+v", c)
	}
	if resp, _ := rg.post(t, sh.path+"&key=wrong", sh.header, sh.body); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong ?key= got %d", resp.StatusCode)
	}
}

// A Gemini turn's answer — its text, its function calls, its end — is
// what the activity hears, streamed or not; countTokens is a side call.
func TestGeminiAnswerAndCount(t *testing.T) {
	rg := startRig(t, nil)
	for i, stream := range []bool{false, true} {
		sh := geminiCLI("[[reply=all done]]", stream)
		if resp, got := rg.post(t, sh.path, sh.header, sh.body); resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, got)
		}
		rg.rec.wait(t, 2*i+1)
		if a := rg.act.waitEnded(t, 2*i+1); a.Text != "all done" || a.ToolCalls != 0 || a.Error != "" {
			t.Errorf("stream=%v: answer %+v", stream, a)
		}
		sh = geminiCLI("[[shell=ls]]", stream)
		rg.post(t, sh.path, sh.header, sh.body)
		rg.rec.wait(t, 2*i+2)
		if a := rg.act.waitEnded(t, 2*i+2); a.ToolCalls != 1 || a.Error != "" {
			t.Errorf("stream=%v: answer %+v", stream, a)
		}
	}
	sh := geminiCLI("hi", false)
	resp, got := rg.post(t, "/v1beta/models/gemini-2.5-pro:countTokens", sh.header, m{"contents": sh.body["contents"]})
	var n struct {
		TotalTokens int `json:"totalTokens"`
	}
	if err := json.Unmarshal(got, &n); err != nil || resp.StatusCode != http.StatusOK || n.TotalTokens == 0 {
		t.Fatalf("countTokens: %d %s", resp.StatusCode, got)
	}
	if c := rg.rec.wait(t, 5); c.Aux != "count_tokens" || c.API != Gemini {
		t.Errorf("countTokens recorded as %+v", c)
	}
	if s := rg.act.started.Load(); s != 4 {
		t.Errorf("activity started %d times, want 4 (not for countTokens)", s)
	}
}

// A Gemini upstream's error ends the turn with its status and message;
// an error in its stream too.
func TestGeminiUpstreamError(t *testing.T) {
	rg := startRig(t, nil)
	sh := geminiCLI("[[status=400]]", true)
	if resp, _ := rg.post(t, sh.path, sh.header, sh.body); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d", resp.StatusCode)
	}
	rg.rec.wait(t, 1)
	if a := rg.act.waitEnded(t, 1); !a.Failed() || !strings.Contains(a.Error, "400: INVALID_ARGUMENT: fake-llm status directive 400") {
		t.Errorf("answer %+v", a)
	}
	m := &meter{api: Gemini}
	m.event([]byte(`data: {"error":{"code":500,"message":"boom","status":"INTERNAL"}}` + "\n\n"))
	var a Answer
	m.answer(&a, true)
	if a.Error != "the upstream's stream ended in an error: INTERNAL: boom" {
		t.Errorf("stream error: %q", a.Error)
	}
}

// Gemini's usage counts the cached part in the prompt, and thoughts as
// output; each chunk's usageMetadata replaces the one before.
func TestGeminiUsage(t *testing.T) {
	m := &meter{api: Gemini}
	for _, ev := range []string{
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"why","thought":true}]}}],"usageMetadata":{"promptTokenCount":100,"thoughtsTokenCount":3}}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"finishReason":"STOP"}],"modelVersion":"gemini-2.5-pro-002",
		  "usageMetadata":{"promptTokenCount":100,"cachedContentTokenCount":60,"candidatesTokenCount":5,"thoughtsTokenCount":7,"totalTokenCount":112}}`,
	} {
		m.event([]byte("data: " + strings.ReplaceAll(ev, "\n", "") + "\r\n\r\n"))
	}
	var c Call
	m.fill(&c)
	var a Answer
	m.answer(&a, true)
	if c.InputTokens != 40 || c.CacheReadTokens != 60 || c.OutputTokens != 12 || c.Model != "gemini-2.5-pro-002" {
		t.Errorf("call %+v", c)
	}
	if a.Text != "hi" || a.Error != "" {
		t.Errorf("answer %+v (a thought is not the answer)", a)
	}
}

// A pane over its budget gets the sentence in Google's error shape, a 400
// Gemini CLI does not retry.
func TestGeminiBudgetRefusal(t *testing.T) {
	rg := startRig(t, nil)
	const why = "cicy: pane w-7 reached its budget"
	rg.bud.refuse(paneID, why)
	sh := geminiCLI("hi", true)
	resp, got := rg.post(t, sh.path, sh.header, sh.body)
	var e struct {
		Error struct {
			Code    int
			Message string
			Status  string
		}
	}
	if err := json.Unmarshal(got, &e); err != nil || resp.StatusCode != http.StatusBadRequest ||
		e.Error.Code != 400 || e.Error.Status != "INVALID_ARGUMENT" || e.Error.Message != why {
		t.Errorf("refusal %d %s", resp.StatusCode, got)
	}
	if n := len(rg.tap.fake.Requests()); n != 0 {
		t.Errorf("a refused request reached the upstream")
	}
	count := "/v1beta/models/gemini-2.5-pro:countTokens"
	if resp, got := rg.post(t, count, sh.header, m{"contents": sh.body["contents"]}); resp.StatusCode != http.StatusOK {
		t.Errorf("countTokens over the budget: %d %s", resp.StatusCode, got)
	}
}
