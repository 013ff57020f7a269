package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
	"github.com/cicy-ai/cicy-agent/supervisor/screens"
)

// TestScreenCorpus checks the built-in rules on every screen recorded
// from the real CLI agents (testdata/screens/<agent>/<state>/*.txt, see
// record_test.go): each gives the recorded state, decided by a part of
// the agent's layout other than the transcript. The verdicts are those of
// `cicy-agent explain` (screens.ScreenVerdict, in this process); the
// command itself is run on the first screen of each agent and state and
// must say the same.
func TestScreenCorpus(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/screens/*/*/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 30 {
		t.Fatalf("the corpus has %d screens; at least 30 are expected", len(files))
	}
	home := t.TempDir() // no lite-config.json: the built-in rules
	seen := map[string]int{}
	for _, f := range files {
		parts := strings.Split(filepath.ToSlash(f), "/")
		agent, want := parts[2], parts[3]
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		v, err := screens.ScreenVerdict(home, agent, string(b))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if v.State != want {
			t.Errorf("%s: the rules say %s (rule %q, line %q), recorded as %s", f, v.State, v.Rule, v.Line, want)
		}
		if v.Part == "" || v.Part == "transcript" {
			t.Errorf("%s: rule %q decided from the part %q (the whole screen when empty)", f, v.Rule, v.Part)
		}
		if seen[agent+"/"+want] == 0 {
			explainAgrees(t, home, agent, f, v)
		}
		seen[agent+"/"+want]++
	}
	for _, agent := range cliagent.Names() {
		for _, st := range []string{"busy", "idle", "waiting"} {
			if seen[agent+"/"+st] == 0 {
				t.Errorf("no %s screen of %s in the corpus", st, agent)
			}
		}
	}
}

// explainAgrees runs `cicy-agent explain --type agent --screen f --json`
// and checks it gives the verdict v.
func explainAgrees(t *testing.T, home, agent, f string, v api.RulesVerdict) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "cicy-agent"), "explain", "--type", agent, "--screen", f, "--json")
	cmd.Env = append(os.Environ(), "CICY_HOME="+home)
	out, err := cmd.Output()
	if err != nil {
		t.Errorf("%s: explain failed: %v", f, err)
		return
	}
	var got api.RulesVerdict
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%s: %v\n%s", f, err, out)
	}
	if got.State != v.State || got.Rule != v.Rule || got.Part != v.Part || got.LineNo != v.LineNo {
		t.Errorf("%s: explain says %s by %q in %q (line %d); the rules here %s by %q in %q (line %d)", f, got.State, got.Rule, got.Part, got.LineNo, v.State, v.Rule, v.Part, v.LineNo)
	}
}

// An override in lite-config.json comes first; a bad one is a clear error.
func TestExplainOverride(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "db"), 0o755); err != nil {
		t.Fatal(err)
	}
	screen := filepath.Join("testdata", "screens", "claude", "idle", "fresh-120x40.txt")
	explain := func() (string, error) {
		cmd := exec.Command(filepath.Join(binDir, "cicy-agent"), "explain", "--type", "claude", "--screen", screen)
		cmd.Env = append(os.Environ(), "CICY_HOME="+home)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	cfg := `{"screenRules": {"claude": [{"name": "mine", "state": "waiting", "match": "bypass permissions on", "last": 3}]}}`
	if err := os.WriteFile(filepath.Join(home, "db", "lite-config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := explain()
	if err != nil || !strings.HasPrefix(out, "waiting\nrule mine → waiting: /bypass permissions on/ in the last 3 non-blank lines\n") ||
		!strings.Contains(out, "\nparts:   transcript 1-36, composer 37-39, footer 40-40\n") || !strings.Contains(out, "\nwarning: rule mine reads the transcript") {
		t.Fatalf("override: %v\n%s", err, out)
	}
	cfg = `{"screenRules": {"claude": [{"name": "bad", "state": "sleepy", "match": "x"}]}}`
	if err := os.WriteFile(filepath.Join(home, "db", "lite-config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := explain(); err == nil || !strings.Contains(out, `screen rule "bad": state "sleepy" is not busy, idle or waiting`) {
		t.Fatalf("bad override: %v\n%s", err, out)
	}
}
