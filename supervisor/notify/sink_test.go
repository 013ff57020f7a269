package notify_test

import (
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/supervisor/notify"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	ok := []notify.Sink{
		{Name: "hook_1", Type: "webhook", URL: "https://example.com/hook", Secret: "s3cret"},
		{Name: "hook", Type: "webhook", URL: "http://127.0.0.1:9/x", Events: []string{"needs-you:approval", "goal-done"}},
		{Name: "phone", Type: "ntfy", URL: "https://ntfy.sh/cicy-alerts"},
		{Name: "chat", Type: "slack", URL: "https://hooks.slack.com/services/T/B/X"},
		{Name: "chat", Type: "slack", Secret: "https://hooks.slack.com/services/T/B/X"},
		{Name: "tg", Type: "telegram", Chat: "-100123", Secret: "123:AA-bb_CC"},
		{Name: "desk", Type: "command", URL: "sh -c true"},
		{Name: "desk", Type: "command", URL: "/bin/sh -c true"},
	}
	for _, s := range ok {
		if err := s.Validate(); err != nil {
			t.Errorf("%+v: %v", s, err)
		}
	}
	bad := []struct {
		s    notify.Sink
		want string
	}{
		{notify.Sink{Name: "", Type: "webhook", URL: "https://x"}, "needs a name"},
		{notify.Sink{Name: "a b", Type: "webhook", URL: "https://x"}, "only letters"},
		{notify.Sink{Name: strings.Repeat("a", 41), Type: "webhook", URL: "https://x"}, "longer than 40"},
		{notify.Sink{Name: "x", Type: "email", URL: "https://x"}, `unknown type "email"`},
		{notify.Sink{Name: "x", Type: "webhook", URL: "ftp://example.com/x"}, "not http(s)"},
		{notify.Sink{Name: "x", Type: "webhook", URL: "example.com/x"}, "not http(s)"},
		{notify.Sink{Name: "x", Type: "webhook", URL: "https:///x"}, "names no host"},
		{notify.Sink{Name: "x", Type: "webhook", URL: ""}, "no url"},
		{notify.Sink{Name: "x", Type: "webhook", URL: "https://x", Secret: "abc\n"}, "token with newlines"},
		{notify.Sink{Name: "x", Type: "ntfy", URL: "https://x/t", Secret: "tk_abc\r\n"}, "token with newlines"},
		{notify.Sink{Name: "x", Type: "ntfy", URL: "https://ntfy.sh/"}, "names no topic"},
		{notify.Sink{Name: "x", Type: "telegram", Chat: "42", Secret: "123:AB\nC"}, "token with newlines"},
		{notify.Sink{Name: "x", Type: "telegram", Chat: "42", Secret: "123:AB/../C"}, "a token never has"},
		{notify.Sink{Name: "x", Type: "telegram", Chat: "42"}, "needs its bot token"},
		{notify.Sink{Name: "x", Type: "telegram", Secret: "1:A"}, "needs its chat id"},
		{notify.Sink{Name: "x", Type: "telegram", Chat: "@me", Secret: "1:A"}, "not a chat id"},
		{notify.Sink{Name: "x", Type: "telegram", URL: "file:///etc", Chat: "1", Secret: "1:A"}, "not http(s)"},
		{notify.Sink{Name: "x", Type: "slack", URL: "https://a/1", Secret: "https://a/2"}, "give it once"},
		{notify.Sink{Name: "x", Type: "command", URL: ""}, "needs a program"},
		{notify.Sink{Name: "x", Type: "command", URL: "no-such-program-cicy-test"}, "not found"},
		{notify.Sink{Name: "x", Type: "command", URL: "./run.sh"}, "absolute path"},
		{notify.Sink{Name: "x", Type: "webhook", URL: "https://x", Events: []string{"needs-you", "task-done"}}, `unknown event "task-done"`},
		{notify.Sink{Name: "x", Type: "webhook", URL: "https://x", Events: []string{"needs-you:appr0val"}}, "letters and '-'"},
	}
	for _, c := range bad {
		err := c.s.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error with %q", c.s, err, c.want)
		}
		if err != nil && c.s.Secret != "" && strings.Contains(err.Error(), c.s.Secret) {
			t.Errorf("%+v: the error shows the secret: %v", c.s, err)
		}
	}
}

func TestWithDefaults(t *testing.T) {
	t.Parallel()
	s := notify.Sink{Name: "tg", Type: "telegram"}.WithDefaults()
	if s.URL != "https://api.telegram.org" {
		t.Errorf("telegram url %q", s.URL)
	}
	if s := (notify.Sink{Type: "webhook"}).WithDefaults(); s.URL != "" {
		t.Errorf("webhook url %q", s.URL)
	}
}

func TestWants(t *testing.T) {
	t.Parallel()
	appr := notify.Event{Event: "needs-you", Kind: "approval"}
	quest := notify.Event{Event: "needs-you", Kind: "question"}
	failed := notify.Event{Event: "task-failed", Kind: "task-failed"}
	test := notify.Event{Event: "test", Kind: "test"}
	all := notify.Sink{}
	some := notify.Sink{Events: []string{"needs-you:approval", "task-failed"}}
	for _, c := range []struct {
		s    notify.Sink
		e    notify.Event
		want bool
	}{
		{all, appr, true}, {all, failed, true},
		{some, appr, true}, {some, quest, false}, {some, failed, true}, {some, test, true},
		{notify.Sink{Events: []string{"goal-done"}}, test, true},
		{notify.Sink{Events: []string{"needs-you"}}, quest, true},
		{notify.Sink{Events: []string{"goal-done"}}, failed, false},
	} {
		if got := c.s.Wants(c.e); got != c.want {
			t.Errorf("%v wants %s:%s = %v", c.s.Events, c.e.Event, c.e.Kind, got)
		}
	}
}

func TestMask(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"": "", "short": "****", "123456:AAfakeBotToken": "1234…en"} {
		if got := notify.Mask(in); got != want {
			t.Errorf("Mask(%q) = %q, want %q", in, got, want)
		}
	}
	for _, c := range []struct {
		s    notify.Sink
		want string
	}{
		{notify.Sink{Type: "slack", URL: "https://hooks.slack.com/services/T/B/secretpart"}, "https://hooks.slack.com/…"},
		{notify.Sink{Type: "slack", Secret: "https://hooks.slack.com/services/T/B/secretpart"}, "https://hooks.slack.com/…"},
		{notify.Sink{Type: "telegram"}, "https://api.telegram.org"},
		{notify.Sink{Type: "webhook", URL: "https://bob:pw@example.com/hook?key=k#f"}, "https://example.com/hook"},
		{notify.Sink{Type: "ntfy", URL: "https://ntfy.sh/cicy-alerts-9f3k2"}, "https://ntfy.sh/cicy…k2"},
		{notify.Sink{Type: "command", URL: "notify-send -u critical"}, "notify-send -u critical"},
	} {
		if got := c.s.MaskedURL(); got != c.want {
			t.Errorf("%s %q masked %q, want %q", c.s.Type, c.s.URL, got, c.want)
		}
	}
}

func TestFormat(t *testing.T) {
	t.Parallel()
	title, body := notify.Format(approval())
	if title != "w1 needs you: approval" {
		t.Errorf("title %q", title)
	}
	want := "w1 (coder <fix> & test, team demo) waits for your approval:\nBash: rm -rf build && make\nrun: cicy-agent approve w1\nref ev-1"
	if body != want {
		t.Errorf("body\n%s\nwant\n%s", body, want)
	}
	if got := notify.RefOf(body); got != "ev-1" {
		t.Errorf("RefOf = %q", got)
	}

	e := notify.Event{ID: "ev-9", Event: notify.EventTaskFailed, Kind: notify.EventTaskFailed, Pane: "w3", Task: 12,
		Text: "exit status 2", Resolve: "cicy-agent explain w3", Count: 5}
	title, body = notify.Format(e)
	if title != "task 12 failed (5 times)" || !strings.HasPrefix(body, "5 events like this since the last message; the latest: task 12 of w3 failed\n") {
		t.Errorf("digest: %q\n%s", title, body)
	}
	long := approval()
	long.Text = strings.Repeat("y", 5000)
	if _, body := notify.Format(long); len(body) > 1200 {
		t.Errorf("a long text is %d bytes in the body", len(body))
	}
	for _, ev := range []string{notify.EventGoalDone, notify.EventBudgetReached, notify.EventNodeDown, notify.EventTest} {
		title, body := notify.Format(notify.Event{ID: "x", Event: ev, Pane: "m1", Node: "n2", Team: "demo"})
		if title == "" || !strings.HasSuffix(body, "ref x") {
			t.Errorf("%s: %q\n%s", ev, title, body)
		}
	}
}
