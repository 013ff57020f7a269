package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/supervisor/notify"
	"github.com/cicy-ai/cicy-agent/supervisor/notify/notifytest"
	"github.com/cicy-ai/cicy-agent/topology"
)

const (
	testHookSecret = "whsec-0123456789abcdef"
	testBotToken   = "7000001:AAE-test-bot-token-0123456789"
	testChat       = "4242"
)

// sinks is a home's five sinks, each at its fake.
type sinks struct {
	hook, ntfy, slack *notifytest.Recorder
	tg                *notifytest.Telegram
	cmdOut            string // the command sink appends each event here
}

// addSinks adds one sink of each type to s, each pointed at a fake.
func addSinks(t testing.TB, s *Supervisor, events ...string) *sinks {
	t.Helper()
	k := &sinks{hook: notifytest.NewWebhook(t), ntfy: notifytest.NewNtfy(t), slack: notifytest.NewSlack(t), tg: notifytest.NewTelegram(t, testBotToken)}
	dir := t.TempDir()
	k.cmdOut = filepath.Join(dir, "events.jsonl")
	script := filepath.Join(dir, "record")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n{ cat; echo; } >> \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, req := range []api.NotifyAddRequest{
		{Name: "hook", Type: notify.TypeWebhook, URL: k.hook.URL, Secret: testHookSecret},
		{Name: "topic", Type: notify.TypeNtfy, URL: k.ntfy.URL},
		{Name: "team-slack", Type: notify.TypeSlack, Secret: k.slack.URL},
		{Name: "phone", Type: notify.TypeTelegram, URL: k.tg.URL, Chat: testChat, Secret: testBotToken},
		{Name: "desk", Type: notify.TypeCommand, URL: script + " " + k.cmdOut},
	} {
		req.Events = events
		if _, err := s.notify.AddSink(ctx, req); err != nil {
			t.Fatalf("add %s: %v", req.Name, err)
		}
	}
	return k
}

// raiseAll raises one event of each kind of need, as a scan finds them.
func raiseAll(s *Supervisor, needs []topology.Attention) {
	for _, a := range needs {
		s.notify.Raise(context.Background(), a, api.PaneInfo{ID: a.ID, Title: "title-" + a.ID, Team: "demo"})
	}
}

// everyNeed is one need of each kind, on panes w-1…w-11.
func everyNeed() []topology.Attention {
	var out []topology.Attention
	for i, k := range []string{topology.NeedWaiting, topology.NeedError, topology.NeedCrashLoop, topology.NeedUnreachable, topology.NeedTaskFailed,
		topology.NeedAllDone, topology.NeedBudget, topology.NeedUpstream, topology.NeedProvider, topology.NeedWorkerStopped, topology.NeedDiskFull} {
		a := topology.Attention{ID: "w-" + string(rune('a'+i)), Kind: k, State: k, Reason: "because " + k}
		switch k {
		case topology.NeedUnreachable:
			a.Node = "far"
		case topology.NeedTaskFailed:
			a.Task = 7
		case topology.NeedDiskFull:
			a.ID = topology.HomeID
		}
		out = append(out, a)
	}
	return out
}

// TestNotifyEveryKindReachesEverySink: an event of each kind reaches the
// webhook (signed, with its fields), ntfy, Slack, Telegram and a command,
// each in its own shape.
func TestNotifyEveryKindReachesEverySink(t *testing.T) {
	t.Parallel()
	s, _ := newTestSupervisor(t, os.Getenv)
	k := addSinks(t, s)
	needs := everyNeed()
	raiseAll(s, needs)
	n := len(needs)
	want := map[string]string{ // kind → event
		"waiting": "needs-you", "error": "needs-you", "crash-loop": "needs-you", "node-down": "node-down", "task-failed": "task-failed",
		"goal-done": "goal-done", "budget": "budget-reached", "upstream": "needs-you", "provider": "needs-you", "worker-stopped": "needs-you", "disk-full": "needs-you",
	}
	checkWebhookEvents(t, k.hook.Wait(t, n, 30*time.Second), want)
	for _, r := range k.ntfy.Wait(t, n, 30*time.Second) {
		if r.Header.Get("Title") == "" || len(r.Body) == 0 {
			t.Errorf("ntfy message without a title or body: %v %q", r.Header, r.Body)
		}
	}
	for _, r := range k.slack.Wait(t, n, 30*time.Second) {
		if m := r.JSON(t); m["text"] == nil || m["text"] == "" {
			t.Errorf("slack message without text: %s", r.Body)
		}
	}
	k.tg.WaitSent(t, `(?s)title-w-a.*cicy-agent attach w-a`, 30*time.Second)
	crash := k.tg.WaitSent(t, `(?s)crash-loop.*cicy-agent restart w-c`, 30*time.Second)
	if len(crash.Buttons) == 0 || !strings.HasPrefix(crash.Buttons[0].Data, "restart|") {
		t.Errorf("a crash loop's message carries no Restart button: %+v", crash.Buttons)
	}
	checkCommandEvents(t, k.cmdOut, n)
	waitFor(t, "every event on Telegram", func() bool { return len(k.tg.Sent()) >= n })
	time.Sleep(200 * time.Millisecond) // a message more would come now
	if got := len(k.tg.Sent()); got != n {
		t.Errorf("telegram got %d messages, want %d", got, n)
	}
}

// TestNotifyRetriesUntilTaken: a sink answering 500 is tried again with
// backoff and gets the message once it answers 200 — once; meanwhile
// status says it fails; another sink is not held up by it.
func TestNotifyRetriesUntilTaken(t *testing.T) {
	t.Parallel()
	s, _ := newTestSupervisor(t, os.Getenv)
	k := addSinks(t, s)
	k.hook.Fail(1, 500)
	k.slack.Hang(time.Hour) // a sink that never answers slows no other
	raiseAll(s, everyNeed()[:1])
	k.ntfy.Wait(t, 1, 30*time.Second)
	first := k.hook.Wait(t, 1, 30*time.Second)
	waitFor(t, "status to say the webhook fails", func() bool {
		for _, st := range s.Home().Notify {
			if st.Name == "hook" && st.FailingSince != nil && st.LastStatus == 500 {
				return strings.Contains(st.Line(), "failing since")
			}
		}
		return false
	})
	reqs := k.hook.Wait(t, 2, 30*time.Second)
	if string(reqs[1].Body) != string(first[0].Body) {
		t.Errorf("the retry is not the same message: %q then %q", first[0].Body, reqs[1].Body)
	}
	waitFor(t, "the webhook to be no longer failing", func() bool {
		for _, st := range s.Home().Notify {
			if st.Name == "hook" {
				return st.FailingSince == nil && st.LastSent != nil
			}
		}
		return false
	})
	time.Sleep(2500 * time.Millisecond) // longer than the next backoff
	if got := len(k.hook.Requests()); got != 2 {
		t.Errorf("the webhook got %d requests, want 2 (one failed, one taken)", got)
	}
}

// waitFor polls cond until it holds, for at most 30 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitForSaying(t, what, 30*time.Second, cond, nil)
}

// waitForSaying polls cond until it holds, for at most limit; a timeout's
// message says what seen (when not nil) reports of what was seen last.
func waitForSaying(t testing.TB, what string, limit time.Duration, cond func() bool, seen func() string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			if seen != nil {
				t.Fatalf("timed out waiting for %s; %s", what, seen())
			}
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNotifyCoalescesAFlappingPane: a pane that needs you again and again
// within the window sends one message, then a digest of the rest; a muted
// pane sends nothing.
func TestNotifyCoalescesAFlappingPane(t *testing.T) {
	t.Parallel()
	s, _ := newTestSupervisor(t, os.Getenv)
	s.notify.SetWindow(2 * time.Second)
	k := addSinks(t, s)
	a := topology.Attention{ID: "w-9", Kind: topology.NeedError, State: "error", Reason: "flap"}
	for i := 0; i < 5; i++ {
		raiseAll(s, []topology.Attention{a})
		if err := s.notify.End(context.Background(), a); err != nil { // the episode ended
			t.Fatal(err)
		}
	}
	k.hook.Wait(t, 1, 30*time.Second)
	reqs := k.hook.Wait(t, 2, 30*time.Second) // the digest, after the window
	var d notify.Event
	if err := json.Unmarshal(reqs[1].Body, &d); err != nil || d.Count != 4 {
		t.Errorf("digest = %+v (%v), want count 4", d, err)
	}
	if _, err := s.notify.Mute(context.Background(), api.NotifyMuteRequest{Target: "all"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2100 * time.Millisecond) // a new window
	raiseAll(s, []topology.Attention{{ID: "w-8", Kind: topology.NeedError, State: "error", Reason: "muted"}})
	time.Sleep(time.Second)
	if got := len(k.hook.Requests()); got != 2 {
		t.Errorf("a muted pane was told: %d requests", got)
	}
}

// standInDialog is a stand-in claude that, told "ask", clears its screen,
// draws dialog (printf's format) and reads one key, which onKey (shell
// code, the key in $k) takes; then its prompt again.
func standInDialog(dialog, onKey string) string {
	return standInDialogAfter("", "", dialog, onKey)
}

// standInDialogAfter is standInDialog running before (shell) before it
// draws the dialog and drawn right after.
func standInDialogAfter(before, drawn, dialog, onKey string) string {
	return "#!/bin/bash\n" +
		"R=────────────────────────────────────────\n" +
		"prompt() { printf '%s\\n❯ \\n%s\\n  ? for shortcuts ' \"$R\" \"$R\"; }\n" +
		"prompt\nwhile IFS= read -r line; do\n" +
		"  if [ \"$line\" = ask ]; then\n" +
		"    " + before + "\n" +
		"    printf '\\033[2J\\033[H" + dialog + "' \"$R\" \"$R\"\n" +
		"    " + drawn + "\n" +
		"    IFS= read -rsn1 k\n" +
		"    " + onKey + "\n" +
		"  fi\n" +
		"  prompt\n" +
		"done\n"
}

// standInAsking draws Claude Code's permission dialog: 1 runs the command
// (makes the file approved), Esc refuses it (makes denied); either clears
// the dialog, as Claude Code does.
var standInAsking = standInDialog(askingDialog, askingKeys)

// askingDialog is Claude Code's permission dialog (a printf format of the
// stand-ins); askingKeys, what the stand-in does with the key pressed.
const (
	askingDialog = `%s\n Bash command\n\n   rm -rf build\n   Remove the build\n\n Do you want to proceed?\n ❯ 1. Yes\n   2. Yes, and always allow\n   3. No\n\n Esc to cancel · Tab to amend\n`
	askingKeys   = `printf '\033[2J\033[H'; case "$k" in 1) touch approved; printf '\nran it\n';; $'\e') touch denied; printf '\nrefused\n';; esac`
)

// askingPane starts a supervisor with the stand-in script as claude and
// its five sinks (those events), creates its pane and tells it "ask".
func askingPane(t *testing.T, script string, events ...string) (*Supervisor, *sinks, string) {
	t.Helper()
	s, _ := newStandInSupervisor(t, os.Getenv, script)
	k := addSinks(t, s, events...)
	ctx := context.Background()
	p, err := s.Create(ctx, api.CreateRequest{Title: "asker", Type: "claude", Backend: "tmux"})
	if err != nil {
		t.Fatal(err)
	}
	waitPane(t, s, p.ID, "idle", func(st pane.Status) bool { return st.State == pane.Idle })
	if _, err := s.Send(ctx, p.ID, api.SendRequest{Text: "ask"}); err != nil {
		t.Fatal(err)
	}
	return s, k, p.ID
}

// TestNotifyTelegramApproves: a CLI agent's permission dialog reaches the
// Telegram chat with Approve, Deny and Show screen; Approve from the
// chat approves it once (the tool runs); a second press, a press from
// another chat and a forged button are refused with a reply saying why;
// the answer is recorded (explain).
func TestNotifyTelegramApproves(t *testing.T) {
	t.Parallel()
	s, k, id := askingPane(t, standInAsking, "needs-you")
	ctx := context.Background()
	p := struct{ ID string }{id}
	waitFor(t, "the dialog", func() bool {
		sc, _ := s.Screen(p.ID, 0)
		return strings.Contains(sc.Screen, "Do you want to proceed")
	})
	if sc, _ := s.Screen(p.ID, 5); sc.Dialog == nil || sc.Dialog.Kind != "approval" || !strings.Contains(sc.Dialog.Text, "rm -rf build") || len(sc.Dialog.Options) != 3 {
		t.Errorf("the screen's dialog (its last 5 lines asked) = %+v", sc.Dialog)
	}
	if _, err := s.Hook(ctx, p.ID, api.HookRequest{Agent: "claude", Event: "PermissionRequest", Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	msg := k.tg.WaitSent(t, `(?s)asker.*rm -rf build`, 30*time.Second)
	approve, deny := buttonData(msg, "approve"), buttonData(msg, "deny")
	if approve == "" || deny == "" {
		t.Fatalf("the approval's message has no Approve and Deny buttons: %+v", msg.Buttons)
	}
	if ev := k.hook.Wait(t, 1, 30*time.Second)[0].JSON(t); ev["kind"] != "approval" || !strings.Contains(ev["text"].(string), "rm -rf build") {
		t.Errorf("webhook event = %v, want an approval naming the command", ev)
	}
	k.tg.Press(999, "stranger", approve, msg.ID)
	if a := k.tg.WaitAnswers(t, 1, 30*time.Second); !strings.Contains(a[0].Text, "not the one this bot answers") {
		t.Errorf("a press from another chat was answered %q", a[0].Text)
	}
	k.tg.Press(4242, "boss", "approve|nforged00000", msg.ID)
	if a := k.tg.WaitAnswers(t, 2, 30*time.Second); !strings.Contains(a[1].Text, "no longer open") {
		t.Errorf("a forged button was answered %q", a[1].Text)
	}
	ws := filepath.Join(s.cfg.Home.Workspace(p.ID))
	if _, err := os.Stat(filepath.Join(ws, "approved")); err == nil {
		t.Fatal("approved before the chat's press")
	}
	k.tg.Press(4242, "boss", approve, msg.ID)
	if a := k.tg.WaitAnswers(t, 3, 60*time.Second); !strings.HasPrefix(a[2].Text, "done") {
		t.Fatalf("the press was answered %q", a[2].Text)
	}
	waitFor(t, "the tool to run", func() bool { _, err := os.Stat(filepath.Join(ws, "approved")); return err == nil })
	k.tg.Press(4242, "boss", deny, msg.ID)
	if a := k.tg.WaitAnswers(t, 4, 30*time.Second); !strings.Contains(a[3].Text, "refused") {
		t.Errorf("a second press was answered %q", a[3].Text)
	}
	if _, err := os.Stat(filepath.Join(ws, "denied")); err == nil {
		t.Error("the second press denied")
	}
	checkAnswered(t, s, p.ID, "approve", "telegram:boss")
}

// buttonData is the data of the message's button for action ("" when it
// has none).
func buttonData(m notifytest.Message, action string) string {
	for _, b := range m.Buttons {
		if strings.HasPrefix(b.Data, action+"|") {
			return b.Data
		}
	}
	return ""
}

// checkAnswered checks explain shows one answer, action by whom.
func checkAnswered(t *testing.T, s *Supervisor, id, action, by string) {
	t.Helper()
	x, err := s.screens.Explain(id)
	if err != nil {
		t.Fatal(err)
	}
	if len(x.Answers) != 1 || x.Answers[0].Action != action || x.Answers[0].By != by || x.Answers[0].Via != "telegram" {
		t.Errorf("explain's answers = %+v", x.Answers)
	}
}

// checkWebhookEvents checks each webhook request: signed, its fields, its
// event for its kind (want), the command that resolves it; and that every
// kind of want came.
func checkWebhookEvents(t *testing.T, reqs []notifytest.Request, want map[string]string) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range reqs {
		if !notifytest.VerifySignature(r.Body, testHookSecret, r.Header.Get("X-Cicy-Signature")) {
			t.Errorf("webhook body not signed under the sink's secret: %s %q", r.Header.Get("X-Cicy-Signature"), r.Body)
		}
		ev := r.JSON(t)
		checkFields(t, ev, r.Body)
		kind, _ := ev["kind"].(string)
		if want[kind] != ev["event"] {
			t.Errorf("kind %s came as event %v, want %s", kind, ev["event"], want[kind])
		}
		if ev["event"] != "node-down" && kind != "disk-full" && (ev["pane"] == nil || ev["title"] == nil || ev["team"] != "demo") {
			t.Errorf("event %s lacks its pane, title or team: %s", kind, r.Body)
		}
		if ev["resolve"] == nil || !strings.HasPrefix(ev["resolve"].(string), "cicy-agent ") && kind != "disk-full" {
			t.Errorf("event %s has no command that resolves it: %s", kind, r.Body)
		}
		if r.Header.Get("X-Cicy-Delivery") != ev["id"] {
			t.Errorf("delivery header %q, id %v", r.Header.Get("X-Cicy-Delivery"), ev["id"])
		}
		seen[kind] = true
	}
	for kind := range want {
		if !seen[kind] {
			t.Errorf("no webhook event of kind %s", kind)
		}
	}
}

// checkFields checks an event has the fields every event has.
func checkFields(t *testing.T, ev map[string]any, body []byte) {
	t.Helper()
	for _, f := range []string{"id", "event", "kind", "text", "at"} {
		if ev[f] == nil || ev[f] == "" {
			t.Errorf("webhook event has no %s: %s", f, body)
		}
	}
}

// checkCommandEvents waits for n events in the command sink's file, each
// a JSON event.
func checkCommandEvents(t *testing.T, path string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if lines := strings.Count(strings.TrimSpace(string(b)), "\n") + 1; len(b) > 0 && lines >= n {
			for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				var ev notify.Event
				if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.ID == "" {
					t.Errorf("the command was not given an event on stdin: %q (%v)", l, err)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command sink got %q", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNotifyTelegramFlood: a flood of messages and forged presses from a
// chat that is not the sink's is refused — its messages told so once,
// each press answered — and slows nothing: every update is taken, and a
// pane that needs you meanwhile is told.
func TestNotifyTelegramFlood(t *testing.T) {
	t.Parallel()
	s, _ := newTestSupervisor(t, os.Getenv)
	k := addSinks(t, s)
	const flood = 300
	for i := 0; i < flood; i++ {
		k.tg.Reply(999, "spammer", fmt.Sprintf("approve everything %d", i), "")
		k.tg.Press(999, "spammer", fmt.Sprintf("approve|nforged%05d", i), 1)
	}
	raiseAll(s, everyNeed()[:1])
	k.hook.Wait(t, 1, 30*time.Second)
	k.tg.WaitAnswers(t, flood, 60*time.Second)
	waitFor(t, "every update taken", func() bool {
		off := k.tg.Offsets()
		return len(off) > 0 && off[len(off)-1] > int64(100+2*flood-1)
	})
	replies := 0
	for _, m := range k.tg.Sent() {
		if m.Chat == "999" {
			replies++
		}
	}
	if replies != 1 {
		t.Errorf("the stranger's chat was sent %d replies, want 1", replies)
	}
	for _, a := range k.tg.Answers() {
		if a.Text != "" && !strings.Contains(a.Text, "refused") {
			t.Fatalf("a stranger's press was answered %q", a.Text)
		}
	}
}

// standInQuestion draws Claude Code's question dialog (two options, as
// AskUserQuestion draws them); the key read is kept in the file picked.
var standInQuestion = standInDialog(`%s\n ☐ Color\n\nWhich color should the button be?\n\n❯ 1. Red\n     A warm color\n  2. Blue\n     A cool color\n  3. Type something.\n%s\n  4. Chat about this\n\nEnter to select · ↑/↓ to navigate · Esc to cancel\n`,
	`printf '%s' "$k" > picked`)

// TestNotifyTelegramQuestion: a question reaches the chat with its
// options as buttons; pressing one picks it with the keys the CLI takes.
func TestNotifyTelegramQuestion(t *testing.T) {
	t.Parallel()
	s, k, id := askingPane(t, standInQuestion, "needs-you:question")
	msg := k.tg.WaitSent(t, `(?s)needs you: question.*\(asker\).*Which color should the button be`, 30*time.Second)
	var labels []string
	for _, b := range msg.Buttons {
		labels = append(labels, b.Text)
	}
	if len(labels) < 2 || !strings.Contains(labels[0], "Red") || !strings.Contains(labels[1], "Blue") {
		t.Fatalf("the question's buttons are %q, want its options", labels)
	}
	blue := buttonData(msg, "option:2")
	if blue == "" {
		t.Fatalf("no option:2 button: %+v", msg.Buttons)
	}
	k.tg.Press(4242, "boss", blue, msg.ID)
	if a := k.tg.WaitAnswers(t, 1, 60*time.Second); !strings.HasPrefix(a[0].Text, "done") {
		t.Fatalf("the press was answered %q", a[0].Text)
	}
	picked := filepath.Join(s.cfg.Home.Workspace(id), "picked")
	waitFor(t, "the option picked", func() bool { b, _ := os.ReadFile(picked); return string(b) == "2" })
}

// TestNotifyTelegramReply: a reply to a question's message, from the
// chat, is typed into the pane (its free text); a reply to no message of
// cicy-agent is told how to answer.
func TestNotifyTelegramReply(t *testing.T) {
	t.Parallel()
	s, k, id := askingPane(t, standInQuestion, "needs-you:question")
	msg := k.tg.WaitSent(t, `(?s)needs you: question.*Which color`, 30*time.Second)
	k.tg.Reply(4242, "boss", "hello there", "")
	k.tg.WaitSent(t, `reply to the message of the question`, 30*time.Second)
	k.tg.Reply(4242, "boss", "Green", msg.Text)
	k.tg.WaitSent(t, `^done: `+id+` text`, 60*time.Second)
	picked := filepath.Join(s.cfg.Home.Workspace(id), "picked")
	waitFor(t, "the reply typed", func() bool { b, _ := os.ReadFile(picked); return string(b) == "G" })
	x, err := s.screens.Explain(id)
	if err != nil {
		t.Fatal(err)
	}
	if len(x.Answers) != 1 || x.Answers[0].Action != "text" || x.Answers[0].Detail != "Green" {
		t.Errorf("explain's answers = %+v", x.Answers)
	}
}
