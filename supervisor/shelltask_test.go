package supervisor

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/shelltask"
)

// shellWorker is a bash worker of a supervisor of its own (settle 500 ms).
func shellWorker(t *testing.T, backend string) (*Supervisor, string) {
	t.Helper()
	if backend == "tmux" && !pane.TmuxAvailable() {
		t.Fatal("tmux 3.0 or newer is needed (the CI installs it)")
	}
	s, _ := newTestSupervisor(t, nil)
	p, err := s.Create(context.Background(), api.CreateRequest{Title: "sh", Type: "shell", Backend: backend,
		Command: []string{"bash", "--norc", "--noprofile"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Kill(context.Background(), p.ID) })
	waitPane(t, s, p.ID, "idle", func(st pane.Status) bool { return st.State == pane.Idle })
	return s, p.ID
}

// run dispatches text to the worker and waits for the task's end.
func runShellTask(t *testing.T, s *Supervisor, id, text string) schema.Task {
	t.Helper()
	task, err := s.Dispatch(context.Background(), "", id, text)
	if err != nil {
		t.Fatal(err)
	}
	return waitTask(t, s, task.ID, 30*time.Second)
}

// TestShellTasksExactly: a bash worker's task ends when the shell says so,
// with its exit status and whole output, on both backends.
func TestShellTasksExactly(t *testing.T) {
	for _, backend := range []string{"pty", "tmux"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			s, id := shellWorker(t, backend)

			// false: failed with its exit status (it was done before).
			got := runShellTask(t, s, id, "false")
			if got.Status != api.TaskFailed || got.Error != "exit status 1" || got.Source != schema.SourceShell {
				t.Fatalf("false: %s %q from %q", got.Status, got.Error, got.Source)
			}

			// Output far longer than the screen: all of it.
			got = runShellTask(t, s, id, "seq 1 5000")
			if got.Status != api.TaskDone || !strings.HasPrefix(got.Result, "1\n2\n3\n") || !strings.HasSuffix(got.Result, "\n4999\n5000") ||
				strings.Count(got.Result, "\n") != 4999 {
				t.Fatalf("seq: %s, %d lines: %.40q … %.40q", got.Status, strings.Count(got.Result, "\n")+1, got.Result, got.Result[max(0, len(got.Result)-40):])
			}

			// Quiet for longer than the settle time: still running.
			task, err := s.Dispatch(context.Background(), "", id, "sleep 2; echo late")
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(1500 * time.Millisecond) // three settle times of silence
			if mid, _ := s.store.GetTask(context.Background(), task.ID); mid.Status != api.TaskDelivered {
				t.Fatalf("a quiet command ended: %s (%s)", mid.Status, mid.Reason)
			}
			if got = waitTask(t, s, task.ID, 30*time.Second); got.Status != api.TaskDone || got.Result != "late" {
				t.Fatalf("sleep: %s %q", got.Status, got.Result)
			}

			// Output that mimics an end changes nothing; the shell's state
			// (cd, variables) stays as if typed; several lines run as one.
			got = runShellTask(t, s, id, "echo 'exit status 0'; echo done\ncd /tmp && X=kept\nexit_code() { return 3; }; exit_code")
			if got.Status != api.TaskFailed || got.Error != "exit status 3" || got.Result != "exit status 0\ndone" {
				t.Fatalf("mimic: %s %q %q", got.Status, got.Error, got.Result)
			}
			if got = runShellTask(t, s, id, `echo "$PWD $X"`); got.Result != "/tmp kept" {
				t.Fatalf("the shell's state: %q", got.Result)
			}
		})
	}
}

// TestShellTaskBadInput: a syntax error, a command that never ends
// (cancelled), a binary flood (its terminal is left as the flood left it:
// the last task of its worker), a task that exits the shell.
func TestShellTaskBadInput(t *testing.T) {
	t.Parallel()
	s, id := shellWorker(t, "pty")

	got := runShellTask(t, s, id, "if then fi")
	if got.Status != api.TaskFailed || got.Error != "exit status 2" || !strings.Contains(got.Result, "syntax error") {
		t.Fatalf("syntax error: %s %q %q", got.Status, got.Error, got.Result)
	}

	checkShellInterrupts(t, s, id)

	got = runShellTask(t, s, id, "head -c 300000 /dev/urandom; echo; echo tail-line")
	if got.Status != api.TaskDone || !utf8.ValidString(got.Result) || strings.ContainsRune(got.Result, 0) ||
		len(got.Result) > shelltask.OutputMax+200 || !strings.HasSuffix(got.Result, "tail-line") ||
		!strings.HasPrefix(got.Result, "… (earlier output is not kept") {
		e, _ := s.get(id)
		sc, _ := e.kind().Screen()
		t.Logf("screen:\n%s", sc)
		t.Fatalf("flood: %s (%s: %s), %d bytes, valid %v, ends %q", got.Status, got.Reason, got.Error, len(got.Result), utf8.ValidString(got.Result), got.Result[max(0, len(got.Result)-20):])
	}

	// Only the tail is kept on disk.
	if st, err := os.Stat(filepath.Join(s.cfg.Home.paneDir(id), "tasks", "task-"+strconv.FormatInt(got.ID, 10)+".out")); err != nil || st.Size() > shelltask.OutputMax+1 {
		t.Fatalf("the output file: %v, %v", st, err)
	}

	p, err := s.Create(context.Background(), api.CreateRequest{Title: "sh2", Type: "shell", Backend: "pty", Command: []string{"sh"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Kill(context.Background(), p.ID) })
	waitPane(t, s, p.ID, "idle", func(st pane.Status) bool { return st.State == pane.Idle })
	got = runShellTask(t, s, p.ID, "exit 3")
	if got.Status != api.TaskFailed || !strings.Contains(got.Error, "the worker's process ended") {
		t.Fatalf("exit: %s %q", got.Status, got.Error)
	}
}

// foreground is the name of the program in the foreground of the terminal
// of process pid ("" when it cannot be read).
func foreground(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 6 {
		return ""
	}
	comm, err := os.ReadFile("/proc/" + fields[5] + "/comm") // tpgid: the foreground group's leader
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(comm))
}

// checkShellInterrupts: a command that never ends is cancelled (the
// command interrupted, the shell free again), and a person's Ctrl-C fails
// a task as interrupted, with what it printed.
func checkShellInterrupts(t *testing.T, s *Supervisor, id string) {
	t.Helper()
	var got schema.Task
	task, err := s.Dispatch(context.Background(), "", id, "sleep 600")
	if err != nil {
		t.Fatal(err)
	}
	// Cancelled once the sleep runs in the terminal's foreground (a
	// Ctrl-C before that reaches the shell, not the command: a race of
	// every shell): the command is interrupted, the shell is free again.
	waitPane(t, s, id, "the sleep in the foreground", func(st pane.Status) bool { return foreground(st.PID) == "sleep" })
	if _, err := s.CancelTask(context.Background(), task.ID); err != nil {
		t.Fatal(err)
	}
	if got = waitTask(t, s, task.ID, 10*time.Second); got.Status != api.TaskCancelled {
		t.Fatalf("cancel: %s", got.Status)
	}
	waitPane(t, s, id, "the sleep interrupted", func(st pane.Status) bool { return foreground(st.PID) == "bash" })

	// A person's Ctrl-C stops the command before it ends: failed, as
	// interrupted, with what it printed.
	task, err = s.Dispatch(context.Background(), "", id, "echo before-the-break; sleep 600; echo never")
	if err != nil {
		t.Fatal(err)
	}
	waitPane(t, s, id, "the sleep in the foreground", func(st pane.Status) bool { return foreground(st.PID) == "sleep" })
	if _, err := s.Send(context.Background(), id, api.SendRequest{Keys: []string{"C-c"}, NoEnter: true}); err != nil {
		t.Fatal(err)
	}
	got = waitTask(t, s, task.ID, 10*time.Second)
	if got.Status != api.TaskFailed || got.Error != "the command was interrupted before it ended (no exit status)" || got.Result != "before-the-break" {
		t.Fatalf("interrupted: %s %q %q", got.Status, got.Error, got.Result)
	}

}

// TestShellTaskDash: in dash (Debian's sh), a syntax error in a sourced
// file would abort the whole line, status and all: the script sources the
// task with `command .`, so the task fails with its exit status; the
// shell's state stays as typed.
func TestShellTaskDash(t *testing.T) {
	if _, err := exec.LookPath("dash"); err != nil {
		t.Skip("no dash on this machine")
	}
	t.Parallel()
	s, _ := newTestSupervisor(t, nil)
	p, err := s.Create(context.Background(), api.CreateRequest{Title: "sh", Type: "shell", Backend: "pty", Command: []string{"dash"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Kill(context.Background(), p.ID) })
	waitPane(t, s, p.ID, "idle", func(st pane.Status) bool { return st.State == pane.Idle })
	if got := runShellTask(t, s, p.ID, "echo before\nif then fi ("); got.Status != api.TaskFailed || got.Error != "exit status 2" || !strings.HasPrefix(got.Result, "before\n") {
		t.Fatalf("dash syntax error: %s %q result %q", got.Status, got.Error, got.Result)
	}
	if got := runShellTask(t, s, p.ID, "cd /; X=1; PATH=/nowhere"); got.Status != api.TaskDone {
		t.Fatalf("dash: %s %q", got.Status, got.Error)
	}
	// PATH is gone from the shell: the script's programs are called by
	// their paths.
	if got := runShellTask(t, s, p.ID, `echo "$PWD $X"`); got.Status != api.TaskDone || got.Result != "/ 1" {
		t.Fatalf("dash keeps the shell's state: %s %q result %q", got.Status, got.Error, got.Result)
	}
}

// TestShellTaskSlowTee: the output reaches its file only when tee and
// tail end; on a loaded machine they ended more than 300 ms after the
// exit status and the task's result was empty. Here tail takes a second
// to start: the result is still the whole output.
func TestShellTaskSlowTee(t *testing.T) {
	realTail, err := exec.LookPath("tail")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	slow := "#!/bin/sh\nsleep 1\nexec " + realTail + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "tail"), []byte(slow), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	s, id := shellWorker(t, "pty")
	if got := runShellTask(t, s, id, "echo slow-tee-output"); got.Status != api.TaskDone || got.Result != "slow-tee-output" {
		t.Fatalf("with a slow tail: %s %q", got.Status, got.Result)
	}
}
