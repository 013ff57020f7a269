package cicy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/apitest"
	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// A 330-round turn (a tool call every round) passes HardCap inside the
// turn: every request still carries the most recent messages — never
// fewer than 450 once the history has more, never more than HardCap, never
// a tool_result whose call was cut off — and so does the next turn. The
// window's start moves in steps, not on every round.
func TestLongTurnWindow(t *testing.T) {
	const rounds = 330
	r := newRig(t, func(n int, _ *apitest.Recorded) apitest.Reply {
		if n < rounds {
			return apitest.Reply{Resp: apitest.ToolResponse(fmt.Sprintf("toolu_w%03d", n), "skill", map[string]any{}, wire.Usage{InputTokens: 10, OutputTokens: 3})}
		}
		return textReply(fmt.Sprintf("answer %d", n))
	})
	r.writeTemplate("long", "You loop.\n", "name: Long\ntools: [core]\nmax_tool_rounds: 340\n")
	r.cfg.RoleTemplate = "long"
	r.start()
	// 330 rounds, each with its fsyncs and a request of up to 600
	// messages: a deadline of its own, for a busy machine under -race.
	var res TurnResult
	select {
	case res = <-r.sendAsync("loop for a long time", ""):
	case <-time.After(10 * time.Minute):
		t.Fatalf("the %d-round turn did not end within 10 minutes", rounds)
	}
	if res.Status != TurnCompleted || res.Answer != fmt.Sprintf("answer %d", rounds) {
		t.Fatalf("the long turn: %+v", res)
	}
	if res := r.send("and now?"); res.Status != TurnCompleted {
		t.Fatalf("the next turn: %+v", res)
	}
	rs := r.requests(rounds + 2)
	// History before request i of the long turn: the question and i
	// rounds (a call and its result); the next turn adds the answer and
	// the new question.
	histLen := func(i int) int {
		if i <= rounds {
			return 1 + 2*i
		}
		return 1 + 2*rounds + 2
	}
	moves, prevStart := 0, ""
	for i, rec := range rs {
		msgs := rec.Req.Messages
		h := histLen(i)
		where := fmt.Sprintf("request %d (history of %d)", i, h)
		switch {
		case len(msgs) == 0:
			t.Fatalf("%s: no messages (body %.200s)", where, rec.Body)
		case len(msgs) > HardCap:
			t.Fatalf("%s: %d messages, more than %d", where, len(msgs), HardCap)
		case h <= HardCap && len(msgs) != h:
			t.Fatalf("%s: %d messages, want all %d", where, len(msgs), h)
		case h > HardCap && len(msgs) < 450:
			t.Fatalf("%s: %d messages, want at least 450", where, len(msgs))
		case msgs[0].Role != wire.RoleUser:
			t.Fatalf("%s: starts with a %s message", where, msgs[0].Role)
		}
		checkBalanced(t, where, msgs)
		if t.Failed() {
			t.FailNow()
		}
		if h > HardCap {
			start := fmt.Sprintf("%+v", msgs[1].Content)
			if prevStart != "" && start != prevStart {
				moves++
			}
			prevStart = start
		}
	}
	if moves > 1 {
		t.Errorf("the window's start moved %d times over %d rounds above the cap, want at most once", moves, (histLen(len(rs)-1)-HardCap)/2)
	}
}

// The window's first message, changed by the marker, is encoded anew even
// when the request reuses the history's encoding and carries no role
// block.
func TestWindowMarkerEncoded(t *testing.T) {
	h := alternating(701)
	h[199] = wire.Message{Role: wire.RoleAssistant, Content: []wire.Block{{Type: wire.TypeToolUse, ID: "tu_cut", Name: "shell", Input: []byte(`{"command":"true"}`)}}}
	h[200] = wire.Message{Role: wire.RoleUser, Content: []wire.Block{wire.ToolResult("tu_cut", "ok", false)}}
	enc := make([][]byte, len(h))
	for i, m := range h {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		enc[i] = b
	}
	req := Assemble(Prompt{Model: "m", MaxTokens: 10, System: "s", History: h, Encoded: enc})
	body, err := req.Body()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(body, []byte("tu_cut")) || !bytes.Contains(body, []byte(cutResultsMarker)) {
		t.Errorf("the body carries the cut call's result instead of the marker")
	}
	if len(req.Messages) != 501 {
		t.Errorf("%d messages, want 501", len(req.Messages))
	}
	if h[200].Content[0].Type != wire.TypeToolResult {
		t.Errorf("the window changed the history")
	}
}
