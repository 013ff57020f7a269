package signals

import (
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
	"github.com/cicy-ai/cicy-agent/supervisor/gateway"
)

// A turn's verdict: a budget refusal, then a failed model request, then
// the hook's failure; else the gateway's answer, the hook's message, the
// screen.
func TestVerdictOrder(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	screen := func() string { return "from the screen" }
	var none Answers
	if p := Verdict(&none, t0, End{}, "how", screen); p.Failed || p.Result != "from the screen" || p.Source != schema.SourceScreen {
		t.Errorf("nothing told: %+v", p)
	}
	if p := Verdict(&none, t0, End{Result: "hook says"}, "how", screen); p.Result != "hook says" || p.Source != schema.SourceHook {
		t.Errorf("a hook's message: %+v", p)
	}
	var ok Answers
	ok.Note(gateway.Answer{Started: t0.Add(time.Second), Ended: t0.Add(2 * time.Second), Text: " answer "})
	if p := Verdict(&ok, t0, End{Result: "hook says"}, "how", screen); p.Result != "answer" || p.Source != schema.SourceGateway {
		t.Errorf("the gateway's answer: %+v", p)
	}
	refused := End{Failed: "refused", FailedBy: schema.SourceGateway}
	if p := Verdict(&ok, t0, refused, "how", screen); !p.Failed || p.Error != "refused" {
		t.Errorf("a refusal: %+v", p)
	}
	var bad Answers
	bad.Note(gateway.Answer{Started: t0.Add(time.Second), Ended: t0.Add(2 * time.Second), Error: "upstream 500"})
	if p := Verdict(&bad, t0, End{Failed: "hook failed"}, "how", screen); !p.Failed || !strings.Contains(p.Error, "upstream 500") {
		t.Errorf("a failed request: %+v", p)
	}
	if bad.Upstream() != "" {
		t.Errorf("one failure needs no person: %q", bad.Upstream())
	}
	bad.Note(gateway.Answer{Started: t0.Add(3 * time.Second), Ended: t0.Add(4 * time.Second), Error: "upstream 500"})
	if !strings.Contains(bad.Upstream(), "2 model requests in a row failed") {
		t.Errorf("two failures: %q", bad.Upstream())
	}
}

// TestTakenUpByItsOwnWord: an agent whose hooks tell each prompt is taken
// up by its prompt hook or a model request, not by its screen looking
// busy after the typing (it may still be running the last turn's end
// hook, the keys typed then lost); one without is taken at its screen's
// word.
func TestTakenUpByItsOwnWord(t *testing.T) {
	t.Parallel()
	typed := time.Now()
	var none Answers
	busyLook := pane.Status{State: pane.Busy, Cause: pane.CauseScreen, Since: typed.Add(100 * time.Millisecond)}
	busyLook.Signals.ScreenBusyAt = typed.Add(100 * time.Millisecond)
	var quiet, heard Hooks
	heard.Record(cliagent.Effect{End: true}, api.HookRequest{Agent: "claude", Event: "Stop", At: typed.Add(-time.Second)})
	if _, ok := TakenUp(&heard, &none, busyLook, typed, false); !ok {
		t.Error("an agent without prompt hooks, its screen busy since the typing: not taken up")
	}
	if _, ok := TakenUp(&quiet, &none, busyLook, typed, true); !ok {
		t.Error("an agent whose hooks were never heard, its screen busy since the typing: not taken up")
	}
	if _, ok := TakenUp(&heard, &none, busyLook, typed, true); ok {
		t.Error("an agent whose hooks tell prompts was taken up by its screen alone")
	}
	var told Hooks
	told.Record(cliagent.Effect{Prompt: true}, api.HookRequest{Agent: "claude", At: typed.Add(200 * time.Millisecond)})
	if at, ok := TakenUp(&told, &none, busyLook, typed, true); !ok || !at.Equal(typed.Add(200*time.Millisecond)) {
		t.Errorf("its prompt hook after the typing: taken %v at %v", ok, at)
	}
	var asked Answers
	asked.Note(gateway.Answer{Started: typed.Add(300 * time.Millisecond), Ended: typed.Add(time.Second), Text: "x"})
	if _, ok := TakenUp(&heard, &asked, busyLook, typed, true); !ok {
		t.Error("a model request after the typing: not taken up")
	}
	waiting := pane.Status{State: pane.Waiting, Cause: pane.CauseScreen, Since: typed.Add(time.Second)}
	if _, ok := TakenUp(&heard, &none, waiting, typed, true); !ok {
		t.Error("a question asked: not taken up")
	}
}
