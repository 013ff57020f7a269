package teamtools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/topology"
)

// TestDefs: a cicy master's five tools, each with a JSON object schema;
// a CLI master's are the same and wait.
func TestDefs(t *testing.T) {
	t.Parallel()
	var names []string
	for _, d := range CLIDefs() {
		var sch struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(d.InputSchema, &sch); err != nil || sch.Type != "object" || d.Description == "" {
			t.Errorf("%s: schema %s (%v), description %q", d.Name, d.InputSchema, err, d.Description)
		}
		names = append(names, d.Name)
	}
	if got := strings.Join(names, " "); got != "dispatch workers task_status diff merge wait" {
		t.Fatalf("CLI master's tools: %s", got)
	}
	if n := len(Defs()); n != 5 {
		t.Fatalf("a cicy master has %d tools", n)
	}
}

// TestCallRefuses: a pane that is not a master, and a tool that does not
// exist, are refused before anything of the team is asked.
func TestCallRefuses(t *testing.T) {
	t.Parallel()
	tools := New(nil, nil, nil, nil)
	ctx := context.Background()
	for _, c := range []struct {
		pane Pane
		tool string
		want string
	}{
		{Pane{ID: "w-2", Role: topology.RoleWorker}, "workers", `w-2 is not a master (role "worker")`},
		{Pane{ID: "w-1", Role: topology.RoleMaster}, "rm", `no team tool "rm"`},
	} {
		_, err := tools.Call(ctx, c.pane, c.tool, nil)
		var apiErr *api.Error
		if err == nil || !strings.Contains(err.Error(), c.want) || !(errors.As(err, &apiErr) && apiErr.Kind == api.KindUsage) {
			t.Errorf("%s %s: %v, want %q", c.pane.ID, c.tool, err, c.want)
		}
	}
}

// TestRunRefusesBadInput: input that is not the tool's is refused with
// its shape, before anything of the team is asked.
func TestRunRefusesBadInput(t *testing.T) {
	t.Parallel()
	tools := New(nil, nil, nil, nil)
	ctx := context.Background()
	for tool, want := range map[string]string{
		"dispatch": `error: the input must be {"worker": …, "task": …}`,
		"diff":     `error: the input must be {"target": a task id or a worker's pane id, …}`,
		"merge":    `error: the input must be {"target": a task id or a worker's pane id, …}`,
		"nope":     "error: unknown tool nope",
	} {
		if text, bad := tools.Run(ctx, "w-1", tool, json.RawMessage(`[]`)); text != want || !bad {
			t.Errorf("%s: %q %v, want %q", tool, text, bad, want)
		}
	}
	if res, err := tools.Call(ctx, Pane{ID: "w-1", Role: topology.RoleMaster}, "wait", json.RawMessage(`{"task_ids": []}`)); err != nil || !res.IsError ||
		res.Text != `error: the input must be {"task_ids": [ids…], "timeout": seconds}` {
		t.Errorf("wait without tasks: %+v %v", res, err)
	}
}
