package gateway

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// A pane whose budget is reached gets the sentence in its API's error
// shape, with a status its CLI shows without retrying, and its request
// never reaches the upstream nor the ledger; token counting still passes,
// and a pane under its budget is served.
func TestBudgetRefusal(t *testing.T) {
	rg := startRig(t, nil)
	const why = "cicy: pane w-7 reached its budget of $0.50 (spent $0.51); raise it with: cicy-agent budget w-7 1.00"
	rg.bud.refuse(paneID, why)
	for _, stream := range []bool{false, true} {
		for _, sh := range []shape{claudeCode("hi", stream), codex("hi", stream), opencode("hi", stream, true), opencode("hi", stream, false)} {
			resp, got := rg.post(t, sh.path, sh.header, sh.body)
			checkRefusal(t, sh, resp, got, why)
		}
	}
	if n := len(rg.tap.fake.Requests()); n != 0 {
		t.Errorf("%d refused requests reached the upstream", n)
	}
	if n := len(rg.rec.all()); n != 0 {
		t.Errorf("%d refused requests were recorded: %+v", n, rg.rec.all())
	}
	if s := rg.act.started.Load(); s != 0 {
		t.Errorf("activity started %d times for refused requests", s)
	}
	if told := rg.bud.told(); len(told) != 8 || told[0] != paneID+": "+why {
		t.Errorf("told of %d refused main-loop requests (%v), want 8", len(told), told)
	}
	// A refused side call is no turn's end: not told.
	side := claudeCode("hi", false)
	side.header.Set("X-Cicy-Aux", "memory")
	if resp, got := rg.post(t, side.path, side.header, side.body); resp.StatusCode != http.StatusPaymentRequired {
		t.Errorf("a side call over the budget: %d %s", resp.StatusCode, got)
	}
	if told := rg.bud.told(); len(told) != 8 {
		t.Errorf("told of a refused side call: %v", told[8:])
	}
	if logs := rg.logs.b.String(); strings.Count(logs, "refused a request: the budget is reached") != 9 || !strings.Contains(logs, "pane=w-7") {
		t.Errorf("want a log line per refusal, with the pane:\n%s", logs)
	}

	// Counting tokens spends nothing: it passes.
	sh := claudeCode("hi", false)
	if resp, got := rg.post(t, "/v1/messages/count_tokens?beta=true", sh.header, sh.body); resp.StatusCode != http.StatusOK {
		t.Errorf("count_tokens of a pane over its budget: %d %s", resp.StatusCode, got)
	}
	// Raised: served again.
	rg.bud.refuse(paneID, "")
	if resp, got := rg.post(t, sh.path, sh.header, sh.body); resp.StatusCode != http.StatusOK {
		t.Errorf("after the raise: %d %s", resp.StatusCode, got)
	}
	if n := len(rg.tap.fake.Requests()); n != 2 {
		t.Errorf("the upstream got %d requests, want 2 (count_tokens and the one after the raise)", n)
	}
}

// checkRefusal checks one refused answer: 402 billing_error for Anthropic
// Messages, 400 invalid_request_error for the OpenAI APIs, the sentence as
// the message, X-Should-Retry false.
func checkRefusal(t *testing.T, sh shape, resp *http.Response, body []byte, why string) {
	t.Helper()
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string  `json:"type"`
			Message string  `json:"message"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("%s: error body %s: %v", sh.name, body, err)
	}
	wantCode, wantType, wantTop := http.StatusBadRequest, "invalid_request_error", ""
	if sh.api == Anthropic {
		wantCode, wantType, wantTop = http.StatusPaymentRequired, "billing_error", "error"
	}
	if resp.StatusCode != wantCode || e.Type != wantTop || e.Error.Type != wantType || e.Error.Message != why {
		t.Errorf("%s: %d %s; want %d, type %q, error type %q and the sentence", sh.name, resp.StatusCode, body, wantCode, wantTop, wantType)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" || resp.Header.Get("X-Should-Retry") != "false" {
		t.Errorf("%s: Content-Type %q, X-Should-Retry %q", sh.name, ct, resp.Header.Get("X-Should-Retry"))
	}
}

// The budget is asked with what bounds a request's cost: its API, the
// model asked for, its body's size, its output limit, and how many
// answers it has the upstream generate — Chat Completions' n,
// Completions' best_of, Gemini's candidateCount — each billed up to the
// limit (one request with n=128 once spent $1.28 against $0.05). A count
// that is no whole number is rounded up; one that is not a number is
// left to the upstream. The call recorded keeps the model asked for.
func TestBudgetAskCountsEveryAnswer(t *testing.T) {
	t.Parallel()
	rg := startRig(t, nil)
	chat := func(extra m) shape {
		sh := opencode("hi", false, false)
		for k, v := range extra {
			if sh.body[k] = v; v == nil {
				delete(sh.body, k)
			}
		}
		return sh
	}
	gem := geminiCLI("hi", false)
	gem.body["generationConfig"] = m{"maxOutputTokens": 2000, "candidateCount": 8}
	for _, c := range []struct {
		sh                shape
		api               API
		model             string
		maxTokens, answer int
	}{
		{chat(nil), Chat, "fake-model", 32000, 1},
		{chat(m{"n": 128, "max_tokens": 100}), Chat, "fake-model", 100, 128},
		{chat(m{"n": 2, "best_of": 5, "max_tokens": nil, "max_completion_tokens": 7}), Chat, "fake-model", 7, 5},
		{chat(m{"n": 2.5, "max_tokens": 1e3}), Chat, "fake-model", 1000, 3},
		{chat(m{"n": "many"}), Chat, "fake-model", 32000, 1},
		{gem, Gemini, "gemini-2.5-pro", 2000, 8},
		{codex("hi", false), Responses, "fake-model", 0, 1},
		{claudeCode("hi", false), Anthropic, "claude-opus-5-5", 128000, 1},
	} {
		n := len(rg.bud.asks())
		resp, got := rg.post(t, c.sh.path, c.sh.header, c.sh.body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %v: %d %s", c.sh.name, c.sh.body["n"], resp.StatusCode, got)
		}
		asks := rg.bud.asks()
		if len(asks) != n+1 {
			t.Fatalf("%s: %d reservations asked, want 1", c.sh.name, len(asks)-n)
		}
		a := asks[n]
		if a.API != c.api || a.Model != c.model || a.MaxTokens != c.maxTokens || a.Choices != c.answer || a.BodyBytes < 100 || a.Unread != "" {
			t.Errorf("%s %v: asked %+v; want %s %s, %d tokens, %d answers", c.sh.name, c.sh.body["n"], a, c.api, c.model, c.maxTokens, c.answer)
		}
		if call := rg.rec.wait(t, n+1); call.Asked != c.model {
			t.Errorf("%s: recorded as asked for %q, want %q", c.sh.name, call.Asked, c.model)
		}
	}

	// A body in a Content-Encoding is forwarded unread: the budget is
	// told that nothing of it is known.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_ = json.NewEncoder(zw).Encode(chat(m{"n": 128}).body)
	_ = zw.Close()
	req, _ := http.NewRequest(http.MethodPost, rg.gw.URL()+"/v1/chat/completions", &gz)
	req.Header = chat(nil).header.Clone()
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	asks := rg.bud.asks()
	if a := asks[len(asks)-1]; a.Unread != `its body is in Content-Encoding "gzip"` || a.Model != "" || a.API != Chat {
		t.Errorf("a gzip body: asked %+v", a)
	}
}
