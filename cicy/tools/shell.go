package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/cicy-ai/cicy-agent/cicy/provider"
	"github.com/cicy-ai/cicy-agent/cicy/wire"
	"github.com/cicy-ai/cicy-agent/reaper"
)

const (
	// DefaultShellTimeout bounds a command when the model gives no timeout.
	DefaultShellTimeout = 120 * time.Second
	// MaxShellTimeout caps the timeout the model may ask for.
	MaxShellTimeout = 30 * time.Minute
	// MaxShellOutput is how many bytes of combined output reach the model;
	// more would crowd the context window for little benefit.
	MaxShellOutput = 12000

	// waitDelay is how long a call waits for the output after the command
	// exited: a process it left running in the background can hold the
	// pipe open for ever.
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
// whether it is an error. Every process the command started is ended when
// it returns (on timeout or when ctx ends, before).
func Shell(ctx context.Context, workspace string, input json.RawMessage) (string, bool) {
	return ShellWatched(ctx, workspace, input, Watch{})
}

// Watch is how a caller follows the processes of a shell call.
type Watch struct {
	// Env (NAME=VALUE entries) is added to the command's environment,
	// which every process it starts inherits unless it clears it.
	Env []string
	// Started is called with the run's process group id (its reaper's
	// pid) once it runs.
	Started func(pgid int)
	// Keep holds a run whose command ended but left processes running (a
	// server in the background) until the caller ends the set; nil: they
	// are ended when the call returns.
	Keep *reaper.Set
}

// ShellWatched is Shell for a caller that follows its processes (w): the
// caller records Env and the group, so what the command started can be
// found after a crash of the supervisor, and ends Keep when the pane ends.
func ShellWatched(ctx context.Context, workspace string, input json.RawMessage, w Watch) (string, bool) {
	in, err := parseInput[shellInput]("shell", input)
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
	return runShell(ctx, resolveCwd(workspace, in.Cwd), in.Command, timeout, w)
}

// parseInput decodes the input of the named tool; an empty input counts
// as {} (so a shell call without arguments gets the "command required"
// error, a skill call the listing).
func parseInput[T any](tool string, input json.RawMessage) (T, error) {
	var in T
	if len(input) == 0 {
		return in, nil
	}
	if !json.Valid(input) {
		return in, errors.New("tool input is not valid JSON")
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return in, fmt.Errorf("invalid %s input: %w", tool, err)
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
func runShell(ctx context.Context, dir, command string, timeout time.Duration, w Watch) (string, bool) {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	out := &headWriter{limit: MaxShellOutput}
	// Under a reaper: every process the command starts stays its
	// descendant, even one that leaves the process group and session
	// (setsid) and clears its environment (env -i), so a timeout, a cancel
	// or the pane's end ends them all; the reaper ends them itself if the
	// supervisor dies. One writer for both streams keeps the order in
	// which the command wrote. The model reads whatever the command
	// prints: no provider key in its environment, nor the upstream URLs
	// (one may carry a password, and they lead past the supervisor).
	run, err := reaper.Start(reaper.Spec{
		Argv: []string{"bash", "-lc", command}, Dir: dir,
		Env:    append(provider.ForTools(os.Environ()), w.Env...),
		Output: out, WaitDelay: waitDelay,
	})
	if err != nil {
		return "error: " + err.Error(), true
	}
	if w.Started != nil {
		w.Started(run.Pid())
	}
	ws, err := run.Wait(tctx)
	if w.Keep != nil && err == nil {
		w.Keep.Keep(run)
	} else {
		run.End()
	}
	text := out.String()
	switch {
	case ctx.Err() != nil:
		return withHeader("error: command cancelled", text), true
	case tctx.Err() != nil:
		return withHeader("error: command timed out after "+timeout.String(), text), true
	case err != nil:
		return withHeader("error: "+err.Error(), text), true
	}
	return exitResult(ws, text)
}

// exitResult formats the result of a command that ran to its end. A
// process it left running that held the output past waitDelay is not the
// command's failure.
func exitResult(ws syscall.WaitStatus, text string) (string, bool) {
	switch {
	case ws.Exited() && ws.ExitStatus() == 0:
		if text == "" {
			return "(command succeeded, no output)", false
		}
		return text, false
	case ws.Exited():
		return withHeader(fmt.Sprintf("exit status %d", ws.ExitStatus()), text), true
	default:
		// Killed by a signal, said as exec says it ("signal: killed").
		return withHeader("signal: "+ws.Signal().String(), text), true
	}
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
