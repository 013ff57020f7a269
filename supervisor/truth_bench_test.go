package supervisor

import (
	"context"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/topology"
)

// BenchmarkUpstreamFailure: how soon a CLI worker's failed upstream request
// shows. Each round a task is typed into a stand-in claude, which (by the
// benchmark's hand) submits it, makes a model request the upstream answers
// 429 and ends its turn at once; task-failed is from the failing answer
// reaching the agent to the task failed in the ledger. A second failing
// request follows; needs-you is from its answer to the pane in status's
// needs-you with kind upstream. A success ends each round.
func BenchmarkUpstreamFailure(b *testing.B) {
	r := newTruthRig(b)
	var failed, needs []time.Duration
	for b.Loop() {
		id := r.task("fail upstream")
		r.hook("UserPromptSubmit", `{}`)
		r.up.then(rateLimited)
		r.request()
		at := time.Now()
		r.hook("Stop", `{}`)
		for {
			got, err := r.s.store.GetTask(context.Background(), id)
			if err != nil {
				b.Fatal(err)
			}
			if got.Status == api.TaskFailed {
				break
			}
			if api.Ended(got.Status) || time.Since(at) > 20*time.Second {
				b.Fatalf("task %d: %s", id, got.Status)
			}
			time.Sleep(time.Millisecond)
		}
		failed = append(failed, time.Since(at))
		r.request()
		at = time.Now()
		for {
			if _, ok := r.needs(topology.NeedUpstream); ok {
				break
			}
			if time.Since(at) > 10*time.Second {
				b.Fatal("never needed you")
			}
			time.Sleep(time.Millisecond)
		}
		needs = append(needs, time.Since(at))
		r.up.then(textAnswer("ok"))
		r.request()
	}
	reportPercentiles(b, "task-failed", failed)
	reportPercentiles(b, "needs-you", needs)
}
