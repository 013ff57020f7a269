package shelltask

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cicy-ai/cicy-agent/cicy/atomicfile"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
)

// OutputMax is how much of a task's output its result keeps: the
// tail, with a note of what was left out.
const OutputMax = 64 << 10

// posixShells are the programs a shell worker's task is wrapped for.
var posixShells = []string{"bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh"}

// Wraps reports whether a shell pane's command is an interactive POSIX
// shell, whose tasks are run through a script of ours: the program (after
// an `env NAME=value …` prefix) is a known POSIX shell given options only
// — no script to run, no -c command. When it is not, it says why (the end
// of a sentence "a task ends when its output is quiet, because …").
func Wraps(argv []string) (bool, string) {
	if len(argv) > 0 && filepath.Base(argv[0]) == "env" {
		argv = argv[1:]
		for len(argv) > 0 && (strings.Contains(argv[0], "=") || strings.HasPrefix(argv[0], "-")) {
			argv = argv[1:]
		}
	}
	switch {
	case len(argv) == 0:
		return false, "it has no program"
	case !slices.Contains(posixShells, filepath.Base(argv[0])):
		return false, fmt.Sprintf("its program %s is not a POSIX shell (%s)", filepath.Base(argv[0]), strings.Join(posixShells, ", "))
	case !optionsOnly(argv[1:]):
		return false, fmt.Sprintf("its program %s runs a command or a script (%s), not the lines typed into it", filepath.Base(argv[0]), strings.Join(argv[1:], " "))
	}
	return true, ""
}

// optionsOnly reports whether a shell's arguments are options that leave
// it reading what is typed: no -c command, no script to run.
func optionsOnly(args []string) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-c" || (len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.Contains(a, "c")):
			return false
		case a == "--rcfile" || a == "--init-file" || a == "-o" || a == "+o" || a == "-O" || a == "+O":
			i++ // the option's argument
		case a == "--" || !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "+"):
			return false // a script to run
		}
	}
	return true
}

// Run is one task's files in a pane's tasks folder (Dir).
type Run struct {
	Dir string
	ID  int64
}

func (r Run) file(ext string) string {
	return filepath.Join(r.Dir, "task-"+strconv.FormatInt(r.ID, 10)+"."+ext)
}

// The files of a run.
func (r Run) script() string  { return r.file("sh") }
func (r Run) text() string    { return r.file("task") }
func (r Run) fifo() string    { return r.file("fifo") }
func (r Run) out() string     { return r.file("out") }
func (r Run) started() string { return r.file("started") }
func (r Run) teed() string    { return r.file("teed") }
func (r Run) ready() string   { return r.file("ready") }

// StatusFile is where the shell writes the task's exit status.
func (r Run) StatusFile() string { return r.file("status") }

// Prepare clears the folder of earlier tasks' files and writes this
// task's text and script; it returns the line to type.
func (r Run) Prepare(text string) (string, error) {
	if err := os.MkdirAll(r.Dir, 0o700); err != nil {
		return "", fmt.Errorf("create the task folder: %w", err)
	}
	old, _ := filepath.Glob(filepath.Join(r.Dir, "task-*"))
	for _, f := range old {
		_ = os.Remove(f)
	}
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	if err := os.WriteFile(r.text(), []byte(text), 0o600); err != nil {
		return "", fmt.Errorf("write the task: %w", err)
	}
	// The programs by their paths (a task may change PATH, or the user's
	// shell have an alias or function of the name); >| writes over
	// noclobber.
	tools := map[string]string{}
	for _, name := range []string{"mkfifo", "tee", "tail", "sleep", "rm"} {
		path, err := exec.LookPath(name)
		if err != nil {
			return "", fmt.Errorf("%s, which a shell worker's task needs, is not on PATH: %w", name, err)
		}
		tools[name] = cliagent.ShellQuote(path)
	}
	q := cliagent.ShellQuote
	var b strings.Builder
	fmt.Fprintf(&b, "# cicy-agent: task %d, sourced by the worker's shell (its text is %s)\n", r.ID, filepath.Base(r.text()))
	fmt.Fprintf(&b, ": >| %s\n", q(r.started()))
	fmt.Fprintf(&b, "%s -f %s %s && %s -m 600 %s || return 125\n", tools["rm"], q(r.fifo()), q(r.ready()), tools["mkfifo"], q(r.fifo()))
	// For the run, fd 8 holds the FIFO open read-write, so that no open
	// of it ever blocks and what the task writes before tee reads stays
	// in it. tee runs in a subshell of a subshell — no job of the
	// interactive shell, so no job notices on the pane — and ignores
	// Ctrl-C (the task's foreground group gets it): it passes the output
	// on to its end and marks it, so an interrupted task is told by its
	// missing status. fd 8 is closed, ending tee's input, only once tee
	// has opened the FIFO (ready), or after 3 s if it never did; Ctrl-C
	// closes it too (the group's redirection is undone). Only the
	// output's tail is kept on disk (tail -c): a noisy command never
	// fills it; one byte more than a result keeps tells a cut.
	fmt.Fprintf(&b, "{\n( ( trap '' INT QUIT; exec 0<%s 8<&-; : >| %s; %s /dev/fd/2 | %s -c %d >| %s; : >| %s ) & )\n",
		q(r.fifo()), q(r.ready()), tools["tee"], tools["tail"], OutputMax+1, q(r.out()), q(r.teed()))
	// dash aborts the whole line on a syntax error in a file `.` reads,
	// unless through `command .`; zsh's `command` runs programs only.
	fmt.Fprintf(&b, "{ if [ -n \"${ZSH_VERSION-}\" ]; then . %s; else command . %s; fi\n} 1>%s 2>&1 8<&-\n", q(r.text()), q(r.text()), q(r.fifo()))
	// The status is one small write: a reader sees the file empty (not
	// yet) or whole.
	fmt.Fprintf(&b, "printf '%%s\\n' \"$?\" >| %s\n", q(r.StatusFile()))
	fmt.Fprintf(&b, "__cicy_wait=0\nwhile [ ! -e %s ] && [ \"$__cicy_wait\" -lt 300 ]; do %s 0.01 2>/dev/null || %s 1; __cicy_wait=$((__cicy_wait + 1)); done\nunset __cicy_wait\n",
		q(r.ready()), tools["sleep"], tools["sleep"])
	fmt.Fprintf(&b, "} 8<>%s\n", q(r.fifo()))
	if err := os.WriteFile(r.script(), []byte(b.String()), 0o600); err != nil {
		return "", fmt.Errorf("write the task script: %w", err)
	}
	// A leading space keeps it out of the shell's history (ignorespace).
	return " . " + q(r.script()), nil
}

// End is what a run's files say.
type End struct {
	Started bool
	Ended   bool // the exit status is there
	Code    int
	Teed    bool // tee has passed on the last output
}

// Look reads the run's marker files.
func (r Run) Look() End {
	var e End
	_, err := os.Stat(r.started())
	e.Started = err == nil
	_, err = os.Stat(r.teed())
	e.Teed = err == nil
	b, err := os.ReadFile(r.StatusFile())
	if err != nil {
		return e
	}
	code, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return e // being written
	}
	e.Ended, e.Code = true, code
	return e
}

// scrubOutput rewrites the output file without the secrets scrub takes
// out. tail writes the file once, when the task's output ends, so the
// raw text is on disk only until the task is seen ending.
func (r Run) scrubOutput(scrub func(string) string) error {
	b, err := os.ReadFile(r.out())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the task's output: %w", err)
	}
	if clean := scrub(string(b)); clean != string(b) {
		if err := atomicfile.Write(r.out(), []byte(clean), 0o600); err != nil {
			return fmt.Errorf("scrub the task's output: %w", err)
		}
	}
	return nil
}

// output is the run's whole output, its tail when longer than
// OutputMax, as valid UTF-8 without NUL bytes.
func (r Run) output() (string, error) {
	f, err := os.Open(r.out())
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the task's output: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("read the task's output: %w", err)
	}
	skipped := max(st.Size()-OutputMax, 0)
	if skipped > 0 {
		if _, err := f.Seek(skipped, io.SeekStart); err != nil {
			return "", fmt.Errorf("read the task's output: %w", err)
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, OutputMax))
	if err != nil {
		return "", fmt.Errorf("read the task's output: %w", err)
	}
	s := strings.ToValidUTF8(strings.ReplaceAll(string(b), "\x00", ""), "\uFFFD")
	if cut := len(s) - OutputMax; cut > 0 { // replacement runes are longer than the bytes they replace
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		s, skipped = s[cut:], skipped+int64(cut)
	}
	if skipped > 0 {
		if i := strings.IndexByte(s, '\n'); i >= 0 && i < 200 {
			s = s[i+1:] // from a whole line
		}
		s = fmt.Sprintf("… (earlier output is not kept: a result holds the last %d KiB)\n", OutputMax>>10) + s
	}
	return strings.TrimRight(s, "\n"), nil
}

// The waits of a run: how long its script may take to start (the shell
// reads the typed line), how long an ended task's output may take to be
// passed on, and how long tee's end may precede the exit status before
// the task counts as interrupted (Ctrl-C stops the script before it
// writes the status). The output reaches its file only when tee and tail
// end, which on a loaded machine took more than 300 ms after the status
// (a task's result was empty): an ended task waits up to TeeWait for
// them; only a task whose background child keeps the output open waits
// it all.
const (
	StartWait     = 10 * time.Second
	TeeWait       = 2 * time.Second
	InterruptWait = 2 * time.Second
	Poll          = 10 * time.Millisecond
)
