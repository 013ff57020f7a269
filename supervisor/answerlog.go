package supervisor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
)

// Every answer a person gives a pane (answer, a Telegram button) is
// recorded: who, when, what, from where, and the pane's task then. The
// first answer to a notification is the one: a second (another press,
// the terminal after the messenger) is refused.

// answerEvent is the notification an answer resolves: the one named, else
// the pane's open one ("" when none is).
func (s *Supervisor) answerEvent(id string, req api.AnswerRequest) string {
	if req.Event != "" || s.notify == nil {
		return req.Event
	}
	return s.notify.episodeOf(id)
}

// answeredAlready refuses an answer to a notification answered before.
func (s *Supervisor) answeredAlready(ctx context.Context, id, event string) error {
	if event == "" || s.notify == nil {
		return nil
	}
	prev, err := s.notify.store.NotifyAnswers(ctx, id)
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
		return &NotWaitingError{Pane: id, State: pane.Waiting, Msg: fmt.Sprintf("%s was answered already (%s by %s from the %s at %s)",
			id, a.Action, by, a.Via, schema.ParseTime(a.At).Local().Format("15:04:05"))}
	}
	return nil
}

// recordAnswer records an answer given.
func (s *Supervisor) recordAnswer(ctx context.Context, id, event string, req api.AnswerRequest, res api.AnswerResult) {
	if s.notify == nil {
		return
	}
	if event == "" {
		event = "t" + newEventID()[1:]
	}
	detail := strings.Join(res.Keys, " ")
	if req.Action == ActionText {
		detail = req.Text
	}
	a := schema.NotifyAnswer{EventID: event, Pane: id, Task: s.currentTask(ctx, id), Action: req.Action, By: req.By, Via: req.Via,
		At: schema.FormatTime(time.Now()), Detail: s.scrub.String(detail)}
	if _, _, err := s.notify.store.RecordNotifyAnswer(ctx, a); err != nil {
		s.log.WithError(err).WithField("pane", id).Warn("Could not record an answer")
	}
	s.paneChanged(id)
}

// currentTask is the task pane id works on now (0: none).
func (s *Supervisor) currentTask(ctx context.Context, id string) int64 {
	ts, err := s.store.TasksIn(ctx, schema.TaskDelivered)
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

// answersOf are a pane's recorded answers ("" task 0), or a task's.
func (s *Supervisor) answersOf(ctx context.Context, pane string, task int64) []api.Answer {
	if s.notify == nil {
		return nil
	}
	var rows []schema.NotifyAnswer
	var err error
	if task > 0 {
		rows, err = s.notify.store.NotifyAnswersOfTask(ctx, task)
	} else {
		rows, err = s.notify.store.NotifyAnswers(ctx, pane)
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

// withAnswers puts pane's recorded answers on its tasks (those given
// while it worked on each).
func (s *Supervisor) withAnswers(ctx context.Context, pane string, tasks []api.TaskInfo) {
	answers := s.answersOf(ctx, pane, 0)
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
