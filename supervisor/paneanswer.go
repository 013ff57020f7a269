package supervisor

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

// answeredMark is the last dialog answered on a pane, and since when the
// pane was waiting then (its wait): the same dialog in a later wait (the
// agent asks the same again) is a new one.
type answeredMark struct {
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

// Answer answers pane id's dialog (approve, deny, option:N), restarts
// it (restart) or returns its screen (screen). A refusal because the pane
// does not wait for that answer is a *NotWaitingError.
func (s *Supervisor) Answer(ctx context.Context, id string, req api.AnswerRequest) (api.AnswerResult, error) {
	switch req.Via {
	case "":
		req.Via = "terminal"
	case "terminal", "telegram", api.ViaWeb:
	default:
		return api.AnswerResult{}, api.Usagef("unknown via %q: use terminal, telegram or web", req.Via)
	}
	e, err := s.get(id)
	if err != nil {
		return api.AnswerResult{}, err
	}
	res := api.AnswerResult{Pane: e.cfg.ID, Action: req.Action}
	event := ""
	if req.Action != ActionScreen {
		event = s.notify.AnswerEvent(e.cfg.ID, req.Event)
		if err := s.answeredAlready(ctx, e.cfg.ID, event); err != nil {
			return api.AnswerResult{}, err
		}
	}
	switch req.Action {
	case ActionScreen:
		sc, err := s.Screen(e.cfg.ID, 0)
		if err != nil {
			return api.AnswerResult{}, err
		}
		res.State, res.Screen = sc.State, sc.Screen
		return res, nil
	case ActionRestart:
		if err := s.answerRestart(ctx, e); err != nil {
			return api.AnswerResult{}, err
		}
	case ActionText:
		if err := s.answerText(ctx, e, req.Text); err != nil {
			return api.AnswerResult{}, err
		}
	default:
		if res.Keys, err = s.answerDialog(ctx, e, req.Action); err != nil {
			return api.AnswerResult{}, err
		}
	}
	res.State = string(e.status().State)
	// The answer is given: this is where it is known (who, how, what).
	s.log.WithFields(logrus.Fields{"pane": e.cfg.ID, "action": req.Action, "by": req.By, "via": req.Via, "keys": res.Keys}).Info("Pane answered")
	s.notify.RecordAnswer(ctx, e.cfg.ID, event, req, res)
	return res, nil
}

// answeredAlready refuses an answer to a notification answered before.
func (s *Supervisor) answeredAlready(ctx context.Context, id, event string) error {
	err := s.notify.Unanswered(ctx, id, event)
	if done := (*notifier.AnsweredError)(nil); errors.As(err, &done) {
		return &NotWaitingError{Pane: id, State: pane.Waiting, Msg: done.Msg}
	}
	return err
}

// answerRestart restarts a pane that exited, stopped or is in a crash
// loop, as `cicy-agent restart` does.
func (s *Supervisor) answerRestart(ctx context.Context, e *entry) error {
	st := e.status()
	if st.State != pane.Exited && st.State != pane.Error {
		return &NotWaitingError{Pane: e.cfg.ID, State: st.State, Msg: fmt.Sprintf(
			"%s is running (it is %s): restart answers a pane that exited, stopped or is in a crash loop; 'cicy-agent restart %s' restarts it anyway",
			e.cfg.ID, st.State, e.cfg.ID)}
	}
	return s.RestartPane(ctx, e.cfg.ID, false)
}

// answerDialog types the keys that answer a CLI agent's dialog, once the
// pane waits and its screen shows the dialog; it returns the keys.
func (s *Supervisor) answerDialog(ctx context.Context, e *entry, action string) ([]string, error) {
	agent, ok := cliagent.Lookup(e.cfg.Type)
	if !ok {
		if action != cliagent.ActionApprove && action != cliagent.ActionDeny {
			if _, isOpt, _ := cliagent.ParseOption(action); !isOpt {
				return nil, api.Usagef("unknown action %q: use approve, deny, option:N, restart or screen", action)
			}
		}
		return nil, api.Usagef("%s is a %s pane, which has no dialogs to answer; 'cicy-agent send %s' types into it", e.cfg.ID, e.cfg.Type, e.cfg.ID)
	}
	if _, err := agent.AnswerKeys(action); err != nil {
		return nil, api.Usagef("%v (or restart, screen)", err)
	}
	// A dialog just drawn is given its moment first, holding nothing.
	if err := dialogSettle(ctx, e); err != nil {
		return nil, err
	}
	e.op.Lock()
	defer e.op.Unlock()
	k := e.kind()
	st := k.Status()
	if st.State != pane.Waiting {
		return nil, &NotWaitingError{Pane: e.cfg.ID, State: st.State, Msg: fmt.Sprintf(
			"%s no longer waits for an answer (it is %s); see 'cicy-agent screen %s'", e.cfg.ID, st.State, e.cfg.ID)}
	}
	screen, err := k.Screen()
	if err != nil {
		return nil, err
	}
	d := agent.ReadDialog(pane.NewLayout(screen, nil).Lines)
	if d.Kind == "" {
		return nil, &NotWaitingError{Pane: e.cfg.ID, State: st.State, Msg: fmt.Sprintf(
			"%s no longer waits for an answer (no dialog on its screen); see 'cicy-agent screen %s'", e.cfg.ID, e.cfg.ID)}
	}
	keys, err := agent.AnswerKeysFor(action, d)
	if err != nil {
		return nil, api.Usagef("%s: %v", e.cfg.ID, err)
	}
	if last := e.answered; last.action != "" && last.since.Equal(st.Since) && time.Since(last.at) < answerRepeat && sameDialog(last.dialog, d) {
		return nil, &NotWaitingError{Pane: e.cfg.ID, State: st.State, Msg: fmt.Sprintf(
			"%s's dialog was answered (%s) %s ago; see 'cicy-agent screen %s'", e.cfg.ID, last.action, time.Since(last.at).Round(time.Second), e.cfg.ID)}
	}
	for i, key := range keys {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil, api.Failedf("the answer to %s was cut short after %d of its keys (%v); see 'cicy-agent screen %s'", e.cfg.ID, i, keys, e.cfg.ID)
			case <-time.After(answerKeyGap):
			}
		}
		if _, err := k.Send(ctx, api.SendRequest{Keys: []string{key}, NoEnter: true}); err != nil {
			return nil, err
		}
	}
	e.answered = answeredMark{dialog: d, action: action, at: time.Now(), since: st.Since}
	return keys, nil
}

// sameDialog reports whether two dialogs read alike.
func sameDialog(a, b cliagent.Dialog) bool {
	return a.Kind == b.Kind && a.Text == b.Text && slices.Equal(a.Options, b.Options)
}

// answerText types a free-text reply and Enter into a pane that waits.
func (s *Supervisor) answerText(ctx context.Context, e *entry, text string) error {
	text = strings.TrimSpace(text)
	if text == "" || strings.ContainsAny(text, "\x1b\r") {
		return api.Usagef("a text answer is one line of plain text")
	}
	if st := e.status(); st.State != pane.Waiting {
		return &NotWaitingError{Pane: e.cfg.ID, State: st.State, Msg: fmt.Sprintf(
			"%s no longer waits for an answer (it is %s); see 'cicy-agent screen %s'", e.cfg.ID, st.State, e.cfg.ID)}
	}
	_, err := e.kind().Send(ctx, api.SendRequest{Text: strings.ReplaceAll(text, "\n", " ")})
	return err
}

// dialogSettle waits until a waiting pane has been waiting answerSettle
// (a CLI that just drew its dialog may drop a key pressed at once).
func dialogSettle(ctx context.Context, e *entry) error {
	st := e.status()
	if st.State != pane.Waiting {
		return nil
	}
	if wait := time.Until(st.Since.Add(answerSettle)); wait > 0 {
		select {
		case <-ctx.Done():
			return api.Failedf("gave up answering %s: %v", e.cfg.ID, ctx.Err())
		case <-time.After(wait):
		}
	}
	return nil
}
