package shelltask

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWrapsTasks: which shell commands run tasks through the script.
func TestWrapsTasks(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		argv []string
		want bool
	}{
		{[]string{"bash"}, true},
		{[]string{"/bin/bash", "--norc", "--noprofile"}, true},
		{[]string{"sh"}, true},
		{[]string{"zsh", "-f"}, true},
		{[]string{"dash", "-i"}, true},
		{[]string{"env", "A=1", "dash"}, true},
		{[]string{"bash", "--rcfile", "x.rc", "-i"}, true},
		{[]string{"bash", "-c", "python3"}, false},
		{[]string{"bash", "-lc", "vi"}, false},
		{[]string{"sh", "script.sh"}, false},
		{[]string{"python3"}, false},
		{[]string{"fish"}, false},
		{[]string{"cat"}, false},
	} {
		got, why := Wraps(c.argv)
		if got != c.want || got != (why == "") {
			t.Errorf("Wraps(%q) = %v %q, want %v", c.argv, got, why, c.want)
		}
	}
}

// TestRunInBash: a prepared run sourced by a real bash marks its start,
// writes its exit status, and keeps its output (credentials scrubbed out
// of the file too); a second run clears the first one's files.
func TestRunInBash(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash on this machine")
	}
	dir := filepath.Join(t.TempDir(), "tasks")
	r := Run{Dir: dir, ID: 7}
	if e := r.Look(); e.Started || e.Ended {
		t.Fatalf("before: %+v", e)
	}
	e := sourceInBash(t, bash, r, "cd /\necho out-$PWD secret-key\necho err >&2\nfalse")
	if !e.Started || !e.Ended || e.Code != 1 || !e.Teed {
		t.Fatalf("after: %+v", e)
	}
	scrub := func(s string) string { return strings.ReplaceAll(s, "secret-key", "[key]") }
	if err := r.scrubOutput(scrub); err != nil {
		t.Fatal(err)
	}
	out, err := r.output()
	if err != nil || out != "out-/ [key]\nerr" {
		t.Fatalf("output %q %v", out, err)
	}
	if b, _ := os.ReadFile(r.out()); strings.Contains(string(b), "secret-key") {
		t.Fatalf("the output file keeps the key: %q", b)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("the folder: %v %v", st, err)
	}
	if _, err := (Run{Dir: dir, ID: 8}).Prepare("true"); err != nil {
		t.Fatal(err)
	}
	if old, _ := filepath.Glob(filepath.Join(dir, "task-7.*")); len(old) != 0 {
		t.Fatalf("the first run's files stay: %v", old)
	}
}

// sourceInBash has a bash source the line r's Prepare of text returns,
// as a worker's shell would (the shell stays in the directory the task
// went to), and waits for the run's end.
func sourceInBash(t *testing.T, bash string, r Run, text string) End {
	t.Helper()
	line, err := r.Prepare(text)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, bash, "--norc", "--noprofile", "-c", line+"; echo \"after:$PWD\"").CombinedOutput(); err != nil ||
		!strings.Contains(string(out), "after:/") {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	var e End
	for e = r.Look(); !(e.Ended && e.Teed) && ctx.Err() == nil; e = r.Look() {
		time.Sleep(10 * time.Millisecond) // polled with the deadline of ctx
	}
	return e
}
