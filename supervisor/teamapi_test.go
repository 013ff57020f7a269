package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
)

// teamCall runs a team tool over the API, ending the test on a request
// error.
func teamCall(t *testing.T, c *api.Client, pane, tool, input string) api.TeamToolResult {
	t.Helper()
	var in json.RawMessage
	if input != "" {
		in = json.RawMessage(input)
	}
	res, err := c.TeamTool(context.Background(), pane, tool, in)
	if err != nil {
		t.Fatalf("%s %s %s: %v", pane, tool, input, err)
	}
	return res
}

var queuedRe = regexp.MustCompile(`^task (\d+) queued for (w-\d+) `)

// dispatchVia dispatches through the master's dispatch tool and returns
// the task id.
func dispatchVia(t *testing.T, c *api.Client, master, worker, text string) int64 {
	t.Helper()
	in, _ := json.Marshal(map[string]string{"worker": worker, "task": text})
	res := teamCall(t, c, master, "dispatch", string(in))
	m := queuedRe.FindStringSubmatch(res.Text)
	if res.IsError || m == nil {
		t.Fatalf("dispatch to %s: %+v", worker, res)
	}
	id, _ := strconv.ParseInt(m[1], 10, 64)
	return id
}

func waitIdle(t *testing.T, c *api.Client, id string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if pi, err := c.Get(context.Background(), id); err == nil && pi.State == "idle" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never idle", id)
		}
	}
}

// apiTeam is a team for the team tools' tests: two masters, boss and
// other; boss's shell worker sh and cicy worker cw; other's worker ow; an
// untracked pane loose and a worker with no master, stray.
type apiTeam struct {
	boss, other, sh, cw, ow, loose, stray api.CreateResponse
}

func newAPITeam(t *testing.T, c *api.Client) apiTeam {
	t.Helper()
	bash := []string{"bash", "--norc", "--noprofile"}
	var tm apiTeam
	tm.boss = mustCreate(t, c, api.CreateRequest{Title: "boss", Type: "cicy", Provider: "script", Role: "master"})
	tm.other = mustCreate(t, c, api.CreateRequest{Title: "other", Type: "cicy", Provider: "script", Role: "master"})
	tm.sh = mustCreate(t, c, api.CreateRequest{Title: "sh", Type: "shell", Backend: "pty", Role: "worker", Master: tm.boss.ID, Command: bash})
	tm.cw = mustCreate(t, c, api.CreateRequest{Title: "cw", Type: "cicy", Provider: "script", Role: "worker", Master: tm.boss.ID})
	tm.ow = mustCreate(t, c, api.CreateRequest{Title: "ow", Type: "cicy", Provider: "script", Role: "worker", Master: tm.other.ID})
	tm.loose = mustCreate(t, c, api.CreateRequest{Title: "loose", Type: "shell", Backend: "pty", Role: "watcher", Command: bash})
	tm.stray = mustCreate(t, c, api.CreateRequest{Title: "stray", Type: "shell", Backend: "pty", Role: "worker", Command: bash})
	waitIdle(t, c, tm.sh.ID)
	return tm
}

// TestTeamToolsOverTheAPI: a master's team tools answer over the API with
// the cicy master's texts and refusals, wait blocks until the tasks end,
// and a pane that is not a master is refused.
func TestTeamToolsOverTheAPI(t *testing.T) {
	c := scriptedServer(t)
	tm := newAPITeam(t, c)
	t.Run("workers", func(t *testing.T) { teamWorkers(t, c, tm) })
	t.Run("dispatch and wait", func(t *testing.T) { teamDispatchWait(t, c, tm) })
	t.Run("refusals", func(t *testing.T) { teamRefusals(t, c, tm) })
	t.Run("refused requests", func(t *testing.T) { teamRefusedRequests(t, c, tm) })
	t.Run("wait tells", func(t *testing.T) { teamWaitTells(t, c) })
}

// teamWaitTells: a result wait showed counts as told, so no 🔔 follows —
// here for a master that cannot take a line (its program has exited), which
// the outbox would otherwise leave untold.
func teamWaitTells(t *testing.T, c *api.Client) {
	quiet := mustCreate(t, c, api.CreateRequest{Title: "quiet", Type: "shell", Backend: "pty", Role: "master", Command: []string{"true"}})
	qw := mustCreate(t, c, api.CreateRequest{Title: "qw", Type: "cicy", Provider: "script", Role: "worker", Master: quiet.ID})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if pi, err := c.Get(context.Background(), quiet.ID); err == nil && pi.State == "exited" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never exited", quiet.ID)
		}
	}
	id := dispatchVia(t, c, quiet.ID, qw.ID, "say done")
	if res := teamCall(t, c, quiet.ID, "wait", fmt.Sprintf(`{"task_ids":[%d],"timeout":60}`, id)); res.IsError || !strings.Contains(res.Text, ": done: done ") {
		t.Fatalf("wait: %+v", res)
	}
	if ti, err := c.Task(context.Background(), id); err != nil || ti.NotifiedAt == nil {
		t.Errorf("task %d after wait: %+v %v; want it notified", id, ti, err)
	}
}

func teamWorkers(t *testing.T, c *api.Client, tm apiTeam) {
	ws := teamCall(t, c, tm.boss.ID, "workers", "")
	if ws.IsError || !strings.Contains(ws.Text, tm.sh.ID+` "sh" shell`) || !strings.Contains(ws.Text, tm.cw.ID+` "cw" cicy`) || strings.Contains(ws.Text, tm.ow.ID) {
		t.Errorf("workers of %s: %+v", tm.boss.ID, ws)
	}
	if got := teamCall(t, c, tm.other.ID, "workers", "{}"); !strings.Contains(got.Text, tm.ow.ID) || strings.Contains(got.Text, tm.sh.ID) {
		t.Errorf("workers of %s: %+v", tm.other.ID, got)
	}
}

func teamDispatchWait(t *testing.T, c *api.Client, tm apiTeam) {
	ctx := context.Background()
	boss, sh, cw := tm.boss.ID, tm.sh.ID, tm.cw.ID
	t1 := dispatchVia(t, c, boss, "sh", "echo team-marker")
	t2 := dispatchVia(t, c, boss, cw, "say done")
	res := teamCall(t, c, boss, "wait", fmt.Sprintf(`{"task_ids":[%d,%d],"timeout":60}`, t1, t2))
	want := fmt.Sprintf("task %d → %s: done: .*team-marker.*\ntask %d → %s: done: done %d\n$", t1, sh, t2, cw, t2)
	if res.IsError || !regexp.MustCompile(want).MatchString(res.Text) {
		t.Fatalf("wait: %+v, want %q", res, want)
	}
	for _, id := range []int64{t1, t2} {
		if ti, err := c.Task(ctx, id); err != nil || ti.NotifiedAt == nil {
			t.Errorf("task %d after wait: %+v %v; want it notified", id, ti, err)
		}
	}
	if st := teamCall(t, c, boss, "task_status", fmt.Sprintf(`{"task_id":%d}`, t2)); st.IsError || st.Text != fmt.Sprintf("task %d → %s: done: done %d\n", t2, cw, t2) {
		t.Errorf("task_status: %+v", st)
	}

	// A wait that times out says which tasks have not ended.
	slow := dispatchVia(t, c, boss, sh, "sleep 30")
	res = teamCall(t, c, boss, "wait", fmt.Sprintf(`{"task_ids":[%d],"timeout":0.3}`, slow))
	if res.IsError || !regexp.MustCompile(fmt.Sprintf(`^task %d → %s: (queued|delivered) \(not ended after 0.3 s\)\n$`, slow, sh)).MatchString(res.Text) {
		t.Errorf("wait that times out: %+v", res)
	}
	if _, err := c.CancelTask(ctx, slow); err != nil {
		t.Fatal(err)
	}
}

// teamRefusals: the cicy master's refusals, word for word, as results
// with is_error.
func teamRefusals(t *testing.T, c *api.Client, tm apiTeam) {
	theirs, err := c.Dispatch(context.Background(), api.DispatchRequest{To: tm.ow.ID, Text: "say done"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ tool, input, want string }{
		{"dispatch", `{"worker":"other","task":"x"}`, fmt.Sprintf("error: %s is a master; tasks go to workers", tm.other.ID)},
		{"dispatch", `{"worker":"boss","task":"x"}`, fmt.Sprintf("error: %s is a master; tasks go to workers", tm.boss.ID)},
		{"dispatch", `{"worker":"loose","task":"x"}`, fmt.Sprintf("error: %s is untracked (role %q)", tm.loose.ID, "watcher")},
		{"dispatch", `{"worker":"stray","task":"x"}`, fmt.Sprintf("error: %s reports to no master, not to you (%s)", tm.stray.ID, tm.boss.ID)},
		{"dispatch", `{"worker":"ow","task":"x"}`, fmt.Sprintf("error: %s reports to %s, not to you (%s)", tm.ow.ID, tm.other.ID, tm.boss.ID)},
		{"dispatch", `{"worker":"nobody","task":"x"}`, "error: no pane nobody"},
		{"dispatch", `[1]`, "error: the input must be"},
		{"wait", fmt.Sprintf(`{"task_ids":[%d]}`, theirs.ID), fmt.Sprintf("error: you dispatched no task %d", theirs.ID)},
		{"wait", `{"task_ids":[]}`, "error: the input must be"},
		{"task_status", fmt.Sprintf(`{"task_id":%d}`, theirs.ID), fmt.Sprintf("error: you dispatched no task %d", theirs.ID)},
	} {
		res := teamCall(t, c, tm.boss.ID, tc.tool, tc.input)
		if !res.IsError || !strings.HasPrefix(res.Text, tc.want) {
			t.Errorf("%s %s: %+v, want an error starting %q", tc.tool, tc.input, res, tc.want)
		}
	}
}

// teamRefusedRequests: not a master, no such tool, no such pane, a body
// that is not JSON: the request is refused.
func teamRefusedRequests(t *testing.T, c *api.Client, tm apiTeam) {
	for _, tc := range []struct{ pane, tool, kind, want string }{
		{tm.sh.ID, "workers", api.KindUsage, tm.sh.ID + ` is not a master (role "worker")`},
		{tm.loose.ID, "dispatch", api.KindUsage, tm.loose.ID + ` is not a master (role "watcher")`},
		{tm.boss.ID, "nope", api.KindUsage, `no team tool "nope"`},
		{"w-999", "workers", api.KindNotFound, "no pane w-999"},
	} {
		_, err := c.TeamTool(context.Background(), tc.pane, tc.tool, nil)
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Kind != tc.kind || !strings.HasPrefix(ae.Message, tc.want) {
			t.Errorf("%s %s: %v, want a %s error starting %q", tc.pane, tc.tool, err, tc.kind, tc.want)
		}
	}
	if code, body := rawRequest(t, c, "POST", "/api/panes/"+tm.boss.ID+"/team/workers", "application/json", "{"); code != 400 || !strings.Contains(body, "bad request body") {
		t.Errorf("malformed body: %d %s", code, body)
	}
}
