package agentpane

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
	"github.com/cicy-ai/cicy-agent/supervisor/notify/notifier"
)

// Answering a pane's dialog, the one action behind `cicy-agent answer`
// and a messenger's buttons: approve, deny or pick option N of a CLI
// agent's dialog (its keys from the registry, typed as `send --key` types
// them), restart a pane that stopped, or show its screen.

// The answer actions besides the dialog's (cliagent.ActionApprove, …).
const (
	ActionRestart = "restart"
	ActionScreen  = "screen"
	// ActionText types a free-text reply (and Enter) into a pane that
	// waits on a question.
	ActionText = "text"
)

// NotWaitingError refuses an answer the pane does not wait for: it is not
// waiting on a dialog (or moved on), or not stopped for a restart, or its
// dialog was just answered. The API answers it 409 Conflict.
type NotWaitingError struct {
	Pane  string
	State pane.State
	Msg   string
}

func (e *NotWaitingError) Error() string { return e.Msg }

// As makes the refusal an API error of kind failed (409 Conflict).
func (e *NotWaitingError) As(target any) bool {
	if t, ok := target.(**api.Error); ok {
		*t = &api.Error{Kind: api.KindFailed, Message: e.Msg}
		return true
	}
	return false
}

// Mark is the last dialog answered on a pane, and since when the pane was
// waiting then (its wait): the same dialog in a later wait (the agent asks
// the same again) is a new one. The zero value marks none.
type Mark struct {
	dialog cliagent.Dialog
	action string
	at     time.Time
	since  time.Time
}

// answerRepeat is how long the same dialog, still on the screen in the
// same wait, counts as answered: a second press of one button, or the
// agent not done redrawing, types nothing more.
const answerRepeat = 10 * time.Second

// answerSettle is how long a pane has been waiting before its answer is
// typed: Claude Code ignores a key pressed within a moment of drawing its
// dialog (a guard against typing ahead into it), and its hook says
// waiting before the dialog is drawn. A person is never that quick; a
// script is.
const answerSettle = 1500 * time.Millisecond

// answerKeyGap separates the keys of one answer (Down, Down, Enter), so
// an agent reads each as its own key press.
const answerKeyGap = 80 * time.Millisecond

// Pane is the pane answered, as the supervisor's registry holds it.
type Pane interface {
	ID() string
	Type() string
	// Program is what runs the pane now, read without its lock.
	Program() Program
	// Locked runs f holding the pane's lock on what runs it (a start,
	// restart or kill waits for it), with what runs it then and the last
	// dialog answered on it.
	Locked(f func(p Program, last *Mark) error) error
}

// Program is what runs a pane: its state, its screen and its input.
type Program interface {
	Status() pane.Status
	Screen() (string, error)
	Send(ctx context.Context, req api.SendRequest) (*api.SendResult, error)
}

// Registry is what answering needs of the supervisor's panes.
type Registry interface {
	// AnswerPane is the pane id (an *api.Error when there is none).
	AnswerPane(id string) (Pane, error)
	// Screen is the pane's state and screen, as `cicy-agent screen`
	// shows them.
	Screen(id string) (state, screen string, err error)
	// Restart restarts the pane, as `cicy-agent restart` does.
	Restart(ctx context.Context, id string) error
}

// Record is the notifications' record of answers (notifier.Notifier):
// which notification an answer resolves, whether it was answered before,
// and this answer.
type Record interface {
	AnswerEvent(pane, named string) string
	Unanswered(ctx context.Context, pane, event string) error
	RecordAnswer(ctx context.Context, pane, event string, req api.AnswerRequest, res api.AnswerResult)
}

// Answer answers pane id's dialog (approve, deny, option:N), restarts
// it (restart), types a reply (text) or returns its screen (screen),
// noting the answer in rec. A refusal because the pane does not wait for
// that answer is a *NotWaitingError.
func Answer(ctx context.Context, reg Registry, rec Record, log *logrus.Entry, id string, req api.AnswerRequest) (api.AnswerResult, error) {
	switch req.Via {
	case "":
		req.Via = "terminal"
	case "terminal", "telegram", api.ViaWeb:
	default:
		return api.AnswerResult{}, api.Usagef("unknown via %q: use terminal, telegram or web", req.Via)
	}
	p, err := reg.AnswerPane(id)
	if err != nil {
		return api.AnswerResult{}, err
	}
	res := api.AnswerResult{Pane: p.ID(), Action: req.Action}
	event := ""
	if req.Action != ActionScreen {
		event = rec.AnswerEvent(p.ID(), req.Event)
		if err := answeredAlready(ctx, rec, p.ID(), event); err != nil {
			return api.AnswerResult{}, err
		}
	}
	switch req.Action {
	case ActionScreen:
		if res.State, res.Screen, err = reg.Screen(p.ID()); err != nil {
			return api.AnswerResult{}, err
		}
		return res, nil
	case ActionRestart:
		if err := answerRestart(ctx, reg, p); err != nil {
			return api.AnswerResult{}, err
		}
	case ActionText:
		if err := answerText(ctx, p, req.Text); err != nil {
			return api.AnswerResult{}, err
		}
	default:
		if res.Keys, err = answerDialog(ctx, p, req.Action); err != nil {
			return api.AnswerResult{}, err
		}
	}
	res.State = string(p.Program().Status().State)
	// The answer is given: this is where it is known (who, how, what).
	log.WithFields(logrus.Fields{"pane": p.ID(), "action": req.Action, "by": req.By, "via": req.Via, "keys": res.Keys}).Info("Pane answered")
	rec.RecordAnswer(ctx, p.ID(), event, req, res)
	return res, nil
}

// answeredAlready refuses an answer to a notification answered before.
func answeredAlready(ctx context.Context, rec Record, id, event string) error {
	err := rec.Unanswered(ctx, id, event)
	if done := (*notifier.AnsweredError)(nil); errors.As(err, &done) {
		return &NotWaitingError{Pane: id, State: pane.Waiting, Msg: done.Msg}
	}
	return err
}

// answerRestart restarts a pane that exited, stopped or is in a crash
// loop, as `cicy-agent restart` does.
func answerRestart(ctx context.Context, reg Registry, p Pane) error {
	id := p.ID()
	st := p.Program().Status()
	if st.State != pane.Exited && st.State != pane.Error {
		return &NotWaitingError{Pane: id, State: st.State, Msg: fmt.Sprintf(
			"%s is running (it is %s): restart answers a pane that exited, stopped or is in a crash loop; 'cicy-agent restart %s' restarts it anyway",
			id, st.State, id)}
	}
	return reg.Restart(ctx, id)
}

// answerDialog types the keys that answer a CLI agent's dialog, once the
// pane waits and its screen shows the dialog; it returns the keys.
func answerDialog(ctx context.Context, p Pane, action string) ([]string, error) {
	id, typ := p.ID(), p.Type()
	agent, ok := cliagent.Lookup(typ)
	if !ok {
		if action != cliagent.ActionApprove && action != cliagent.ActionDeny {
			if _, isOpt, _ := cliagent.ParseOption(action); !isOpt {
				return nil, api.Usagef("unknown action %q: use approve, deny, option:N, restart or screen", action)
			}
		}
		return nil, api.Usagef("%s is a %s pane, which has no dialogs to answer; 'cicy-agent send %s' types into it", id, typ, id)
	}
	if _, err := agent.AnswerKeys(action); err != nil {
		return nil, api.Usagef("%v (or restart, screen)", err)
	}
	// A dialog just drawn is given its moment first, holding nothing.
	if err := dialogSettle(ctx, p); err != nil {
		return nil, err
	}
	var keys []string
	err := p.Locked(func(k Program, last *Mark) (err error) {
		keys, err = typeAnswer(ctx, id, agent, k, last, action)
		return err
	})
	return keys, err
}

// typeAnswer types into k, the program of pane id, the keys that answer
// the dialog on its screen with action, and marks it answered in last.
// The caller holds the pane's lock.
func typeAnswer(ctx context.Context, id string, agent cliagent.Kind, k Program, last *Mark, action string) ([]string, error) {
	st := k.Status()
	if st.State != pane.Waiting {
		return nil, &NotWaitingError{Pane: id, State: st.State, Msg: fmt.Sprintf(
			"%s no longer waits for an answer (it is %s); see 'cicy-agent screen %s'", id, st.State, id)}
	}
	screen, err := k.Screen()
	if err != nil {
		return nil, err
	}
	d := agent.ReadDialog(pane.NewLayout(screen, nil).Lines)
	if d.Kind == "" {
		return nil, &NotWaitingError{Pane: id, State: st.State, Msg: fmt.Sprintf(
			"%s no longer waits for an answer (no dialog on its screen); see 'cicy-agent screen %s'", id, id)}
	}
	keys, err := agent.AnswerKeysFor(action, d)
	if err != nil {
		return nil, api.Usagef("%s: %v", id, err)
	}
	if last.action != "" && last.since.Equal(st.Since) && time.Since(last.at) < answerRepeat && sameDialog(last.dialog, d) {
		return nil, &NotWaitingError{Pane: id, State: st.State, Msg: fmt.Sprintf(
			"%s's dialog was answered (%s) %s ago; see 'cicy-agent screen %s'", id, last.action, time.Since(last.at).Round(time.Second), id)}
	}
	for i, key := range keys {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil, api.Failedf("the answer to %s was cut short after %d of its keys (%v); see 'cicy-agent screen %s'", id, i, keys, id)
			case <-time.After(answerKeyGap):
			}
		}
		if _, err := k.Send(ctx, api.SendRequest{Keys: []string{key}, NoEnter: true}); err != nil {
			return nil, err
		}
	}
	*last = Mark{dialog: d, action: action, at: time.Now(), since: st.Since}
	return keys, nil
}

// sameDialog reports whether two dialogs read alike.
func sameDialog(a, b cliagent.Dialog) bool {
	return a.Kind == b.Kind && a.Text == b.Text && slices.Equal(a.Options, b.Options)
}

// answerText types a free-text reply and Enter into a pane that waits.
func answerText(ctx context.Context, p Pane, text string) error {
	text = strings.TrimSpace(text)
	if text == "" || strings.ContainsAny(text, "\x1b\r") {
		return api.Usagef("a text answer is one line of plain text")
	}
	k := p.Program()
	if st := k.Status(); st.State != pane.Waiting {
		return &NotWaitingError{Pane: p.ID(), State: st.State, Msg: fmt.Sprintf(
			"%s no longer waits for an answer (it is %s); see 'cicy-agent screen %s'", p.ID(), st.State, p.ID())}
	}
	_, err := k.Send(ctx, api.SendRequest{Text: strings.ReplaceAll(text, "\n", " ")})
	return err
}

// dialogSettle waits until a waiting pane has been waiting answerSettle
// (a CLI that just drew its dialog may drop a key pressed at once).
func dialogSettle(ctx context.Context, p Pane) error {
	st := p.Program().Status()
	if st.State != pane.Waiting {
		return nil
	}
	if wait := time.Until(st.Since.Add(answerSettle)); wait > 0 {
		select {
		case <-ctx.Done():
			return api.Failedf("gave up answering %s: %v", p.ID(), ctx.Err())
		case <-time.After(wait):
		}
	}
	return nil
}
