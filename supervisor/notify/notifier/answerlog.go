package notifier

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/schema"
)

// Every answer a person gives a pane (answer, a Telegram button) is
// recorded: who, when, what, from where, and the pane's task then. The
// first answer to a notification is the one: a second (another press,
// the terminal after the messenger) is refused.

// actionText is the answer that types a free-text reply (the
// supervisor's ActionText): its detail is the text, not the keys.
const actionText = "text"

// AnswerEvent is the notification an answer resolves: the one named,
// else the pane's open one ("" when none is).
func (n *Notifier) AnswerEvent(pane, named string) string {
	if named != "" || n == nil {
		return named
	}
	return n.EpisodeOf(pane)
}

// AnsweredError refuses an answer to a notification answered before.
type AnsweredError struct {
	Pane string
	Msg  string
}

func (e *AnsweredError) Error() string { return e.Msg }

// Unanswered refuses (an *AnsweredError) an answer to a notification
// answered before.
func (n *Notifier) Unanswered(ctx context.Context, pane, event string) error {
	if event == "" || n == nil {
		return nil
	}
	prev, err := n.store.NotifyAnswers(ctx, pane)
	if err != nil {
		return err
	}
	for _, a := range prev {
		if a.EventID != event {
			continue
		}
		by := a.By
		if by == "" {
			by = "someone"
		}
		return &AnsweredError{Pane: pane, Msg: fmt.Sprintf("%s was answered already (%s by %s from the %s at %s)",
			pane, a.Action, by, a.Via, schema.ParseTime(a.At).Local().Format("15:04:05"))}
	}
	return nil
}

// RecordAnswer records an answer given.
func (n *Notifier) RecordAnswer(ctx context.Context, pane, event string, req api.AnswerRequest, res api.AnswerResult) {
	if n == nil {
		return
	}
	if event == "" {
		event = "t" + newEventID()[1:]
	}
	detail := strings.Join(res.Keys, " ")
	if req.Action == actionText {
		detail = req.Text
	}
	a := schema.NotifyAnswer{EventID: event, Pane: pane, Task: n.currentTask(ctx, pane), Action: req.Action, By: req.By, Via: req.Via,
		At: schema.FormatTime(time.Now()), Detail: n.cfg.Scrub(detail)}
	if _, _, err := n.store.RecordNotifyAnswer(ctx, a); err != nil {
		n.cfg.Log.WithError(err).WithField("pane", pane).Warn("Could not record an answer")
	}
	n.hub.PaneChanged(pane)
}

// currentTask is the task pane id works on now (0: none).
func (n *Notifier) currentTask(ctx context.Context, id string) int64 {
	ts, err := n.store.TasksIn(ctx, api.TaskDelivered)
	if err != nil {
		return 0
	}
	for _, t := range ts {
		if t.To == id {
			return t.ID
		}
	}
	return 0
}

// Answers are a pane's recorded answers ("" task 0), or a task's.
func (n *Notifier) Answers(ctx context.Context, pane string, task int64) []api.Answer {
	if n == nil {
		return nil
	}
	var rows []schema.NotifyAnswer
	var err error
	if task > 0 {
		rows, err = n.store.NotifyAnswersOfTask(ctx, task)
	} else {
		rows, err = n.store.NotifyAnswers(ctx, pane)
	}
	if err != nil {
		return nil
	}
	out := make([]api.Answer, 0, len(rows))
	for _, r := range rows {
		out = append(out, api.Answer{Event: r.EventID, Pane: r.Pane, Task: r.Task, Action: r.Action, By: r.By, Via: r.Via, At: schema.ParseTime(r.At), Detail: r.Detail})
	}
	return out
}

// WithAnswers puts pane's recorded answers on its tasks (those given
// while it worked on each).
func (n *Notifier) WithAnswers(ctx context.Context, pane string, tasks []api.TaskInfo) {
	answers := n.Answers(ctx, pane, 0)
	if len(answers) == 0 {
		return
	}
	for i := range tasks {
		for _, a := range answers {
			if a.Task == tasks[i].ID {
				tasks[i].Answers = append(tasks[i].Answers, a)
			}
		}
	}
}
