package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/cicy-ai/cicy-agent/supervisor/notify/notifytest"
)

// A fake Telegram Bot API per script, in the test process: `telegram`
// starts it (TGURL its base, tg.secret the bot token, 0600); `tgpress`
// presses a button of a message the bot sent; `tganswer` waits for what
// the bot answered a press.

var fakeBots sync.Map // script work folder → *notifytest.Telegram

// tgDeadline bounds the waits for the bot (a real CLI agent under load
// takes its time to reach its dialog).
const tgDeadline = 60 * time.Second

// cmdTelegram starts the script's fake Bot API: telegram
func cmdTelegram(t *testing.T) func(ts *testscript.TestScript, neg bool, args []string) {
	return func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 0 {
			ts.Fatalf("usage: telegram")
		}
		token := fmt.Sprintf("%d:AAE%s", 7000000000+time.Now().UnixNano()%1000000, strings.Repeat("x", 30))
		g := notifytest.NewTelegram(t, token)
		fakeBots.Store(ts.Getenv("WORK"), g)
		ts.Setenv("TGURL", g.URL)
		ts.Setenv("TGTOKEN", token)
		if err := os.WriteFile(filepath.Join(ts.Getenv("WORK"), "tg.secret"), []byte(token+"\n"), 0o600); err != nil {
			ts.Fatalf("%v", err)
		}
	}
}

func fakeBot(ts *testscript.TestScript) *notifytest.Telegram {
	g, ok := fakeBots.Load(ts.Getenv("WORK"))
	if !ok {
		ts.Fatalf("no fake Telegram: run telegram first")
	}
	return g.(*notifytest.Telegram)
}

// cmdTgPress waits for a message the bot sent whose text matches re and
// presses its button whose data starts with action, from chat:
// tgpress <chat> <re> <action>. The message's text goes to stdout.
func cmdTgPress(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: tgpress <chat> <re> <action>")
	}
	chat, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil {
		ts.Fatalf("chat: %v", err)
	}
	g := fakeBot(ts)
	re := regexp.MustCompile(args[1])
	deadline := time.Now().Add(tgDeadline)
	for {
		for _, m := range g.Sent() {
			if !re.MatchString(m.Text) {
				continue
			}
			for _, b := range m.Buttons {
				if strings.HasPrefix(b.Data, args[2]+"|") {
					g.Press(chat, "tester", b.Data, m.ID)
					fmt.Fprintln(ts.Stdout(), m.Text)
					return
				}
			}
			ts.Fatalf("the message has no %s button: %q %+v", args[2], m.Text, m.Buttons)
		}
		if time.Now().After(deadline) {
			var texts []string
			for _, m := range g.Sent() {
				texts = append(texts, m.Text)
			}
			ts.Fatalf("no message matching %q within %s; sent: %q", args[1], tgDeadline, texts)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cmdTgAnswer waits for the n-th answer to a press (1-based) and checks
// it matches re: tganswer <n> <re>.
func cmdTgAnswer(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: tganswer <n> <re>")
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 1 {
		ts.Fatalf("n: %q", args[0])
	}
	g := fakeBot(ts)
	deadline := time.Now().Add(tgDeadline)
	for {
		if a := g.Answers(); len(a) >= n {
			if !regexp.MustCompile(args[1]).MatchString(a[n-1].Text) {
				ts.Fatalf("answer %d is %q, not matching %q", n, a[n-1].Text, args[1])
			}
			fmt.Fprintln(ts.Stdout(), a[n-1].Text)
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("no answer %d within %s (answers: %+v)", n, tgDeadline, g.Answers())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
