package supervisor

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
)

// TestStyledScreenAPI: GET screen?styled=1 gives the screen's runs with
// their colours, and a key printed in two colours (split over two runs)
// is in no run, whole or in part.
func TestStyledScreenAPI(t *testing.T) {
	t.Parallel()
	key := "sk-ant-api03-secret-key-0123456789"
	for _, backend := range []string{"pty", "tmux"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			if backend == "tmux" && !pane.TmuxAvailable() {
				t.Skip("no tmux")
			}
			s, h := newTestSupervisor(t, func(k string) string {
				return map[string]string{"ANTHROPIC_API_KEY": key}[k]
			})
			ctx := context.Background()
			p, err := s.Create(ctx, api.CreateRequest{Title: "sh", Type: "shell", Backend: backend, Command: []string{"bash", "--norc", "--noprofile"}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Kill(context.Background(), p.ID) })
			waitPane(t, s, p.ID, "idle", func(st pane.Status) bool { return st.State == pane.Idle })
			// The typed line holds neither half of the key as printed.
			cmd := `a=sk-ant-api0; b=3-sec; c=ret-key-01234; d=56789; printf '\033[1;35m%s\033[0m\n\033[31m%s%s\033[32m%s%s\033[0m\n' mag$d $a $b $c $d`
			if _, err := s.Send(ctx, p.ID, api.SendRequest{Text: cmd}); err != nil {
				t.Fatal(err)
			}
			var sc api.ScreenResponse
			var body string
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/panes/"+p.ID+"/screen?styled=1&lines=5", nil))
				body = rec.Body.String()
				if rec.Code != 200 {
					t.Fatalf("%d %s", rec.Code, body)
				}
				if err := json.Unmarshal([]byte(body), &sc); err != nil {
					t.Fatal(err)
				}
				if strings.Contains(sc.Screen, "[redacted]") && strings.Contains(body, `"t":"mag56789"`) || time.Now().After(deadline) {
					break
				}
			}
			for _, part := range []string{key, "sk-ant-api03-sec", "ret-key-0123456789"} {
				if strings.Contains(body, part) {
					t.Errorf("the styled screen shows %q: %s", part, body)
				}
			}
			if len(sc.Styled) == 0 || len(sc.Styled) > 5 {
				t.Fatalf("styled lines: %s", body)
			}
			checkStyledRuns(t, sc, body)
			// Without styled=1 there are no runs.
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/panes/"+p.ID+"/screen", nil))
			if strings.Contains(rec.Body.String(), `"styled"`) {
				t.Errorf("plain screen has runs: %s", rec.Body.String())
			}
		})
	}
}

// checkStyledRuns: the runs hold the bold magenta one and a redacted one,
// and read as the plain screen.
func checkStyledRuns(t *testing.T, sc api.ScreenResponse, body string) {
	t.Helper()
	var mag, redacted bool
	var lines []string
	for _, l := range sc.Styled {
		var text string
		for _, r := range l {
			text += r.Text
			mag = mag || r == api.StyledRun{Text: "mag56789", FG: "5", Bold: true}
			redacted = redacted || strings.Contains(r.Text, "[redacted]")
		}
		lines = append(lines, text)
	}
	if !mag || !redacted {
		t.Errorf("no bold magenta run, or no redacted run: %s", body)
	}
	if strings.Join(lines, "\n") != sc.Screen {
		t.Errorf("runs %q differ from the screen %q", lines, sc.Screen)
	}
}
