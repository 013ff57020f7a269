package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/cicy-ai/cicy-agent/cicy/provider"
	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

const (
	// DefaultShellTimeout bounds a command when the model gives no timeout.
	DefaultShellTimeout = 120 * time.Second
	// MaxShellTimeout caps the timeout the model may ask for.
	MaxShellTimeout = 30 * time.Minute
	// MaxShellOutput is how many bytes of combined output reach the model;
	// more would crowd the context window for little benefit.
	MaxShellOutput = 12000

	// waitDelay is how long Wait may block on the output pipe after the
	// command exited or was killed: a grandchild that left the process
	// group (setsid, a daemon) can hold the pipe open forever.
	waitDelay = 5 * time.Second
)

// shellSchema is a literal so the tool definition is byte-stable.
const shellSchema = `{"type":"object","properties":{"command":{"type":"string","description":"The command line to run with bash -lc."},"cwd":{"type":"string","description":"Working directory; a relative path is resolved against the workspace. Default: the workspace."},"timeout":{"type":"integer","description":"Timeout in seconds. Default 120, at most 1800."}},"required":["command"]}`

const shellDescription = "Run a shell command with bash -lc in the workspace and return its combined stdout and stderr " +
	"(at most 12,000 bytes; longer output is truncated with a note). " +
	"There is no terminal: interactive programs and sudo cannot be used. " +
	"On timeout the command and every process it started are killed."

// ShellDef is the definition of the shell tool offered to the model.
func ShellDef() wire.Tool {
	return wire.Tool{
		Name:        "shell",
		Description: shellDescription,
		InputSchema: json.RawMessage(shellSchema),
	}
}

// shellInput is the input of a shell call. Timeout is a float so a model
// that sends 1.5 or 30.0 is not rejected over a detail.
type shellInput struct {
	Command string  `json:"command"`
	Cwd     string  `json:"cwd"`
	Timeout float64 `json:"timeout"`
}

// sudoRe finds sudo in command position: at the start of the command or a
// line, or after ; & | ( ` or $( with optional whitespace. $( is covered
// by the ( alternative.
var sudoRe = regexp.MustCompile("(?m)(?:^|[;&|(`])[ \t]*sudo(?:[ \t\r\n;&|)`]|$)")

// sudoRefusal explains why sudo is refused, so the model stops trying.
const sudoRefusal = "error: sudo is not available: this command runs without a terminal, " +
	"so there is nowhere to type a password. Run it without sudo, or ask the user to run it."

// Shell runs the shell tool: input is the raw tool_use input, workspace
// the default working directory. It returns the tool_result content and
// whether it is an error. It kills the whole process group on timeout or
// when ctx ends.
func Shell(ctx context.Context, workspace string, input json.RawMessage) (string, bool) {
	return ShellWatched(ctx, workspace, input, nil, nil)
}

// ShellWatched is Shell with marker (NAME=VALUE entries) added to the
// command's environment, which every process it starts inherits, and
// started called with the command's process group id once it runs. The
// caller records both, so what the command started can be found and
// killed after a crash of the supervisor left it behind.
func ShellWatched(ctx context.Context, workspace string, input json.RawMessage, marker []string, started func(pgid int)) (string, bool) {
	in, err := parseShellInput(input)
	if err != nil {
		return "error: " + err.Error(), true
	}
	if in.Command == "" {
		return "error: command required", true
	}
	if sudoRe.MatchString(in.Command) {
		return sudoRefusal, true
	}
	timeout := shellTimeout(in.Timeout)
	return runShell(ctx, resolveCwd(workspace, in.Cwd), in.Command, timeout, marker, started)
}

// parseShellInput decodes the input; an empty input counts as {} so a
// call without arguments gets the "command required" error.
func parseShellInput(input json.RawMessage) (shellInput, error) {
	var in shellInput
	if len(input) == 0 {
		return in, nil
	}
	if !json.Valid(input) {
		return in, errors.New("tool input is not valid JSON")
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return in, fmt.Errorf("invalid shell input: %w", err)
	}
	return in, nil
}

// shellTimeout applies the default and the cap. The cap is compared in
// seconds before converting so a huge value cannot overflow a Duration.
func shellTimeout(seconds float64) time.Duration {
	switch {
	case seconds <= 0:
		return DefaultShellTimeout
	case seconds >= MaxShellTimeout.Seconds():
		return MaxShellTimeout
	default:
		return time.Duration(seconds * float64(time.Second))
	}
}

// resolveCwd resolves a relative cwd against the workspace.
func resolveCwd(workspace, cwd string) string {
	switch {
	case cwd == "":
		return workspace
	case filepath.IsAbs(cwd):
		return cwd
	default:
		return filepath.Join(workspace, cwd)
	}
}

// runShell runs the command and formats the result.
func runShell(ctx context.Context, dir, command string, timeout time.Duration, marker []string, started func(int)) (string, bool) {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	out := &headWriter{limit: MaxShellOutput}
	cmd := exec.CommandContext(tctx, "bash", "-lc", command)
	cmd.Dir = dir
	// The model reads whatever the command prints: no provider key.
	cmd.Env = append(provider.WithoutCredentials(os.Environ()), marker...)
	// One writer for both streams: exec then uses a single pipe, so the
	// output keeps the order in which the command wrote it.
	cmd.Stdout = out
	cmd.Stderr = out
	// Its own process group, so a timeout or cancel kills the whole tree;
	// Pdeathsig so a killed supervisor takes the command with it. What the
	// command started outlives it (its group has no leader then): the
	// caller's marker is how the next start finds and kills it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	cmd.WaitDelay = waitDelay

	err := cmd.Start()
	if err == nil {
		if started != nil {
			started(cmd.Process.Pid)
		}
		err = cmd.Wait()
	}
	text := out.String()
	switch {
	case ctx.Err() != nil:
		return withHeader("error: command cancelled", text), true
	case tctx.Err() != nil:
		return withHeader("error: command timed out after "+timeout.String(), text), true
	}
	return exitResult(err, text)
}

// exitResult formats the result of a command that ran to its end.
func exitResult(err error, text string) (string, bool) {
	var exitErr *exec.ExitError
	switch {
	case err == nil, errors.Is(err, exec.ErrWaitDelay):
		// ErrWaitDelay: the command succeeded but left a background
		// process holding the pipe; that is not the command's failure.
		if text == "" {
			return "(command succeeded, no output)", false
		}
		return text, false
	case errors.As(err, &exitErr) && exitErr.ExitCode() >= 0:
		return withHeader(fmt.Sprintf("exit status %d", exitErr.ExitCode()), text), true
	case errors.As(err, &exitErr):
		// Killed by a signal: ExitError says which ("signal: killed").
		return withHeader(exitErr.Error(), text), true
	default:
		return withHeader("error: "+err.Error(), text), true
	}
}

// killGroup kills the process group led by pid. A group that is already
// gone is reported as os.ErrProcessDone, which exec does not treat as a
// failure of the cancel.
func killGroup(pid int) error {
	err := syscall.Kill(-pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	if err != nil {
		return fmt.Errorf("kill process group %d: %w", pid, err)
	}
	return nil
}

// withHeader puts a status line above the output.
func withHeader(header, text string) string {
	if text == "" {
		return header
	}
	return header + "\n" + text
}

// headWriter keeps the first limit bytes written to it and counts the
// rest, so a command printing megabytes costs only limit bytes of memory.
// exec calls Write from one goroutine at a time (Stdout == Stderr) and
// Run returns only after the copying ended, so no lock is needed.
type headWriter struct {
	limit int
	head  []byte
	total int64
}

func (w *headWriter) Write(p []byte) (int, error) {
	w.total += int64(len(p))
	if room := w.limit - len(w.head); room > 0 {
		w.head = append(w.head, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// String returns the kept output, with a note when some was dropped. A
// rune cut in half at the limit is dropped so the text stays valid UTF-8.
func (w *headWriter) String() string {
	if w.total <= int64(len(w.head)) {
		return string(w.head)
	}
	kept := trimPartialRune(w.head)
	return fmt.Sprintf("%s\n…(output truncated: %d bytes total, first %d shown)", kept, w.total, len(kept))
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b.
// Only the last few bytes can belong to a cut rune.
func trimPartialRune(b []byte) []byte {
	for i := 1; i < utf8.UTFMax && i <= len(b); i++ {
		c := b[len(b)-i]
		if !utf8.RuneStart(c) {
			continue
		}
		if !utf8.FullRune(b[len(b)-i:]) {
			return b[:len(b)-i]
		}
		break
	}
	return b
}
