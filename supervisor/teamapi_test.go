package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/api"
)

// TestTeamToolsAPI: a master (here a shell pane, as a CLI master would
// be) runs the team tools over the API: dispatch, workers, task_status and
// wait answer as the cicy master's tools do, and refuse what they refuse,
// as tool errors; a pane that is not a master, an unknown tool and input
// that is not the tool's are API errors.
func TestTeamToolsAPI(t *testing.T) {
	c := startServer(t)
	ctx := context.Background()
	bash := []string{"bash", "--norc", "--noprofile"}
	lead := mustCreate(t, c, api.CreateRequest{Title: "lead", Type: "shell", Role: "master", Command: bash})
	other := mustCreate(t, c, api.CreateRequest{Title: "other", Type: "shell", Role: "master", Command: bash})
	box := mustCreate(t, c, api.CreateRequest{Title: "box", Type: "shell", Master: lead.ID, Command: bash})
	theirs := mustCreate(t, c, api.CreateRequest{Title: "theirs", Type: "shell", Master: other.ID, Command: bash})
	mustCreate(t, c, api.CreateRequest{Title: "helper", Type: "shell", Role: "helper", Command: bash})
	waitPaneIdle(t, c, box.ID)

	call := func(tool, input string) api.TeamToolResult {
		t.Helper()
		res, err := c.TeamTool(ctx, lead.ID, tool, json.RawMessage(input))
		if err != nil {
			t.Fatalf("%s %s: %v", tool, input, err)
		}
		return res
	}
	res := call("dispatch", `{"worker":"box","task":"echo team-api-marker"}`)
	if res.IsError || !strings.Contains(res.Text, "task 1 queued for "+box.ID) {
		t.Fatalf("dispatch: %+v", res)
	}
	res = call("wait", `{"task_ids":[1],"timeout":30}`)
	if res.IsError || !strings.Contains(res.Text, "task 1 → "+box.ID+": done: ") || !strings.Contains(res.Text, "team-api-marker") {
		t.Fatalf("wait: %+v", res)
	}
	if res = call("workers", `{}`); res.IsError || !strings.Contains(res.Text, box.ID) || strings.Contains(res.Text, theirs.ID) {
		t.Fatalf("workers: %+v", res)
	}
	if res = call("task_status", `{"task_id":1}`); res.IsError || !strings.Contains(res.Text, "task 1 → "+box.ID+": done") {
		t.Fatalf("task_status: %+v", res)
	}
	teamRefusals(t, call, lead.ID, other.ID)
	teamAPIErrors(t, c, lead.ID, box.ID)
	defs, err := c.TeamTools(ctx)
	if err != nil || len(defs) != 4 || defs[3].Name != "wait" || !json.Valid(defs[0].InputSchema) {
		t.Errorf("the team tools: %+v, %v", defs, err)
	}
}

// teamRefusals: what a cicy master's dispatch refuses, the team tool
// refuses as a tool error.
func teamRefusals(t *testing.T, call func(tool, input string) api.TeamToolResult, lead, other string) {
	t.Helper()
	for _, tc := range []struct{ input, want string }{
		{`{"worker":"` + other + `","task":"x"}`, "is a master"},
		{`{"worker":"` + lead + `","task":"x"}`, "is a master"},
		{`{"worker":"helper","task":"x"}`, "untracked"},
		{`{"worker":"theirs","task":"x"}`, "reports to " + other + ", not to you"},
		{`{"worker":"nobody","task":"x"}`, "no pane nobody"},
	} {
		if res := call("dispatch", tc.input); !res.IsError || !strings.Contains(res.Text, tc.want) {
			t.Errorf("dispatch %s: %+v; want a refusal saying %q", tc.input, res, tc.want)
		}
	}
	if res := call("wait", `{"task_ids":[99]}`); !res.IsError || !strings.Contains(res.Text, "no task 99") {
		t.Errorf("wait for a task the master did not dispatch: %+v", res)
	}

}

// teamAPIErrors: a caller that is not a master, an unknown tool and input
// that is not the tool's are API errors.
func teamAPIErrors(t *testing.T, c *api.Client, lead, box string) {
	t.Helper()
	ctx := context.Background()
	var ae *api.Error
	if _, err := c.TeamTool(ctx, box, "workers", nil); !errors.As(err, &ae) || !strings.Contains(ae.Message, "not a master") {
		t.Errorf("a worker calling the team tools: %v", err)
	}
	if _, err := c.TeamTool(ctx, lead, "fly", nil); !errors.As(err, &ae) || ae.Kind != api.KindNotFound {
		t.Errorf("an unknown tool: %v", err)
	}
	for _, bad := range []string{`{"worker":"box"}`, `{"worker":1,"task":"x"}`, `{"worker":"box","task":"x","extra":true}`, `[1]`} {
		if _, err := c.TeamTool(ctx, lead, "dispatch", json.RawMessage(bad)); !errors.As(err, &ae) || ae.Kind != api.KindUsage {
			t.Errorf("dispatch with %s: %v; want a usage error", bad, err)
		}
	}
	if _, err := c.TeamTool(ctx, lead, "wait", json.RawMessage(`{"task_ids":[]}`)); !errors.As(err, &ae) || ae.Kind != api.KindUsage {
		t.Errorf("wait for nothing: %v", err)
	}
}
