package cicy

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// /compact of a history that is already one summary calls no model,
// archives nothing and leaves the history as it is, saying so.
func TestCompactOfOneSummary(t *testing.T) {
	r := newRig(t, replies(textReply("## Goals\n- again")))
	r.writeHistory("11111111-2222-4333-8444-555555555555", []wire.Message{textMsg(wire.RoleUser, summaryPrefix+"## Goals\n- the earlier work")})
	cur := filepath.Join(HistoryDir(r.ws), "current.json")
	before := mustRead(t, cur)
	a := r.start()
	res := r.send("/compact")
	if res.Status != TurnCompleted || !strings.Contains(res.Answer, "already one summary") {
		t.Fatalf("/compact of one summary: %+v, want completed saying it is already one", res)
	}
	r.requests(0)
	if !bytes.Equal(mustRead(t, cur), before) {
		t.Error("current.json changed")
	}
	if arch := archives(t, r.ws); len(arch) != 0 {
		t.Errorf("archives %v, want none", arch)
	}
	if n := a.MessageCount(); n != 1 {
		t.Errorf("%d messages, want the summary alone", n)
	}
	r.expectIdle()
	// A summary with a message after it is still compacted.
	if res := r.send("hello"); res.Status != TurnCompleted {
		t.Fatalf("turn: %+v", res)
	}
	if res := r.send("/compact"); res.Status != TurnCompleted || !strings.HasPrefix(res.Answer, "compacted:") {
		t.Fatalf("/compact of a summary and a turn: %+v", res)
	}
	if rs := r.requests(2); rs[1].Req.Aux != "compact" {
		t.Errorf("the second request is aux %q, want compact", rs[1].Req.Aux)
	}
}
