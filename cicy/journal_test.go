package cicy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/apitest"
	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// TestJournalRoundsSurviveACrash: rounds go to the journal between full
// writes; a restore applies them (stopping at a line torn by the crash)
// and folds them into current.json.
func TestJournalRoundsSurviveACrash(t *testing.T) {
	ws := t.TempDir()
	dir := HistoryDir(ws)
	hist := realisticHistory(6)
	w := historyWriter{dir: dir, agentID: "w-1", convID: "c1"}
	if err := w.save(hist[:4], time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := w.appendRound(hist[:5], time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := w.appendRound(hist[:6], time.Now()); err != nil {
		t.Fatal(err)
	}
	cur, _ := os.ReadFile(filepath.Join(dir, "current.json"))
	if strings.Count(string(cur), `{"id":`) != 4 {
		t.Fatalf("current.json was rewritten by a round:\n%s", cur)
	}
	j, _ := os.OpenFile(filepath.Join(dir, journalName), os.O_APPEND|os.O_WRONLY, 0)
	j.WriteString(`{"id":7,"role":"user","content":[{"type":"te`) // torn by the crash
	j.Close()
	if err := os.WriteFile(filepath.Join(dir, "reply.json"), []byte(`{"status":"working"}`), 0o644); err != nil {
		t.Fatal(err)
	}

	a, err := Start(PaneConfig{ID: "w-1", Workspace: ws, RoleTemplate: "assistant"}, Env{Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	// The turn goes on, and fails at once: this Env has no provider.
	pollUntil(t, "the resumed turn ends", func() bool { return a.Status().State == Idle })
	// hist[5] is a tool call: 6 messages, its result, the marker.
	if n := a.MessageCount(); n != 8 {
		t.Fatalf("restored %d messages, want 6 + the call's result + the failed marker", n)
	}
	if _, err := os.Stat(filepath.Join(dir, journalName)); !os.IsNotExist(err) {
		t.Fatalf("the journal was not folded into current.json: %v", err)
	}
	var c Current
	if _, err := readJSON(filepath.Join(dir, "current.json"), &c); err != nil || len(c.Messages) != 8 {
		t.Fatalf("current.json after restore: %d messages, %v", len(c.Messages), err)
	}
	// A reply.json of an older version: its call may have run.
	if c.Messages[7].Content[0].Text != markerFailed || c.Messages[6].Content[0].Content != InterruptedByRestart {
		t.Fatalf("tail = %+v", c.Messages[5:])
	}
}

// TestRawBodyMatchesMarshal: the body spliced from the cached encodings is
// byte for byte what encoding the request gives.
func TestRawBodyMatchesMarshal(t *testing.T) {
	for _, n := range []int{1, 7, 650} {
		hist := realisticHistory(n)
		w := historyWriter{dir: t.TempDir()}
		if err := w.encode(hist); err != nil {
			t.Fatal(err)
		}
		p := Prompt{Model: "m", MaxTokens: 10, System: "s", Role: "r", Memories: "mem", History: hist, Final: true,
			Tools: []wire.Tool{{Name: "shell", Description: "d", InputSchema: []byte(`{"type":"object"}`)}}}
		plain := Assemble(p)
		p.Encoded = w.enc
		fast := Assemble(p)
		if fast.RawMessages == nil {
			t.Fatalf("n=%d: no raw messages", n)
		}
		a, err := plain.Body()
		if err != nil {
			t.Fatal(err)
		}
		b, err := fast.Body()
		if err != nil {
			t.Fatal(err)
		}
		if string(a) != string(b) {
			t.Fatalf("n=%d: spliced body differs from the encoded one", n)
		}
		if strings.Count(string(b), `"cache_control"`) != 3 {
			t.Fatalf("n=%d: %d breakpoints", n, strings.Count(string(b), `"cache_control"`))
		}
	}
}

// TestToolCallNotRunTwiceAfterACrash: a turn asks for three shell calls
// that each append a line to a file. The first runs; the second runs and
// the process dies before its result is on disk; the third never starts.
// The next start does not run the first two again: the first keeps its
// recorded result, the second gets a result saying a restart interrupted
// it and its effect is unknown; the third runs, and the turn goes on to
// the model's next request, which holds all three results.
func TestToolCallNotRunTwiceAfterACrash(t *testing.T) {
	for _, point := range []string{"started", "ran"} {
		t.Run("crash after "+point, func(t *testing.T) {
			// not parallel: newRig sets HOME
			calls := &wire.Response{Model: "claude-test", StopReason: "tool_use", Content: []wire.Block{wire.Text("three steps")}}
			for _, l := range []string{"a", "b", "c"} {
				in, _ := json.Marshal(map[string]string{"command": "echo " + l + " >> lines.txt && echo wrote " + l})
				calls.Content = append(calls.Content, wire.Block{Type: wire.TypeToolUse, ID: "toolu_" + l, Name: "shell", Input: in})
			}
			r := newRig(t, replies(apitest.Reply{Resp: calls}, textReply("all done")))
			died := make(chan struct{})
			r.tweak = func(e *Env) {
				e.crash = func(p, id string) {
					if p == point && id == "toolu_b" {
						close(died)
						runtime.Goexit() // the turn's goroutine dies here, as under kill -9
					}
				}
			}
			first, err := Start(r.cfg, r.env())
			if err != nil {
				t.Fatal(err)
			}
			r.a = first
			r.sendAsync("do three steps", "")
			<-died
			first.Close() // writes nothing: its turn never ended
			if rep := r.replyFile(); rep.Status != TurnWorking {
				t.Fatalf("reply.json after the crash says %q, want working", rep.Status)
			}

			r.tweak = nil
			second := r.start()
			pollUntil(t, "the resumed turn ends", func() bool { return second.Status().State == Idle })
			want := "a\nb\nc\n"
			if point == "started" {
				want = "a\nc\n" // b's start was recorded, it never ran: not run either
			}
			if got := string(mustRead(t, filepath.Join(r.ws, "lines.txt"))); got != want {
				t.Errorf("lines.txt = %q, want %q: a call ran twice (or one that never started was not run)", got, want)
			}
			reqs := r.requests(2)
			next := reqs[1].Req.Messages
			trs := toolResults(next[len(next)-1])
			if len(trs) != 3 {
				t.Fatalf("the next request's last message has %d tool results: %+v", len(trs), next[len(next)-1])
			}
			if trs[0].ToolUseID != "toolu_a" || !strings.Contains(trs[0].Content, "wrote a") || trs[0].IsError {
				t.Errorf("result of the call that ran before the crash: %+v", trs[0])
			}
			if trs[1].ToolUseID != "toolu_b" || trs[1].Content != InterruptedByRestart || !trs[1].IsError {
				t.Errorf("result of the call the crash interrupted: %+v, want %q", trs[1], InterruptedByRestart)
			}
			if trs[2].ToolUseID != "toolu_c" || !strings.Contains(trs[2].Content, "wrote c") {
				t.Errorf("result of the call that never started: %+v", trs[2])
			}
			if res := r.replyFile(); res.Status != TurnCompleted || res.Answer != "all done" {
				t.Errorf("reply.json after the resumed turn: %+v", res)
			}
			checkBalanced(t, "current.json", r.history())
		})
	}
}

// TestRestoreTurnWhoseEndWasWritten: a crash between the turn's last
// write of the history (its answer) and reply.json: the next start closes
// the turn as it ended, without an interrupted marker after its answer
// (which made its task run again) and without calling the model.
func TestRestoreTurnWhoseEndWasWritten(t *testing.T) {
	r := newRig(t, replies(textReply("unexpected")))
	r.writeHistory("11111111-2222-4333-8444-555555555555", []wire.Message{
		textMsg(wire.RoleUser, "task 7: say hi"),
		textMsg(wire.RoleAssistant, "hi"),
	})
	if err := writeJSONAtomic(filepath.Join(HistoryDir(r.ws), "reply.json"), Reply{TurnID: "t-old", Status: TurnWorking, CallsRecorded: true}); err != nil {
		t.Fatal(err)
	}
	a := r.start()
	if h := r.history(); len(h) != 2 || lastText(h[1]) != "hi" {
		t.Fatalf("history after restore: %+v", h)
	}
	if outcome, answer := a.MessageOutcome("task 7: "); outcome != OutcomeDone || answer != "hi" {
		t.Fatalf("outcome %s %q, want done with its answer", outcome, answer)
	}
	if rep := r.replyFile(); rep.Status != TurnCompleted || rep.Answer != "hi" {
		t.Fatalf("reply.json after restore: %+v", rep)
	}
	r.requests(0)
}
