package supervisor

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/shelltask"
)

// BenchmarkShellTaskEnd: from a bash worker's command ending (the time
// its shell wrote the exit status file) to its task done in the ledger
// (finished_at), on each backend; no settle time is waited for.
func BenchmarkShellTaskEnd(b *testing.B) {
	for _, backend := range []string{"pty", "tmux"} {
		b.Run(backend, func(b *testing.B) {
			s, _ := newTestSupervisor(b, nil)
			ctx := context.Background()
			p, err := s.Create(ctx, api.CreateRequest{Title: "sh", Type: "shell", Backend: backend, Command: []string{"bash", "--norc", "--noprofile"}})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Kill(context.Background(), p.ID) })
			waitPane(b, s, p.ID, "idle", func(st pane.Status) bool { return st.State == pane.Idle })
			var lat []time.Duration
			for b.Loop() {
				task, err := s.Dispatch(ctx, "", p.ID, "echo one")
				if err != nil {
					b.Fatal(err)
				}
				got := waitTask(b, s, task.ID, 30*time.Second)
				if got.Status != api.TaskDone {
					b.Fatalf("task %d: %s %s", task.ID, got.Status, got.Error)
				}
				run := shelltask.Run{Dir: s.cfg.Home.paneDir(p.ID) + "/tasks", ID: task.ID}
				st, err := os.Stat(run.StatusFile())
				if err != nil {
					b.Fatal(err)
				}
				lat = append(lat, schema.ParseTime(got.FinishedAt.String).Sub(st.ModTime()))
			}
			reportPercentiles(b, "end-to-done", lat)
		})
	}
}
