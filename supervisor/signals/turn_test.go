package signals

import (
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/schema"
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
