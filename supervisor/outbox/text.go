package outbox

import (
	"fmt"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/schema"
)

// Message is what a worker receives for t (a cicy pane adds the 📮
// stamp naming the sender).
func Message(t schema.Task) string { return fmt.Sprintf("task %d: %s", t.ID, t.Text) }

// notifyBody bounds the result or error a full notification carries, in
// runes.
const notifyBody = 2000

// Notification is the line that tells a master t ended: the head alone
// ("🔔 [w-2] task 7 → done", with the change it left on its worker's
// branch: "· 3 files +42 −7 on cicy/w-2"), typed into a terminal master,
// or with the result or error (cut at 2,000 runes), which a cicy master
// gets.
func Notification(t schema.Task, full bool) string {
	head := fmt.Sprintf("🔔 [%s] task %d → %s", t.To, t.ID, t.Status)
	if t.Branch != "" {
		head += " · " + t.Work.Stat()
	}
	if !full {
		return head
	}
	body := t.Result
	if t.Status == api.TaskFailed {
		body = t.Error
	}
	if r := []rune(body); len(r) > notifyBody {
		body = string(r[:notifyBody]) + "…"
	}
	return head + ": " + body
}
