package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// shellIn builds a shell input with the given fields.
func shellIn(t *testing.T, fields map[string]any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// isolateHome points HOME at an empty directory: bash -l reads the
// user's profile, which may be slow or print things, and the tests must
// not depend on the machine they run on.
func isolateHome(t *testing.T) {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
}

func runCmd(t *testing.T, dir, command string) (string, bool) {
	t.Helper()
	return Shell(context.Background(), dir, shellIn(t, map[string]any{"command": command}))
}

func TestDefsAreStable(t *testing.T) {
	for _, def := range []func() (string, []byte){
		func() (string, []byte) { d := ShellDef(); return d.Name, d.InputSchema },
		func() (string, []byte) { d := SkillDef(); return d.Name, d.InputSchema },
	} {
		name, schema := def()
		_, again := def()
		if !bytes.Equal(schema, again) {
			t.Errorf("%s: schema not byte-stable", name)
		}
		if !json.Valid(schema) {
			t.Errorf("%s: schema is not valid JSON: %s", name, schema)
		}
	}
	if ShellDef().Name != "shell" || SkillDef().Name != "skill" {
		t.Errorf("names: %q %q", ShellDef().Name, SkillDef().Name)
	}
}

func TestShellEcho(t *testing.T) {
	isolateHome(t)
	out, isErr := runCmd(t, t.TempDir(), "echo hello")
	if isErr || out != "hello\n" {
		t.Fatalf("got %q, %v", out, isErr)
	}
}

func TestShellNoOutput(t *testing.T) {
	isolateHome(t)
	out, isErr := runCmd(t, t.TempDir(), "true")
	if isErr || out != "(command succeeded, no output)" {
		t.Fatalf("got %q, %v", out, isErr)
	}
}

func TestShellCwd(t *testing.T) {
	isolateHome(t)
	ws := t.TempDir()
	sub := filepath.Join(ws, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	// Default: the workspace.
	out, isErr := runCmd(t, ws, "pwd -P")
	if want, _ := filepath.EvalSymlinks(ws); isErr || strings.TrimSpace(out) != want {
		t.Fatalf("default cwd: got %q, %v; want %q", out, isErr, want)
	}
	// Relative: resolved against the workspace.
	out, isErr = Shell(context.Background(), ws, shellIn(t, map[string]any{"command": "pwd -P", "cwd": "sub"}))
	if want, _ := filepath.EvalSymlinks(sub); isErr || strings.TrimSpace(out) != want {
		t.Fatalf("relative cwd: got %q, %v; want %q", out, isErr, want)
	}
	// Absolute: used as is.
	other := t.TempDir()
	out, isErr = Shell(context.Background(), ws, shellIn(t, map[string]any{"command": "pwd -P", "cwd": other}))
	if want, _ := filepath.EvalSymlinks(other); isErr || strings.TrimSpace(out) != want {
		t.Fatalf("absolute cwd: got %q, %v; want %q", out, isErr, want)
	}
	// Missing: an error result, not a panic.
	if out, isErr = Shell(context.Background(), ws, shellIn(t, map[string]any{"command": "pwd", "cwd": "nope"})); !isErr {
		t.Fatalf("missing cwd: got %q, %v", out, isErr)
	}
}

func TestShellNonZeroExit(t *testing.T) {
	isolateHome(t)
	out, isErr := runCmd(t, t.TempDir(), "echo partial; exit 3")
	if !isErr || out != "exit status 3\npartial\n" {
		t.Fatalf("got %q, %v", out, isErr)
	}
}

func TestShellStderrIncluded(t *testing.T) {
	isolateHome(t)
	out, isErr := runCmd(t, t.TempDir(), "echo out; echo err >&2")
	if isErr || out != "out\nerr\n" {
		t.Fatalf("got %q, %v", out, isErr)
	}
}

func TestShellOutputCap(t *testing.T) {
	isolateHome(t)
	// 5,000,000 bytes: 50,000 lines of 99 x's and a newline.
	out, isErr := runCmd(t, t.TempDir(), `yes xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx | head -n 50000`)
	if isErr {
		t.Fatalf("error result: %.200q", out)
	}
	note := "\n…(output truncated: 5000000 bytes total, first 12000 shown)"
	if !strings.HasSuffix(out, note) {
		t.Fatalf("missing note; tail %q", out[max(0, len(out)-200):])
	}
	if len(out) != MaxShellOutput+len(note) {
		t.Fatalf("len %d, want %d", len(out), MaxShellOutput+len(note))
	}
}

func TestHeadWriterKeepsRunesWhole(t *testing.T) {
	w := &headWriter{limit: 4}
	w.Write([]byte("ab€€")) // € is 3 bytes: the limit cuts the first one
	got := w.String()
	want := "ab\n…(output truncated: 8 bytes total, first 2 shown)"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestShellSudoRefused(t *testing.T) {
	isolateHome(t)
	ws := t.TempDir()
	for _, cmd := range []string{
		"sudo ls",
		"  sudo ls",
		"echo a; sudo ls",
		"x && sudo y",
		"x || sudo y",
		"a | sudo tee f",
		"$(sudo id)",
		"echo `sudo id`",
		"(sudo ls)",
		"echo a\nsudo ls",
		"sudo",
	} {
		out, isErr := runCmd(t, ws, cmd)
		if !isErr || !strings.Contains(out, "sudo") || !strings.Contains(out, "terminal") || !strings.Contains(out, "password") {
			t.Errorf("%q: got %q, %v", cmd, out, isErr)
		}
	}
	for _, cmd := range []string{"echo pseudo", "echo sudoku", "sudoku() { :; }; echo ok"} {
		out, isErr := runCmd(t, ws, cmd)
		if isErr || strings.Contains(out, "password") {
			t.Errorf("%q refused: %q, %v", cmd, out, isErr)
		}
	}
}

func TestShellBadInput(t *testing.T) {
	isolateHome(t)
	ws := t.TempDir()
	cases := []struct {
		input string
		want  string
	}{
		{`{"command":`, "not valid JSON"},
		{`not json`, "not valid JSON"},
		{`{}`, "error: command required"},
		{``, "error: command required"},
		{`{"command":""}`, "error: command required"},
		{`{"command":42}`, "invalid shell input"},
	}
	for _, c := range cases {
		out, isErr := Shell(context.Background(), ws, json.RawMessage(c.input))
		if !isErr || !strings.Contains(out, c.want) {
			t.Errorf("%q: got %q, %v; want %q", c.input, out, isErr, c.want)
		}
	}
}

// alive reports whether pid is a live process. A zombie counts as dead:
// it was killed, and whoever inherited it may not reap it at once.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	// The state follows the ")" that ends the command name.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// readPid waits for the command to write its background pid to file.
func readPid(t *testing.T, file string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(file)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil && pid > 0 {
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", file)
	return 0
}

// waitDead polls until pid is gone or the deadline passes.
func waitDead(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("background process %d still alive", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestShellTimeoutKillsGroup(t *testing.T) {
	isolateHome(t)
	ws := t.TempDir()
	pidFile := filepath.Join(ws, "pid")
	start := time.Now()
	out, isErr := Shell(context.Background(), ws, shellIn(t, map[string]any{
		"command": "echo started; sleep 30 & echo $! > pid; wait",
		"timeout": 1,
	}))
	if elapsed := time.Since(start); elapsed > 8*time.Second {
		t.Fatalf("took %v", elapsed)
	}
	if !isErr || out != "error: command timed out after 1s\nstarted\n" {
		t.Fatalf("got %q, %v", out, isErr)
	}
	waitDead(t, readPid(t, pidFile))
}

func TestShellCancelKillsGroup(t *testing.T) {
	isolateHome(t)
	ws := t.TempDir()
	pidFile := filepath.Join(ws, "pid")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		out   string
		isErr bool
	}
	done := make(chan result, 1)
	go func() {
		out, isErr := Shell(ctx, ws, shellIn(t, map[string]any{"command": "sleep 30 & echo $! > pid; wait"}))
		done <- result{out, isErr}
	}()
	pid := readPid(t, pidFile)
	cancel()
	select {
	case r := <-done:
		if !r.isErr || !strings.HasPrefix(r.out, "error: command cancelled") {
			t.Fatalf("got %q, %v", r.out, r.isErr)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("Shell did not return after cancel")
	}
	waitDead(t, pid)
}

func TestShellTimeoutValues(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want time.Duration
	}{
		{0, DefaultShellTimeout},
		{-5, DefaultShellTimeout},
		{10, 10 * time.Second},
		{1800, MaxShellTimeout},
		{1e300, MaxShellTimeout},
	} {
		if got := shellTimeout(c.in); got != c.want {
			t.Errorf("shellTimeout(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// writeSkill creates <dir>/<name>/SKILL.md.
func writeSkill(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name, skillFile), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func skillsFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeSkill(t, dir, "pdf", "---\nname: pdf\ndescription: Read and write PDF files.\n---\n# PDF\nUse pdftool.\n")
	writeSkill(t, dir, "alpha", "---\r\nname: \"alpha\"\r\ndescription: >\r\n  First line\r\n  second line\r\n---\r\nbody\r\n")
	writeSkill(t, dir, "plain", "# No frontmatter here\n")
	writeSkill(t, dir, "renamed-dir", "---\nname: zeta\ndescription: 'Named in frontmatter'\n---\nzeta body\n")
	writeSkill(t, dir, ".hidden", "---\nname: hidden\n---\n")
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("not a skill"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestSkillList(t *testing.T) {
	dir := skillsFixture(t)
	want := "Installed skills — call skill with a name for its instructions:\n" +
		"- alpha: First line second line\n" +
		"- pdf: Read and write PDF files.\n" +
		"- plain\n" +
		"- zeta: Named in frontmatter"
	for _, input := range []string{``, `{}`, `{"name":""}`} {
		out, isErr := Skill(dir, json.RawMessage(input))
		if isErr || out != want {
			t.Errorf("%q: got %q, %v", input, out, isErr)
		}
	}
	if got := SkillListing(dir); got != want {
		t.Errorf("SkillListing: got %q", got)
	}
}

func TestSkillListEmpty(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Join(dir, "missing")} {
		out, isErr := Skill(d, json.RawMessage(`{}`))
		if isErr || out != "(no skills installed)" {
			t.Errorf("%s: got %q, %v", d, out, isErr)
		}
		if got := SkillListing(d); got != "" {
			t.Errorf("SkillListing(%s) = %q, want empty", d, got)
		}
	}
}

func TestSkillGet(t *testing.T) {
	dir := skillsFixture(t)
	out, isErr := Skill(dir, json.RawMessage(`{"name":"pdf"}`))
	if isErr || out != "---\nname: pdf\ndescription: Read and write PDF files.\n---\n# PDF\nUse pdftool.\n" {
		t.Fatalf("pdf: got %q, %v", out, isErr)
	}
	// Surrounding whitespace is ignored.
	if out, isErr = Skill(dir, json.RawMessage(`{"name":" plain "}`)); isErr || out != "# No frontmatter here\n" {
		t.Fatalf("plain: got %q, %v", out, isErr)
	}
	// The name shown in the listing works even when the directory differs.
	if out, isErr = Skill(dir, json.RawMessage(`{"name":"zeta"}`)); isErr || !strings.Contains(out, "zeta body") {
		t.Fatalf("zeta: got %q, %v", out, isErr)
	}
}

func TestSkillBadNames(t *testing.T) {
	dir := skillsFixture(t)
	for _, name := range []string{"../pdf", "a/b", `a\b`, "..", "pdf/../pdf", "   ", ".hidden"} {
		input, _ := json.Marshal(map[string]string{"name": name})
		out, isErr := Skill(dir, input)
		if !isErr || !strings.Contains(out, "bad skill name") {
			t.Errorf("%q: got %q, %v", name, out, isErr)
		}
	}
}

func TestSkillNotFound(t *testing.T) {
	dir := skillsFixture(t)
	for _, name := range []string{"nope", "empty"} {
		input, _ := json.Marshal(map[string]string{"name": name})
		out, isErr := Skill(dir, input)
		want := "error: skill not found: " + name + " (call skill with no name to list them)"
		if !isErr || out != want {
			t.Errorf("%q: got %q, %v", name, out, isErr)
		}
	}
}

func TestSkillBadInput(t *testing.T) {
	dir := skillsFixture(t)
	if out, isErr := Skill(dir, json.RawMessage(`{"name":`)); !isErr || !strings.Contains(out, "not valid JSON") {
		t.Errorf("invalid JSON: got %q, %v", out, isErr)
	}
	if out, isErr := Skill(dir, json.RawMessage(`{"name":7}`)); !isErr || !strings.HasPrefix(out, "error:") {
		t.Errorf("wrong type: got %q, %v", out, isErr)
	}
}

func TestParseFrontmatter(t *testing.T) {
	cases := []struct {
		text string
		want map[string]string
	}{
		{"---\nname: x\ndescription: y: z\n---\nbody", map[string]string{"name": "x", "description": "y: z"}},
		{"\ufeff---\nname: x\n---\n", map[string]string{"name": "x"}},
		{"no frontmatter\nname: x\n", map[string]string{}},
		{"---\nname: x\nnever closed\n", map[string]string{}},
		{"---\ndescription: |\n  one\n  two\nname: n\n---\n", map[string]string{"description": "one two", "name": "n"}},
	}
	for _, c := range cases {
		got := parseFrontmatter(c.text)
		if len(got) != len(c.want) {
			t.Errorf("%q: got %v, want %v", c.text, got, c.want)
			continue
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%q: %s = %q, want %q", c.text, k, got[k], v)
			}
		}
	}
}

func TestShellBackgroundJobDoesNotHang(t *testing.T) {
	isolateHome(t)
	ws := t.TempDir()
	// The background sleep keeps the output pipe open after bash exits;
	// WaitDelay must end the wait instead of waiting the 30 s.
	start := time.Now()
	out, isErr := runCmd(t, ws, "sleep 30 & echo $! > pid; echo done")
	pid := readPid(t, filepath.Join(ws, "pid"))
	defer syscall.Kill(pid, syscall.SIGKILL)
	if elapsed := time.Since(start); elapsed > waitDelay+5*time.Second {
		t.Fatalf("took %v", elapsed)
	}
	if isErr || out != "done\n" {
		t.Fatalf("got %q, %v", out, isErr)
	}
}
