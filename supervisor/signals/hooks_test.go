package signals

import (
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
)

// A turn that ended in an error stays failed when the agent's plain end
// signal follows (opencode: session.error, then session.idle carrying an
// earlier turn's text, as after a budget refusal); the next turn's end
// counts again.
func TestFailedTurnEndStays(t *testing.T) {
	var h Hooks
	t0 := time.Now()
	at := func(s int) api.HookRequest {
		return api.HookRequest{Agent: "opencode", At: t0.Add(time.Duration(s) * time.Second)}
	}
	h.Record(cliagent.Effect{Prompt: true}, at(1))
	h.Record(cliagent.Effect{End: true, Failed: "the agent's turn failed: budget"}, at(2))
	h.Record(cliagent.Effect{End: true, Result: "an earlier turn's answer"}, at(3))
	if end, ok := h.TurnEnd(t0); !ok || end.Failed != "the agent's turn failed: budget" || end.Result != "" {
		t.Errorf("after error then idle: result %q, failed %q, %v; want the failure", end.Result, end.Failed, ok)
	}
	h.Record(cliagent.Effect{Prompt: true}, at(4))
	h.Record(cliagent.Effect{End: true, Result: "done now"}, at(5))
	if end, ok := h.TurnEnd(t0.Add(4 * time.Second)); !ok || end.Failed != "" || end.Result != "done now" {
		t.Errorf("the next turn: result %q, failed %q, %v; want done now", end.Result, end.Failed, ok)
	}
}
