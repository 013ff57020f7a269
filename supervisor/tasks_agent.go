package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
)

// Tasks to CLI agent panes (issue 6): typed into the idle agent (bracketed
// paste for several lines; a short line pointing at a task file when the
// text is long), confirmed by the agent's prompt-submit signal or a busy
// screen, and ended by its Stop signal, whose last assistant message is
// the result. When no hook speaks, the screen rules' idle ends it.

// agentConfirm is how long a typed task may take to be taken up; agentReEnter
// is when a second Enter is sent (Codex can turn the first into a newline).
const (
	agentConfirm = 20 * time.Second
	agentReEnter = 3 * time.Second
)

// Task text longer than this is written to a file in the workspace; the
// agent gets a line pointing at it (Claude wraps long pastes in a
// <pasted_content> block it treats as data, not as the request).
const (
	agentInlineBytes = 1500
	agentInlineLines = 6
)

// agentTx is a task typed into a CLI agent.
type agentTx struct {
	at          time.Time
	confirmed   bool
	confirmedAt time.Time
	typed       string // what was typed, for the screen fallback's result
}

// agentPrompt is what is typed for a task.
func agentPrompt(t schema.Task, workspace string) (string, error) {
	msg := taskMessage(t)
	if len(msg) <= agentInlineBytes && strings.Count(msg, "\n") < agentInlineLines {
		return msg, nil
	}
	path := filepath.Join(workspace, ".cicy", "tasks", fmt.Sprintf("task-%d.md", t.ID))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("create the task folder: %w", err)
	}
	if err := os.WriteFile(path, []byte(t.Text+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write the task file: %w", err)
	}
	return fmt.Sprintf("task %d: read the file %s and do what it says.", t.ID, path), nil
}

// sendAgentTask types a task into an idle CLI agent and watches for it
// to be taken up.
func (o *outbox) sendAgentTask(t schema.Task, e *entry, p terminal) {
	fail := func(why string) {
		o.move(t.ID, schema.TaskChange{From: schema.TaskDelivered, To: schema.TaskFailed, Error: why, Reason: "delivery failed"})
	}
	msg, err := agentPrompt(t, e.cfg.Workspace)
	if err != nil {
		fail(err.Error())
		return
	}
	at := time.Now()
	o.mu.Lock()
	o.agent[t.ID] = agentTx{at: at, typed: msg}
	o.mu.Unlock()
	if err := p.SendText(msg, true); err != nil {
		o.forgetAgent(t.ID)
		fail("could not type into the agent: " + err.Error())
		return
	}
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		reEntered := false
		deadline := at.Add(agentConfirm)
		for time.Now().Before(deadline) {
			st := p.Status()
			_, _, ended := e.hooks.turnEnd(at)
			taken := e.hooks.promptSince(at) || ended || st.State == pane.Waiting ||
				(st.State == pane.Busy && st.Reason != "input" && !st.Since.Before(at))
			if !st.Running() {
				o.Kick() // checkAgentDone fails it
				return
			}
			if taken {
				o.mu.Lock()
				if tx, ok := o.agent[t.ID]; ok {
					tx.confirmed, tx.confirmedAt = true, time.Now()
					o.agent[t.ID] = tx
				}
				o.mu.Unlock()
				o.Kick()
				return
			}
			if !reEntered && time.Since(at) >= agentReEnter {
				reEntered = true
				_ = p.SendText("", true)
			}
			select {
			case <-o.quit:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
		o.forgetAgent(t.ID)
		fail(fmt.Sprintf("the agent did not take the typed task within %s (no prompt-submit signal, no busy screen)", agentConfirm))
	}()
}

func (o *outbox) forgetAgent(id int64) {
	o.mu.Lock()
	delete(o.agent, id)
	o.mu.Unlock()
}

// checkAgentDone settles a delivered CLI-agent task: by the agent's turn
// end signal, or, with no hook, by its screen turning idle.
func (o *outbox) checkAgentDone(t schema.Task, e *entry) {
	o.mu.Lock()
	tx, ok := o.agent[t.ID]
	o.mu.Unlock()
	if !ok {
		return
	}
	st := e.status()
	result, failed, ended := e.hooks.turnEnd(tx.at)
	switch {
	case ended && failed != "":
		o.move(t.ID, schema.TaskChange{From: schema.TaskDelivered, To: schema.TaskFailed, Error: failed, Reason: "the agent's turn failed (hook)"})
	case ended:
		o.move(t.ID, schema.TaskChange{From: schema.TaskDelivered, To: schema.TaskDone, Result: result, Reason: "the agent's turn ended (hook)"})
	case !st.Running():
		o.move(t.ID, schema.TaskChange{From: schema.TaskDelivered, To: schema.TaskFailed, Error: "the agent's process ended: " + st.Reason, Reason: "worker exited"})
	case tx.confirmed && st.State == pane.Idle && strings.HasPrefix(st.Reason, "screen:") && st.Since.After(tx.confirmedAt):
		e.op.Lock()
		p := e.proc
		e.op.Unlock()
		result := ""
		if p != nil {
			result = outputAfter(p.Screen(), tx.typed)
		}
		o.move(t.ID, schema.TaskChange{From: schema.TaskDelivered, To: schema.TaskDone, Result: result, Reason: "the agent's screen shows it idle again (" + st.Reason + "; no hook came)"})
	default:
		return
	}
	o.forgetAgent(t.ID)
}
