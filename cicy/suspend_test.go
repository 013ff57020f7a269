package cicy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/apitest"
	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// threeCalls is a model answer with three shell calls, each appending a
// line to lines.txt; the second first touches b-started, then waits bWait.
func threeCalls(bWait string) apitest.Reply {
	calls := &wire.Response{Model: "claude-test", StopReason: "tool_use", Content: []wire.Block{wire.Text("three steps")}}
	for _, c := range []struct{ id, cmd string }{
		{"toolu_a", "echo a >> lines.txt && echo wrote a"},
		{"toolu_b", "touch b-started && sleep " + bWait + " && echo b >> lines.txt && echo wrote b"},
		{"toolu_c", "echo c >> lines.txt && echo wrote c"},
	} {
		in, _ := json.Marshal(map[string]string{"command": c.cmd})
		calls.Content = append(calls.Content, wire.Block{Type: wire.TypeToolUse, ID: c.id, Name: "shell", Input: in})
	}
	return apitest.Reply{Resp: calls}
}

// TestSuspendLeavesTheTurnForTheNextStart: the supervisor's shutdown
// (Suspend) stops a turn whose second of three tool calls runs. Given
// time, the call ends and its result is kept; cut, its effect is unknown.
// Either way the turn is not ended (reply.json says working, no
// cancelled marker, which sent its task again and ran every call a
// second time), and the next start takes it up: no call runs twice, the
// calls that never started run, and the turn ends with the model's answer.
func TestSuspendLeavesTheTurnForTheNextStart(t *testing.T) {
	for _, tc := range []struct {
		name, bWait string
		grace       time.Duration
		lines       string // after the shutdown
		b           string // b's result in the next request
	}{
		{"the running call ends within grace", "0.5", 30 * time.Second, "a\nb\n", "wrote b"},
		{"the running call is cut after grace", "30", 200 * time.Millisecond, "a\n", InterruptedByRestart},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// not parallel: newRig sets HOME
			r := newRig(t, replies(threeCalls(tc.bWait), textReply("all done")))
			first := r.start()
			r.sendAsync("do three steps", "")
			pollUntil(t, "the second call starts", func() bool {
				_, err := os.Stat(filepath.Join(r.ws, "b-started"))
				return err == nil
			})
			first.Suspend(tc.grace)
			if got := string(mustRead(t, filepath.Join(r.ws, "lines.txt"))); got != tc.lines {
				t.Errorf("lines.txt after the shutdown = %q, want %q", got, tc.lines)
			}
			if rep := r.replyFile(); rep.Status != TurnWorking {
				t.Fatalf("reply.json after the shutdown says %q, want working (the next start takes the turn up)", rep.Status)
			}
			for _, m := range r.history() {
				if strings.Contains(m.JoinedText(), "(no reply this turn") {
					t.Fatalf("the shutdown ended the turn with %q", m.JoinedText())
				}
			}

			second := r.start()
			pollUntil(t, "the resumed turn ends", func() bool { return second.Status().State == Idle })
			if got := string(mustRead(t, filepath.Join(r.ws, "lines.txt"))); got != tc.lines+"c\n" {
				t.Errorf("lines.txt = %q, want %q: a call ran twice, or one that never started did not run", got, tc.lines+"c\n")
			}
			reqs := r.requests(2)
			next := reqs[1].Req.Messages
			trs := toolResults(next[len(next)-1])
			if len(trs) != 3 {
				t.Fatalf("the next request's last message has %d tool results: %+v", len(trs), next[len(next)-1])
			}
			if trs[1].ToolUseID != "toolu_b" || !strings.Contains(trs[1].Content, tc.b) {
				t.Errorf("result of the call the shutdown met running: %+v, want %q", trs[1], tc.b)
			}
			if !strings.Contains(trs[2].Content, "wrote c") {
				t.Errorf("result of the call that never started before the shutdown: %+v", trs[2])
			}
			if res := r.replyFile(); res.Status != TurnCompleted || res.Answer != "all done" {
				t.Errorf("reply.json after the resumed turn: %+v", res)
			}
			checkBalanced(t, "current.json", r.history())
		})
	}
}

// TestSuspendDropsTheModelRequest: a shutdown does not wait for a model
// request in flight (it could take minutes); the next start asks again,
// the message in the history once.
func TestSuspendDropsTheModelRequest(t *testing.T) {
	release := make(chan struct{})
	var waitedOut atomic.Bool
	r := newRig(t, func(n int, _ *apitest.Recorded) apitest.Reply {
		if n == 0 {
			select {
			case <-release:
			case <-time.After(testWait):
				waitedOut.Store(true)
			}
		}
		return textReply("hello")
	})
	first := r.start()
	r.sendAsync("say hello", "")
	pollUntil(t, "the model is asked", func() bool { return len(r.srv.Requests()) == 1 })
	first.Suspend(testWait)
	close(release)
	if waitedOut.Load() {
		t.Fatal("Suspend waited for the model's answer")
	}
	if rep := r.replyFile(); rep.Status != TurnWorking {
		t.Fatalf("reply.json after the shutdown says %q, want working", rep.Status)
	}
	second := r.start()
	pollUntil(t, "the resumed turn ends", func() bool { return second.Status().State == Idle })
	if res := r.replyFile(); res.Status != TurnCompleted || res.Answer != "hello" {
		t.Errorf("reply.json after the resumed turn: %+v", res)
	}
	n := 0
	for _, m := range r.history() {
		if m.Role == wire.RoleUser && strings.Contains(m.JoinedText(), "say hello") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the message is %d times in the history, want once", n)
	}
}
