package cicy

import (
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/cicy/liteconfig"
	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// A lite-config.json that names no tool groups — {}, one with only prices
// or only screen rules (as the README shows them), an empty file — keeps
// the built-in groups: the turn runs with core's tools.
func TestLiteConfigWithoutToolGroups(t *testing.T) {
	for _, c := range []struct{ name, text string }{
		{"empty object", "{}"},
		{"prices only", `{"prices": {"my-model": {"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75}}}`},
		{"screen rules only", `{"screenRules": {"claude": [{"name": "mine", "state": "idle", "match": "^> $", "last": 1}]}}`},
		{"0 bytes", ""},
		{"white space", " \n"},
		{"null groups", `{"toolGroups": null}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, replies(textReply("fine")))
			mustWrite(t, liteconfig.Path(r.home), c.text)
			r.start()
			if res := r.send("hi"); res.Status != TurnCompleted || res.Answer != "fine" {
				t.Fatalf("turn with lite-config.json %q: %+v", c.text, res)
			}
			if got := toolNames(r.requests(1)[0].Req.Tools); got != "shell,skill" {
				t.Errorf("tools %q, want the built-in core group (shell,skill)", got)
			}
		})
	}
}

// The file's groups add to the built-in ones, or replace one by name.
func TestLiteConfigGroupsOverBuiltIn(t *testing.T) {
	r := newRig(t, replies(textReply("fine")))
	mustWrite(t, liteconfig.Path(r.home), `{"toolGroups": {"mine": ["shell"]}}`)
	r.writeTemplate("mixed", "Mixed.\n", "name: Mixed\ntools: [mine, core]\n")
	r.cfg.RoleTemplate = "mixed"
	r.start()
	if res := r.send("hi"); res.Status != TurnCompleted {
		t.Fatalf("turn with a group of the file and a built-in one: %+v", res)
	}
	if got := toolNames(r.requests(1)[0].Req.Tools); got != "shell,skill" {
		t.Errorf("tools %q, want shell,skill", got)
	}
	mustWrite(t, liteconfig.Path(r.home), `{"toolGroups": {"core": ["skill"]}}`)
	r.writeTemplate("mixed", "Mixed.\n", "name: Mixed\ntools: [core]\n")
	if res := r.send("again"); res.Status != TurnCompleted {
		t.Fatalf("turn with core replaced: %+v", res)
	}
	if got := toolNames(r.requests(2)[1].Req.Tools); got != "skill" {
		t.Errorf("tools %q, want skill (core replaced by the file)", got)
	}
}

func toolNames(ts []wire.Tool) string {
	var names []string
	for _, t := range ts {
		names = append(names, t.Name)
	}
	return strings.Join(names, ",")
}

// The built-in team group holds every team tool the supervisor gives a
// cicy master, diff and merge (of workers' worktrees) included, in the
// fixed order.
func TestTeamGroupHasDiffAndMerge(t *testing.T) {
	got, err := DefaultLiteConfig().Expand([]string{"team", "core"})
	if err != nil {
		t.Fatal(err)
	}
	if s := strings.Join(got, ","); s != "shell,skill,dispatch,workers,task_status,diff,merge" {
		t.Errorf("tools %q, want shell,skill,dispatch,workers,task_status,diff,merge", s)
	}
}
