package topology

import (
	"fmt"
	"strings"
	"time"
)

// SinkState is what a notification sink did, as status and the dashboard
// show it: the last message sent, and since when it fails with what.
type SinkState struct {
	Name         string     `json:"name"`
	Type         string     `json:"type"`
	LastSent     *time.Time `json:"last_sent,omitempty"`
	FailingSince *time.Time `json:"failing_since,omitempty"`
	LastError    string     `json:"last_error,omitempty"`
	LastStatus   int        `json:"last_status,omitempty"`
	Pending      int        `json:"pending"`
}

// Line is the sink as status prints it: "notify: telegram failing since
// 10:42 — 401 Unauthorized", or "notify: ops (webhook) last sent 10:40".
func (s SinkState) Line() string {
	name := s.Name
	if s.Type != "" && s.Type != s.Name {
		name += " (" + s.Type + ")"
	}
	switch {
	case s.FailingSince != nil:
		why := FirstLine(s.LastError)
		if s.LastStatus > 0 && !strings.Contains(why, fmt.Sprint(s.LastStatus)) {
			why = fmt.Sprintf("%d %s", s.LastStatus, why)
		}
		line := fmt.Sprintf("notify: %s failing since %s — %s", name, s.FailingSince.Local().Format("15:04"), strings.TrimSpace(why))
		if s.Pending > 0 {
			line += fmt.Sprintf(" (%d waiting)", s.Pending)
		}
		return line
	case s.LastSent != nil:
		return fmt.Sprintf("notify: %s last sent %s", name, s.LastSent.Local().Format("15:04:05"))
	}
	return fmt.Sprintf("notify: %s nothing sent yet", name)
}
