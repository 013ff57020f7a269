package supervisor

import (
	"fmt"
	"testing"

	"github.com/cicy-ai/cicy-agent/api"
)

// BenchmarkClusterTaskLatency is BenchmarkTaskLatencyCicy across two nodes
// on one PostgreSQL: the master on node a, the worker on node b, the
// tasks dispatched on a. deliver (created → delivered) is a's insert, the
// database's note and b's claim; notify (finished → told) is b's update,
// the note and a's notification.
func BenchmarkClusterTaskLatency(b *testing.B) {
	db := clusterEnv(b)
	na, nb := startNode(b, db, "a"), startNode(b, db, "b")
	master := benchCreate(b, na.c, api.CreateRequest{Title: "lead", Type: "cicy", Role: "master", RoleTemplate: "coordinator", Provider: "script"})
	worker := benchCreate(b, nb.c, api.CreateRequest{Title: "eng", Type: "cicy", Role: "worker", RoleTemplate: "engineer", Provider: "script", Master: master})
	waitPaneIdle(b, na.c, worker) // a follows b's pane
	var lat taskLatencies
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runTasks(b, na.c, worker, benchTasks, func(j int) string { return fmt.Sprintf("job %d of round %d", j, i) }, &lat)
	}
	b.StopTimer()
	reportPercentiles(b, "deliver", lat.deliver)
	reportPercentiles(b, "notify", lat.notify)
	reportPercentiles(b, "run", lat.run)
}
