package supervisor

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/supervisor/agentpane"
)

// standInPermission is a claude that draws Claude Code's permission
// dialog (as recorded from the real one) once the file $DIALOG_OPEN
// exists, reads one key, writes it to $ANSWER_FILE and clears its screen.
const standInPermission = "#!/bin/sh\n" +
	"R=────────────────────────────────────────────────────────────────────────────────\n" +
	"printf '\\033[2J\\033[H● Working on it\\n'\n" +
	"while [ ! -e \"$DIALOG_OPEN\" ]; do sleep 0.05; done\n" +
	"printf '\\033[2J\\033[H\\n%s\\n Bash command\\n Run shell command\\n echo x > asked.txt\\n Do you want to proceed?\\n" +
	" ❯ 1. Yes\\n   2. Yes, and always allow access to this folder\\n   3. Yes, and switch to auto mode\\n   4. No\\n\\n Esc to cancel · Tab to amend' \"$R\"\n" +
	"stty raw -echo\n" +
	"k=$(dd bs=1 count=1 2>/dev/null)\n" +
	"stty sane\n" +
	"printf '%s' \"$k\" > \"$ANSWER_FILE\"\n" +
	"printf '\\033[2J\\033[H● Ran echo x > asked.txt\\n'\n" +
	"sleep 600\n"

// Answer refuses what a pane does not wait for — with a *NotWaitingError,
// which the API answers 409 — an unknown action and an option the dialog
// has not, and answers the dialog on screen with the agent's key, once.
func TestAnswerDialog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	open, answer := filepath.Join(dir, "open"), filepath.Join(dir, "answer")
	getenv := envOverlay(os.Getenv, "DIALOG_OPEN="+open, "ANSWER_FILE="+answer)
	s, h := newStandInSupervisor(t, getenv, standInPermission)
	ctx := context.Background()
	p, err := s.Create(ctx, api.CreateRequest{Title: "asker", Type: "claude", Backend: "pty", Env: []string{"DIALOG_OPEN", "ANSWER_FILE"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Kill(context.Background(), p.ID) })

	checkNotWaitingYet(t, s, h, p.ID)
	if err := os.WriteFile(open, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitPane(t, s, p.ID, "waiting on its dialog", func(st pane.Status) bool { return st.State == pane.Waiting })
	checkBadAnswers(t, s, p.ID)
	if _, err := os.Stat(answer); err == nil {
		t.Fatal("a refused answer typed a key")
	}
	sc, err := s.Answer(ctx, p.ID, api.AnswerRequest{Action: "screen"})
	if err != nil || !strings.Contains(sc.Screen, "Do you want to proceed?") || sc.State != "waiting" {
		t.Fatalf("screen: %+v, %v", sc, err)
	}

	res, err := s.Answer(ctx, p.ID, api.AnswerRequest{Action: "approve", By: "tester", Via: "telegram"})
	if err != nil || res.Pane != p.ID || res.Action != "approve" || !slices.Equal(res.Keys, []string{"1"}) {
		t.Fatalf("approve: %+v, %v", res, err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(answer); err == nil && len(b) > 0 {
			if string(b) != "1" {
				t.Fatalf("the dialog read %q; want 1", b)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the dialog read no key")
		}
	}
	// A second press: the dialog is answered (gone, or still drawn a
	// moment): refused.
	var nw *agentpane.NotWaitingError
	if _, err := s.Answer(ctx, p.ID, api.AnswerRequest{Action: "approve"}); !errors.As(err, &nw) {
		t.Errorf("a second approve: %v; want a NotWaitingError", err)
	}
}

// checkNotWaitingYet: an answer to a pane not waiting yet is refused, 409
// through the API; so is restart of a running pane.
func checkNotWaitingYet(t *testing.T, s *Supervisor, h http.Handler, id string) {
	t.Helper()
	ctx := context.Background()
	p := struct{ ID string }{id}
	// Not waiting yet: refused, 409 through the API, nothing typed.
	_, err := s.Answer(ctx, p.ID, api.AnswerRequest{Action: "approve"})
	var nw *agentpane.NotWaitingError
	if !errors.As(err, &nw) || !strings.Contains(err.Error(), p.ID+" no longer waits for an answer (it is ") {
		t.Fatalf("approve before the dialog: %v; want a NotWaitingError", err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/panes/"+p.ID+"/answer", strings.NewReader(`{"action":"deny"}`)))
	if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "no longer waits for an answer") {
		t.Errorf("POST answer before the dialog: %d %s; want 409", rec.Code, rec.Body)
	}
	// restart answers a pane that stopped, not one that runs.
	if _, err := s.Answer(ctx, p.ID, api.AnswerRequest{Action: "restart"}); !errors.As(err, &nw) {
		t.Errorf("restart of a running pane: %v; want a NotWaitingError", err)
	}

}

// checkBadAnswers: an unknown action, an option the dialog has not, an
// unknown via are refused.
func checkBadAnswers(t *testing.T, s *Supervisor, id string) {
	t.Helper()
	ctx := context.Background()
	p := struct{ ID string }{id}
	for action, want := range map[string]string{
		"maybe":    `unknown action "maybe": use approve, deny or option:N`,
		"option:0": `"option:0" is no option`,
		"option:5": p.ID + ": the dialog has 4 options: pick option:1 to option:4",
	} {
		_, err := s.Answer(ctx, p.ID, api.AnswerRequest{Action: action})
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Kind != api.KindUsage || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want a usage error %q", action, err, want)
		}
	}
	if _, err := s.Answer(ctx, p.ID, api.AnswerRequest{Action: "approve", Via: "pigeon"}); err == nil {
		t.Error("an unknown via was taken")
	}
}

// A shell pane has no dialogs to answer.
func TestAnswerShellPane(t *testing.T) {
	t.Parallel()
	s, _ := newTestSupervisor(t, os.Getenv)
	ctx := context.Background()
	p, err := s.Create(ctx, api.CreateRequest{Title: "sh", Type: "shell", Command: []string{"sh", "-c", "sleep 600"}, Backend: "pty"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Kill(context.Background(), p.ID) })
	_, err = s.Answer(ctx, p.ID, api.AnswerRequest{Action: "approve"})
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Kind != api.KindUsage || !strings.Contains(err.Error(), "has no dialogs to answer") {
		t.Errorf("approve on a shell pane: %v", err)
	}
}
