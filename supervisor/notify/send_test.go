package notify_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/supervisor/notify"
	"github.com/cicy-ai/cicy-agent/supervisor/notify/notifytest"
)

const (
	hookSecret = "whsec-0123456789abcdef"
	ntfyToken  = "tk_ntfyfaketoken0123456789"
	botToken   = "123456:AAfakeBotTokenXYZ_-987"
)

func approval() notify.Event {
	return notify.Event{
		ID: "ev-1", Event: notify.EventNeedsYou, Kind: notify.KindApproval, Pane: "w1", Title: "coder <fix> & test",
		Team: "demo", Text: "Bash: rm -rf build && make", Resolve: "cicy-agent approve w1",
		Actions: []string{"approve", "deny", "screen"}, At: time.Date(2026, 5, 1, 10, 42, 0, 0, time.UTC),
	}
}

func send(t *testing.T, x *notify.Sender, s notify.Sink, e notify.Event) (notify.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return x.Send(ctx, s, e)
}

func TestWebhookShapeAndSignature(t *testing.T) {
	t.Parallel()
	hook := notifytest.NewWebhook(t)
	s := notify.Sink{Name: "hook", Type: notify.TypeWebhook, URL: hook.URL, Secret: hookSecret}
	res, err := send(t, &notify.Sender{}, s, approval())
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != 200 || res.Body != "ok" {
		t.Errorf("result %+v, want 200 ok", res)
	}
	r := hook.Wait(t, 1, 10*time.Second)[0]
	body := r.JSON(t)
	for _, k := range []string{"id", "event", "kind", "pane", "title", "team", "text", "at"} {
		if _, ok := body[k]; !ok {
			t.Errorf("webhook body has no %q: %s", k, r.Body)
		}
	}
	if body["id"] != "ev-1" || body["event"] != "needs-you" || body["kind"] != "approval" || body["pane"] != "w1" {
		t.Errorf("webhook body %s", r.Body)
	}
	if got := r.Header.Get("X-Cicy-Signature"); !notifytest.VerifySignature(r.Body, hookSecret, got) {
		t.Errorf("signature %q does not verify", got)
	}
	if notifytest.VerifySignature(r.Body, "another secret", r.Header.Get("X-Cicy-Signature")) {
		t.Error("the signature verifies under another secret")
	}
	for k, want := range map[string]string{"X-Cicy-Event": "needs-you", "X-Cicy-Delivery": "ev-1",
		"Content-Type": "application/json", "User-Agent": "cicy-agent"} {
		if got := r.Header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if strings.Contains(string(r.Body), hookSecret) {
		t.Error("the body carries the secret")
	}

	// Without a secret: no signature.
	s.Secret = ""
	if _, err := send(t, &notify.Sender{}, s, approval()); err != nil {
		t.Fatal(err)
	}
	if got := hook.Wait(t, 2, 10*time.Second)[1].Header.Get("X-Cicy-Signature"); got != "" {
		t.Errorf("unsigned webhook sent signature %q", got)
	}
}

func TestNtfyHeaders(t *testing.T) {
	t.Parallel()
	srv := notifytest.NewNtfy(t)
	e := approval()
	e.Pane = "wörker"
	s := notify.Sink{Name: "phone", Type: notify.TypeNtfy, URL: srv.URL, Secret: ntfyToken}
	res, err := send(t, &notify.Sender{}, s, e)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != 200 || !strings.Contains(res.Body, `"event":"message"`) {
		t.Errorf("result %+v", res)
	}
	r := srv.Wait(t, 1, 10*time.Second)[0]
	title, err := new(mime.WordDecoder).DecodeHeader(r.Header.Get("Title"))
	if err != nil || title != "wörker needs you: approval" {
		t.Errorf("Title %q (%q, %v)", r.Header.Get("Title"), title, err)
	}
	for k, want := range map[string]string{"Tags": "warning", "Priority": "4", "Authorization": "Bearer " + ntfyToken} {
		if got := r.Header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	for _, want := range []string{"Bash: rm -rf build && make", "run: cicy-agent approve w1", "ref ev-1", "team demo"} {
		if !strings.Contains(string(r.Body), want) {
			t.Errorf("ntfy body has no %q:\n%s", want, r.Body)
		}
	}
	if r.Path != "/cicy-alerts" || r.Method != http.MethodPost {
		t.Errorf("%s %s, want POST to the topic", r.Method, r.Path)
	}

	e = approval()
	e.Event, e.Kind = notify.EventTaskFailed, notify.EventTaskFailed
	if _, err := send(t, &notify.Sender{}, s, e); err != nil {
		t.Fatal(err)
	}
	r = srv.Wait(t, 2, 10*time.Second)[1]
	if r.Header.Get("Tags") != "x" || r.Header.Get("Priority") != "3" {
		t.Errorf("task-failed tags %q priority %q", r.Header.Get("Tags"), r.Header.Get("Priority"))
	}
}

func TestSlackJSON(t *testing.T) {
	t.Parallel()
	srv := notifytest.NewSlack(t)
	s := notify.Sink{Name: "team-chat", Type: notify.TypeSlack, Secret: srv.URL}
	res, err := send(t, &notify.Sender{}, s, approval())
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != 200 || res.Body != "ok" {
		t.Errorf("result %+v", res)
	}
	r := srv.Wait(t, 1, 10*time.Second)[0]
	text, _ := r.JSON(t)["text"].(string)
	for _, want := range []string{"*w1 needs you: approval*", "run: `cicy-agent approve w1`", "coder &lt;fix&gt; &amp; test", "ref ev-1"} {
		if !strings.Contains(text, want) {
			t.Errorf("slack text has no %q:\n%s", want, text)
		}
	}
	if r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("content type %q", r.Header.Get("Content-Type"))
	}
}

func TestTelegramTextAndButtons(t *testing.T) {
	t.Parallel()
	tg := notifytest.NewTelegram(t, botToken)
	s := notify.Sink{Name: "tg", Type: notify.TypeTelegram, URL: tg.URL, Chat: "-100200300", Secret: botToken}
	res, err := send(t, &notify.Sender{}, s, approval())
	if err != nil {
		t.Fatal(err)
	}
	m := tg.WaitSent(t, `needs you`, 10*time.Second)
	if res.Status != 200 || res.Body != `{"message_id":`+strconv.Itoa(m.ID)+`}` {
		t.Errorf("result %+v, message %d", res, m.ID)
	}
	if m.Chat != "-100200300" || m.ParseMode != "HTML" {
		t.Errorf("chat %q parse mode %q", m.Chat, m.ParseMode)
	}
	for _, want := range []string{"<b>w1 needs you: approval</b>", "coder &lt;fix&gt; &amp; test", "run: <code>cicy-agent approve w1</code>", "\nref ev-1"} {
		if !strings.Contains(m.Text, want) {
			t.Errorf("telegram text has no %q:\n%s", want, m.Text)
		}
	}
	want := []notifytest.Button{{Text: "Approve", Data: "approve|ev-1"}, {Text: "Deny", Data: "deny|ev-1"}, {Text: "Show screen", Data: "screen|ev-1"}}
	if !equalButtons(m.Buttons, want) {
		t.Errorf("buttons %+v, want %+v", m.Buttons, want)
	}
	if strings.Contains(m.ReplyMarkup, "copy_text") {
		t.Errorf("reply markup has a copy_text button: %s", m.ReplyMarkup)
	}

	q := notify.Event{ID: "ev-2", Event: notify.EventNeedsYou, Kind: notify.KindQuestion, Pane: "w2", Text: "Which database?",
		Options: []string{"SQLite, the embedded one that needs no server at all", "PostgreSQL"}, Actions: []string{"option:1", "option:2"}}
	if _, err := send(t, &notify.Sender{}, s, q); err != nil {
		t.Fatal(err)
	}
	m = tg.WaitSent(t, `Which database`, 10*time.Second)
	want = []notifytest.Button{{Text: "1. SQLite, the embedded one t…", Data: "option:1|ev-2"}, {Text: "2. PostgreSQL", Data: "option:2|ev-2"}}
	if !equalButtons(m.Buttons, want) {
		t.Errorf("buttons %+v, want %+v", m.Buttons, want)
	}

	// A button whose data would pass Telegram's 64 bytes is refused, as
	// is an option the event does not have.
	long := approval()
	long.ID = strings.Repeat("x", 60)
	if _, err := send(t, &notify.Sender{}, s, long); !errors.Is(err, notify.ErrInvalid) || !strings.Contains(err.Error(), "64") {
		t.Errorf("a 60-byte event id: %v", err)
	}
	q.Actions = []string{"option:3"}
	if _, err := send(t, &notify.Sender{}, s, q); err == nil || !strings.Contains(err.Error(), "2 options") {
		t.Errorf("option:3 of 2: %v", err)
	}
}

func equalButtons(a, b []notifytest.Button) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// script writes an executable shell script into a temp dir.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "sink.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCommandGetsJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	got := filepath.Join(dir, "event.json")
	prog := script(t, `cat > "$1"; echo "sent $CICY_EVENT $CICY_EVENT_ID secret=${CICY_NOTIFY_SECRET:-none} home=${OPENAI_API_KEY:-unset}"`)
	s := notify.Sink{Name: "desk", Type: notify.TypeCommand, URL: prog + " " + got}
	x := &notify.Sender{Env: []string{"PATH=" + os.Getenv("PATH")}}
	res, err := send(t, x, s, approval())
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != 0 || res.Body != "sent needs-you ev-1 secret=none home=unset\n" {
		t.Errorf("result %+v", res)
	}
	b, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	var e notify.Event
	if err := json.Unmarshal(b, &e); err != nil || e.ID != "ev-1" || e.Pane != "w1" || e.Resolve != "cicy-agent approve w1" {
		t.Errorf("stdin %s (%v)", b, err)
	}

	// A failing command: its status and output.
	s.URL = script(t, `echo "no display"; exit 3`)
	res, err = send(t, x, s, approval())
	if err == nil || res.Status != 3 || !strings.Contains(err.Error(), "status 3") || res.Body != "no display\n" {
		t.Errorf("exit 3: %+v, %v", res, err)
	}

	// A chatty one: its output cut.
	s.URL = script(t, `head -c 100000 /dev/zero | tr '\0' a`)
	res, err = send(t, x, s, approval())
	if err != nil || len(res.Body) > 2048 || !strings.HasSuffix(res.Body, "…") {
		t.Errorf("chatty: %d bytes, %v", len(res.Body), err)
	}
}

// TestCommandHangKilled: a command (and the child it started) that hangs
// past the timeout is ended with its process group.
func TestCommandHangKilled(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	prog := script(t, `sleep 300 & echo $! > "$1"; wait`)
	s := notify.Sink{Name: "slow", Type: notify.TypeCommand, URL: prog + " " + pidFile}
	_, err := send(t, &notify.Sender{Timeout: 500 * time.Millisecond}, s, approval())
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not finish") {
		t.Fatalf("hanging command: %v", err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid := strings.TrimSpace(string(b))
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the hanging command's child %s is still running", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive: the process exists and is not a zombie.
func alive(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

func TestFailThenSucceed(t *testing.T) {
	t.Parallel()
	hook := notifytest.NewWebhook(t)
	hook.Fail(1, 500)
	s := notify.Sink{Name: "hook", Type: notify.TypeWebhook, URL: hook.URL}
	res, err := send(t, &notify.Sender{}, s, approval())
	var he *notify.HTTPError
	if !errors.As(err, &he) || he.Status != 500 || res.Status != 500 || !strings.Contains(err.Error(), "500") || errors.Is(err, notify.ErrInvalid) {
		t.Fatalf("first send: %+v, %v", res, err)
	}
	res, err = send(t, &notify.Sender{}, s, approval())
	if err != nil || res.Status != 200 {
		t.Fatalf("second send: %+v, %v", res, err)
	}
	if n := len(hook.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

// TestSendRefusesInvalid: a sink that does not validate is not sent to,
// and the error says it will not do better sent again.
func TestSendRefusesInvalid(t *testing.T) {
	t.Parallel()
	hook := notifytest.NewWebhook(t)
	s := notify.Sink{Name: "hook", Type: notify.TypeWebhook, URL: hook.URL, Secret: "two\nlines"}
	_, err := send(t, &notify.Sender{}, s, approval())
	if !errors.Is(err, notify.ErrInvalid) || !strings.Contains(err.Error(), "token with newlines") {
		t.Errorf("a secret with a newline: %v", err)
	}
	if n := len(hook.Requests()); n != 0 {
		t.Errorf("%d requests to an invalid sink", n)
	}
}

func TestHangingWebhookTimesOut(t *testing.T) {
	t.Parallel()
	hook := notifytest.NewWebhook(t)
	hook.Hang(10 * time.Minute)
	s := notify.Sink{Name: "hook", Type: notify.TypeWebhook, URL: hook.URL}
	_, err := send(t, &notify.Sender{Timeout: 300 * time.Millisecond}, s, approval())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hanging webhook: %v, want a deadline exceeded", err)
	}
}

// TestSecretsNeverShown: a sink that echoes what it was sent (its path,
// its headers) in a refusal, and one that cannot be reached: no error
// text or Result carries the webhook secret, the ntfy or telegram token
// or the slack URL.
func TestSecretsNeverShown(t *testing.T) {
	t.Parallel()
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		desc, _ := json.Marshal(r.URL.String() + " " + r.Header.Get("Authorization") + " " + string(body))
		_, _ = io.WriteString(w, `{"ok":false,"error_code":401,"description":`+string(desc)+`}`)
	}))
	t.Cleanup(echo.Close)
	gone, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	goneURL := "http://" + gone.Addr().String()
	gone.Close()

	slackPath := "/services/T000/B000/slackHookSecretPart99"
	for _, base := range []string{echo.URL, goneURL} {
		sinks := []notify.Sink{
			{Name: "hook", Type: notify.TypeWebhook, URL: base + "/hook?key=queryKey0123456789", Secret: hookSecret},
			{Name: "ntfy", Type: notify.TypeNtfy, URL: base + "/topic", Secret: ntfyToken},
			{Name: "slack", Type: notify.TypeSlack, Secret: base + slackPath},
			{Name: "tg", Type: notify.TypeTelegram, URL: base, Chat: "42", Secret: botToken},
		}
		for _, s := range sinks {
			res, err := send(t, &notify.Sender{Timeout: 5 * time.Second}, s, approval())
			if err == nil {
				t.Errorf("%s at %s: no error", s.Name, base)
				continue
			}
			if base == echo.URL && !strings.Contains(err.Error(), "401") {
				t.Errorf("%s: error %q does not say 401", s.Name, err)
			}
			for _, secret := range []string{hookSecret, ntfyToken, botToken, "slackHookSecretPart99", "queryKey0123456789"} {
				if strings.Contains(err.Error(), secret) || strings.Contains(res.Body, secret) {
					t.Errorf("%s at %s: the secret shows: error %q, result %q", s.Name, base, err, res.Body)
				}
			}
		}
	}
}
