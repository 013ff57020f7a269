package screens

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
	"github.com/cicy-ai/cicy-agent/supervisor/comeback"
)

// Explain says why a pane has its state: the signal behind its reason,
// the last hook of a CLI agent and what its screen rules say of the screen
// now, a cicy pane's turn.
func (r *Room) Explain(id string) (api.Explanation, error) {
	p, err := r.core.Pane(id)
	if err != nil {
		return api.Explanation{}, err
	}
	p.Wake() // a dormant cicy pane's turn is read from its history
	x := api.Explanation{Pane: p.Info()}
	if sc, err := r.Screen(id, 0); err == nil {
		x.Screen = sc.Screen
	}
	k := p.Kind()
	st := k.Status()
	x.Signal = signalOf(st, p.Type(), r.core.Settle())
	x.FoundAtRestart = comeback.FoundAtRestart(st)
	k.Explain(&x)
	if a := r.core.Answers(context.Background(), p.ID(), 0); len(a) > 0 {
		x.Answers = a[max(0, len(a)-10):]
	}
	return x, nil
}

// RulesVerdict is what a CLI agent's screen rules, read afresh from home,
// say of screen.
func RulesVerdict(home, typ, screen string) api.RulesVerdict {
	v, err := ScreenVerdict(home, typ, screen)
	if err != nil {
		return api.RulesVerdict{Applies: true, State: "unknown", Note: err.Error()}
	}
	return v
}

// ScreenVerdict is what the screen rules of a pane type (read afresh
// from lite-config.json in home, then the built-in ones) make of a screen:
// the parts of the agent's layout found, and the rule that decided, with
// the part it read. The error is a bad lite-config.json.
func ScreenVerdict(home, typ, screen string) (api.RulesVerdict, error) {
	rules, err := cliagent.ScreenRules(home, typ)
	if err != nil {
		return api.RulesVerdict{}, err
	}
	l := pane.NewLayout(screen, cliagent.Layout(typ))
	out := api.RulesVerdict{Applies: true, State: "unknown"}
	for _, s := range l.Found() {
		out.Parts = append(out.Parts, api.ScreenPart{Part: string(s.Part), From: s.From + 1, To: s.To})
	}
	v, ok := rules.Classify(l)
	if !ok {
		out.Note = "no " + typ + " rule matches the current screen; the pane keeps its state"
		return out, nil
	}
	out.State, out.Rule, out.Part, out.Match, out.Line, out.LineNo = string(v.State), v.Rule.Name, string(v.Part), v.Rule.Match, v.Line, v.LineNo
	out.Note = "rule " + v.Rule.Describe()
	if v.Rule.SeesTranscript() {
		out.Warning = fmt.Sprintf("rule %s reads the transcript (it names no part of the layout, or the transcript): text the agent or its user wrote can set it off; give it a \"part\" (status, composer, footer, dialog or menu)", v.Rule.Name)
	}
	return out, nil
}

// signalOf is the signal behind a terminal pane's state, from its cause.
func signalOf(st pane.Status, typ string, settle time.Duration) api.Signal {
	sig := api.Signal{At: st.Since, Detail: st.Reason}
	switch {
	case !st.Running():
		sig.Kind = "process"
	case st.Cause == pane.CauseHook:
		sig.Kind, sig.Name = "hook", strings.TrimPrefix(st.Reason, "hook:")
		sig.Detail = fmt.Sprintf("the %s hook %s set it", typ, sig.Name)
	case st.Cause == pane.CauseGateway:
		sig.Kind, sig.Name = "gateway", strings.TrimPrefix(st.Reason, "gateway:")
		sig.Detail = "a model request of the agent went through the gateway (no newer hook said otherwise)"
		if st.Signals.InFlight == 0 {
			sig.Detail = "a model request of the agent went through the gateway; it has ended, and the hooks or the screen rules decide next"
		}
	case st.Cause == pane.CauseScreen:
		sig.Kind, sig.Name = "screen_rule", st.Rule
		sig.Detail = fmt.Sprintf("the screen rule %s matched the screen (no hook had spoken recently)", sig.Name)
	case st.Cause == pane.CauseOutput:
		sig.Kind, sig.Detail = "output", "the program wrote output"
	case st.Cause == pane.CauseQuiet:
		sig.Kind, sig.Detail = "quiet", fmt.Sprintf("the program's output has been quiet for %s", settle)
	case st.Cause == pane.CauseInput:
		sig.Kind, sig.Detail = "input", "input was typed into the pane"
	case st.Cause == pane.CauseStarted || st.Cause == pane.CauseAdopted:
		sig.Kind = "start"
	default:
		sig.Kind = "other"
	}
	return sig
}
