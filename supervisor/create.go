package supervisor

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/topology"
)

// Pane types, and those this version can run.
var (
	paneTypes  = []string{"cicy", "claude", "codex", "opencode", "shell"}
	builtTypes = []string{"shell", "cicy", "claude", "codex", "opencode"}
	providers  = []string{"anthropic", "openai", "script"}
)

var paneIDRe = regexp.MustCompile(`^w-([1-9][0-9]{0,17})(:main(\.0)?)?$`)

// ParsePaneID accepts w-N and the tmux-style w-N:main.0 and returns w-N.
func ParsePaneID(s string) (string, error) {
	m := paneIDRe.FindStringSubmatch(s)
	if m == nil {
		return "", usageErr("%q is not a pane id (expected w-<N>, like w-1)", s)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return fmt.Sprintf("w-%d", n), nil
}

var slugRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// checkText refuses control characters and over-long values in a
// user-given string field.
func checkText(field, v string, max int) error {
	if len(v) > max {
		return usageErr("%s is too long (%d bytes, at most %d)", field, len(v), max)
	}
	for _, r := range v {
		if unicode.IsControl(r) {
			return usageErr("%s contains a control character (%q); use plain text", field, r)
		}
	}
	if !utf8.ValidString(v) {
		return usageErr("%s is not valid UTF-8", field)
	}
	return nil
}

// normalize fills defaults into req and checks every field that needs no
// database; it returns the warnings the user must see.
func normalize(req *CreateRequest) (warnings []string, err error) {
	req.Title = strings.TrimSpace(req.Title)
	if req.Title == "" {
		return nil, usageErr("a pane needs a title: cicy-agent create <title> …")
	}
	if err := checkText("the title", req.Title, 100); err != nil {
		return nil, err
	}
	if req.Type == "" {
		req.Type = "cicy"
	}
	if !slices.Contains(paneTypes, req.Type) {
		return nil, usageErr("unknown pane type %q (choose cicy, claude, codex, opencode or shell)", req.Type)
	}
	if req.Role == "" {
		req.Role = topology.RoleWorker
	}
	if err := checkText("the role", req.Role, 64); err != nil {
		return nil, err
	}
	switch {
	case req.RoleTemplate != "":
	case req.Type == "cicy":
		req.RoleTemplate = "assistant"
	case isAgent(req.Type) && req.Role == topology.RoleMaster:
		req.RoleTemplate = "coordinator"
	case isAgent(req.Type):
		req.RoleTemplate = "engineer"
	}
	if req.RoleTemplate != "" && !slugRe.MatchString(req.RoleTemplate) {
		return nil, usageErr("role template %q is not a valid name (lowercase letters, digits, - and _; it names a folder under memory/agents/)", req.RoleTemplate)
	}
	if req.Master != "" {
		id, err := ParsePaneID(req.Master)
		if err != nil {
			return nil, usageErr("--master %s is not a pane id (expected w-<N>)", req.Master)
		}
		req.Master = id
		if req.Role == topology.RoleMaster {
			return nil, usageErr("a master does not report to another master; drop --master or the master role")
		}
	}
	if req.Provider != "" && !slices.Contains(providers, req.Provider) {
		return nil, usageErr("unknown provider %q (choose anthropic, openai or script)", req.Provider)
	}
	if err := checkText("the model", req.Model, 200); err != nil {
		return nil, err
	}
	if !slices.Contains(builtTypes, req.Type) {
		return nil, failedErr("pane type %s is not built yet in this version; only cicy and shell panes can run now", req.Type)
	}
	if req.Type == "cicy" {
		if req.Backend != "" && req.Backend != "inproc" {
			return nil, usageErr("a cicy pane runs inside the supervisor; --backend applies to terminal panes")
		}
		if len(req.Command) > 0 {
			return nil, usageErr("a cicy pane takes no command after --; its persona comes from --role-template")
		}
		req.Backend = "inproc"
	} else {
		switch req.Backend {
		case "":
			// tmux when it is there: its panes outlive the supervisor.
			req.Backend = "pty"
			if pane.TmuxAvailable() {
				req.Backend = "tmux"
			}
		case "pty":
		case "tmux":
			if !pane.TmuxAvailable() {
				return nil, failedErr("the tmux backend needs tmux 3.0 or newer on PATH; install it or use --backend pty")
			}
		default:
			return nil, usageErr("unknown backend %q (choose pty or tmux)", req.Backend)
		}
	}
	if req.AllowAll && !isAgent(req.Type) {
		return nil, usageErr("--allow-all applies to claude, codex and opencode panes (it maps to their own bypass modes)")
	}
	if err := checkEnvNames(req); err != nil {
		return nil, err
	}
	if isAgent(req.Type) {
		if req.Provider != "" {
			return nil, usageErr("--provider applies to cicy panes; a %s pane reads ANTHROPIC_BASE_URL / OPENAI_BASE_URL and their keys from the environment", req.Type)
		}
		if _, err := findAgent(req.Type); err != nil {
			return nil, err
		}
	}
	if req.Type == "shell" {
		if len(req.Command) == 0 || req.Command[0] == "" {
			return nil, usageErr("a shell pane needs a command after --, like: cicy-agent create %s --type shell -- bash", req.Title)
		}
		if _, err := exec.LookPath(req.Command[0]); err != nil {
			return nil, usageErr("command %q was not found or is not executable", req.Command[0])
		}
	}
	for i, a := range req.Command {
		if strings.ContainsRune(a, 0) {
			return nil, usageErr("argument %d of the command contains a NUL byte", i)
		}
	}
	if err := checkText("the team name", req.Team, 64); err != nil {
		return nil, err
	}
	if req.Workspace != "" && !filepath.IsAbs(req.Workspace) {
		return nil, usageErr("the workspace %q must be an absolute path", req.Workspace)
	}
	if req.Role != topology.RoleWorker && req.Role != topology.RoleMaster {
		warnings = append(warnings, fmt.Sprintf(
			"role %q is a label only: this pane is excluded from completion tracking (only 'worker' and 'master' take part); a persona is set with --role-template",
			req.Role))
	}
	return warnings, nil
}

// checkEnvNames checks the variables a terminal pane asks for.
func checkEnvNames(req *CreateRequest) error {
	if len(req.Env) > 0 && req.Type == "cicy" {
		return usageErr("--env applies to terminal panes; a cicy pane's tools never get the provider keys")
	}
	var names []string
	for _, n := range req.Env {
		switch {
		case strings.Contains(n, "="):
			return usageErr("--env takes a variable name, not %s=…: the pane gets the supervisor's value of it (a fixed value goes in the command: -- env NAME=value bash)", strings.SplitN(n, "=", 2)[0])
		case !topology.EnvNameRe.MatchString(n):
			return usageErr("--env %q is not a variable name (letters, digits and _, not starting with a digit)", n)
		case !slices.Contains(names, n):
			names = append(names, n)
		}
	}
	req.Env = names
	return nil
}

// makeWorkspace creates the workspace folder if needed and checks that the
// pane can write in it. It returns a function that undoes what it created.
func makeWorkspace(dir string) (undo func(), err error) {
	undo = func() {}
	// Find the deepest existing ancestor, so undo removes only what we made.
	top := dir
	for {
		if _, err := os.Stat(top); err == nil {
			break
		}
		parent := filepath.Dir(top)
		if parent == top {
			break
		}
		top = parent
	}
	if top != dir {
		first := dir
		for filepath.Dir(first) != top {
			first = filepath.Dir(first)
		}
		undo = func() { os.RemoveAll(first) }
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return func() {}, usageErr("the workspace %s cannot be created: %v", dir, rootCause(err))
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		undo()
		return func() {}, usageErr("the workspace %s is not a folder", dir)
	}
	f, err := os.CreateTemp(dir, ".cicy-write-check-*")
	if err != nil {
		undo()
		return func() {}, usageErr("the workspace %s is not writable: %v", dir, rootCause(err))
	}
	f.Close()
	os.Remove(f.Name())
	return undo, nil
}

// rootCause strips the *PathError wrapping, whose path the message already
// names.
func rootCause(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
