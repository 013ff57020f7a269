package notify_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/supervisor/notify"
	"github.com/cicy-ai/cicy-agent/supervisor/notify/notifytest"
)

// listening runs Listen on the fake until the test ends, handing each
// update to a channel and replying with reply(u).
type listening struct {
	updates chan notify.Update
	mu      sync.Mutex
	errs    []error
}

func listen(t *testing.T, s notify.Sink, offset int64, reply func(notify.Update) string) *listening {
	t.Helper()
	l := &listening{updates: make(chan notify.Update, 16)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	x := &notify.Sender{Poll: 5 * time.Second, Timeout: 5 * time.Second}
	go func() {
		done <- x.Listen(ctx, s, offset, func(_ context.Context, u notify.Update) string {
			l.updates <- u
			return reply(u)
		}, func(err error) {
			l.mu.Lock()
			l.errs = append(l.errs, err)
			l.mu.Unlock()
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Listen ended with %v, want context canceled", err)
		}
	})
	return l
}

func (l *listening) next(t *testing.T) notify.Update {
	t.Helper()
	select {
	case u := <-l.updates:
		return u
	case <-time.After(20 * time.Second):
		t.Fatal("no update handled within 20s")
	}
	return notify.Update{}
}

func (l *listening) waitErr(t *testing.T) error {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		l.mu.Lock()
		if len(l.errs) > 0 {
			err := l.errs[0]
			l.mu.Unlock()
			return err
		}
		l.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no error reported within 20s")
	return nil
}

func TestListenPressAnswered(t *testing.T) {
	t.Parallel()
	tg := notifytest.NewTelegram(t, botToken)
	s := notify.Sink{Name: "tg", Type: notify.TypeTelegram, URL: tg.URL, Chat: "42", Secret: botToken}
	if _, err := send(t, &notify.Sender{}, s, approval()); err != nil {
		t.Fatal(err)
	}
	sent := tg.WaitSent(t, "needs you", 10*time.Second)
	l := listen(t, s, 0, func(u notify.Update) string {
		if u.Action == "" {
			return "refused: not a button this supervisor sent"
		}
		return "approved " + u.EventID
	})

	cb := tg.Press(42, "alice", sent.Buttons[0].Data, sent.ID)
	u := l.next(t)
	if u.Action != "approve" || u.EventID != "ev-1" || u.Chat != "42" || u.From != "alice" || u.CallbackID != cb || u.MessageID != sent.ID || u.ID == 0 {
		t.Errorf("press: %+v", u)
	}
	if a := tg.WaitAnswers(t, 1, 10*time.Second)[0]; a.CallbackID != cb || a.Text != "approved ev-1" {
		t.Errorf("answer %+v", a)
	}

	// Forged or odd data: no action, refused by the handler.
	for i, data := range []string{"approve", "rm -rf /|ev-1", "option:0|ev-1", "approve|", "approve|a|b"} {
		tg.Press(42, "mallory", data, sent.ID)
		if u := l.next(t); u.Action != "" || u.EventID != "" || u.Data != data {
			t.Errorf("data %q: %+v", data, u)
		}
		if a := tg.WaitAnswers(t, i+2, 10*time.Second)[i+1]; !strings.HasPrefix(a.Text, "refused") {
			t.Errorf("data %q answered %q", data, a.Text)
		}
	}
}

func TestListenReplyCarriesRef(t *testing.T) {
	t.Parallel()
	tg := notifytest.NewTelegram(t, botToken)
	s := notify.Sink{Name: "tg", Type: notify.TypeTelegram, URL: tg.URL, Chat: "42", Secret: botToken}
	q := notify.Event{ID: "ev-7", Event: notify.EventNeedsYou, Kind: notify.KindQuestion, Pane: "w2", Text: "Which port?"}
	if _, err := send(t, &notify.Sender{}, s, q); err != nil {
		t.Fatal(err)
	}
	sent := tg.WaitSent(t, "Which port", 10*time.Second)
	l := listen(t, s, 0, func(u notify.Update) string {
		if u.ReplyTo == "" {
			return ""
		}
		return "told " + u.ReplyTo
	})

	tg.Reply(42, "alice", "8080, please", sent.Text)
	u := l.next(t)
	if u.Text != "8080, please" || u.ReplyTo != "ev-7" || u.Chat != "42" || u.From != "alice" || u.Action != "" {
		t.Errorf("reply: %+v", u)
	}
	m := tg.WaitSent(t, "^told ev-7$", 10*time.Second)
	if m.Chat != "42" || m.ReplyTo != u.MessageID {
		t.Errorf("answer to the reply: %+v (reply was message %d)", m, u.MessageID)
	}

	// A message replying to nothing: no ref, and no answer (reply "").
	tg.Reply(42, "alice", "hello", "")
	if u := l.next(t); u.ReplyTo != "" || u.Text != "hello" {
		t.Errorf("plain message: %+v", u)
	}
	if n := len(tg.Sent()); n != 2 {
		t.Errorf("%d messages sent, want 2 (no answer to an empty reply)", n)
	}
}

// TestListenOffset: polling starts after the offset given (the last
// update handled), and goes on after each update handled.
func TestListenOffset(t *testing.T) {
	t.Parallel()
	tg := notifytest.NewTelegram(t, botToken)
	s := notify.Sink{Name: "tg", Type: notify.TypeTelegram, URL: tg.URL, Chat: "42", Secret: botToken}
	tg.Press(42, "alice", "deny|old", 1)
	tg.Press(42, "alice", "approve|new", 1)
	// The first press (update 100) was handled before a restart.
	l := listen(t, s, 100, func(notify.Update) string { return "" })
	u := l.next(t)
	if u.ID != 101 || u.EventID != "new" {
		t.Errorf("first update after offset 100: %+v", u)
	}
	if o := tg.Offsets(); len(o) == 0 || o[0] != 101 {
		t.Errorf("getUpdates offsets %v, want 101 first", o)
	}
}

func TestListenWrongToken(t *testing.T) {
	t.Parallel()
	tg := notifytest.NewTelegram(t, botToken)
	wrong := "999999:AAwrongTokenWrongToken"
	s := notify.Sink{Name: "tg", Type: notify.TypeTelegram, URL: tg.URL, Chat: "42", Secret: wrong}
	l := listen(t, s, 0, func(notify.Update) string { return "" })
	err := l.waitErr(t)
	var he *notify.HTTPError
	if !errors.As(err, &he) || he.Status != 401 || !strings.Contains(err.Error(), "401") {
		t.Errorf("wrong token: %v", err)
	}
	if strings.Contains(err.Error(), wrong) {
		t.Errorf("the error shows the token: %v", err)
	}

	if err := (&notify.Sender{}).Listen(context.Background(), notify.Sink{Name: "h", Type: notify.TypeWebhook, URL: tg.URL}, 0, nil, nil); err == nil {
		t.Error("Listen on a webhook sink: no error")
	}
}
