package service

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/cicy-ai/cicy-agent/supervisor"
)

// Manager is what a Service needs of systemd's user manager. The real
// one (SystemdUser) runs systemctl --user; the tests give a fake.
type Manager interface {
	// Unreachable says why no user manager can be reached, "" when one can.
	Unreachable(ctx context.Context) string
	// Systemctl runs systemctl --user with args: its trimmed output.
	Systemctl(ctx context.Context, args ...string) (string, error)
	// Lingering reports whether the user's manager runs without a login.
	Lingering(name string) bool
}

// SystemdUser is the machine's own user manager.
type SystemdUser struct{}

// managerStates are the answers of `systemctl --user
// is-system-running` from a manager that is there.
var managerStates = []string{"initializing", "starting", "running", "degraded", "maintenance", "stopping"}

func (SystemdUser) Unreachable(ctx context.Context) string {
	if _, err := exec.LookPath("systemctl"); err != nil {
		return "systemctl is not installed"
	}
	if _, err := os.Stat("/run/systemd/system"); err != nil {
		return "this machine was not started by systemd (/run/systemd/system is missing)"
	}
	// A manager that does not answer within 10 s is not reachable.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "systemctl", "--user", "is-system-running")
	cmd.Stderr = &stderr
	out, _ := cmd.Output() // "degraded" exits 1 too: the answer tells
	if state := strings.TrimSpace(string(out)); slices.Contains(managerStates, state) {
		return ""
	}
	why := strings.TrimSpace(strings.SplitN(stderr.String(), "\n", 2)[0])
	if why == "" {
		why = strings.TrimSpace(string(out))
	}
	return "systemctl --user cannot reach a user manager (" + why + ")"
}

func (SystemdUser) Systemctl(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "systemctl", append([]string{"--user"}, args...)...).CombinedOutput()
	text := strings.TrimSpace(string(out))
	if err != nil {
		return text, fmt.Errorf("systemctl --user %s: %s: %w", strings.Join(args, " "), text, err)
	}
	return text, nil
}

func (SystemdUser) Lingering(name string) bool {
	_, err := os.Stat(filepath.Join("/var/lib/systemd/linger", name))
	return err == nil
}

// Service is what install, uninstall and status work on: one home's unit.
type Service struct {
	Home    string // absolute
	Binary  string // absolute: the unit's ExecStart
	UnitDir string // $XDG_CONFIG_HOME/systemd/user
	User    string
	Getenv  func(string) string
	Manager Manager
	// SearchPath is the caller's PATH, which the service is given: it
	// finds tmux and the CLI agents where the caller's shell does.
	SearchPath string
	// Passed are the variables serve reads that the caller's environment
	// may hold and a service does not inherit.
	Passed []string
}

// unitTag is the home's tag in its unit's name: the hash of the home path
// the home's private tmux server is named by (cicy-<tag>), so two homes
// never share a unit.
func unitTag(home string) string {
	sum := sha1.Sum([]byte(home))
	return hex.EncodeToString(sum[:4])
}

// Unit is the unit's name.
func (s *Service) Unit() string { return "cicy-agent-" + unitTag(s.Home) + ".service" }

// Path is the unit file.
func (s *Service) Path() string { return filepath.Join(s.UnitDir, s.Unit()) }

// EnvFile holds the variables the service's supervisor starts with
// (provider keys): NAME=value lines, in the home (the user's alone).
func (s *Service) EnvFile() string { return filepath.Join(s.Home, "service.env") }

// BootLog is where the crontab line sends serve's own output.
func (s *Service) BootLog() string { return filepath.Join(s.Home, "logs", "boot.log") }

// unitQuote is s as one word of a unit file: in double quotes, with its
// backslashes and quotes escaped and its % (a specifier) doubled; in an
// ExecStart line ($ expands variables there) its $ doubled too.
func unitQuote(s string, exec bool) string {
	s = strings.NewReplacer(`\`, `\\`, `"`, `\"`, `%`, `%%`).Replace(s)
	if exec {
		s = strings.ReplaceAll(s, "$", "$$")
	}
	return `"` + s + `"`
}

// UnitText is the unit file. It holds no secret: the keys come from the
// home's service.env, which systemd reads at each start.
func (s *Service) UnitText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by cicy-agent service install for the home %s.\n", strings.ReplaceAll(s.Home, "%", "%%"))
	b.WriteString("# Rewritten by each install, removed by cicy-agent service uninstall. No secret is kept here:\n")
	b.WriteString("# the supervisor's keys (ANTHROPIC_API_KEY, ...) go in the home's service.env, NAME=value lines.\n")
	b.WriteString("[Unit]\n")
	fmt.Fprintf(&b, "Description=cicy-agent supervisor for %s\n", strings.ReplaceAll(s.Home, "%", "%%"))
	b.WriteString("Documentation=https://github.com/cicy-ai/cicy-agent/blob/main/docs/running.md\n")
	// A supervisor that keeps failing (a lost database it refuses, one a
	// client started meanwhile) is given up after 5 starts in 5 minutes.
	b.WriteString("StartLimitIntervalSec=300\nStartLimitBurst=5\n\n")
	b.WriteString("[Service]\nType=simple\n")
	fmt.Fprintf(&b, "Environment=%s\n", unitQuote("CICY_HOME="+s.Home, false))
	if s.SearchPath != "" {
		fmt.Fprintf(&b, "Environment=%s\n", unitQuote("PATH="+s.SearchPath, false))
	}
	fmt.Fprintf(&b, "EnvironmentFile=-%s\n", strings.ReplaceAll(s.EnvFile(), "%", "%%"))
	fmt.Fprintf(&b, "ExecStart=%s serve\n", unitQuote(s.Binary, true))
	// A stop is a shutdown: the supervisor stops its PTY panes, and its
	// tmux panes keep running for the next start to adopt.
	b.WriteString("KillMode=process\nRestart=on-failure\nRestartSec=5s\n\n")
	b.WriteString("[Install]\nWantedBy=default.target\n")
	return b.String()
}

// shQuote is s as one word for sh, and for a crontab line (where % ends
// the command unless escaped).
func shQuote(s string) string {
	return strings.ReplaceAll("'"+strings.ReplaceAll(s, "'", `'\''`)+"'", "%", `\%`)
}

// CronLine is the crontab line that starts the supervisor at boot where
// systemd is not: it reads service.env as the unit does.
func (s *Service) CronLine() string {
	env, path := shQuote(s.EnvFile()), ""
	if s.SearchPath != "" {
		path = "PATH=" + shQuote(s.SearchPath) + " "
	}
	return fmt.Sprintf("@reboot set -a; [ ! -r %s ] || . %s; set +a; %sCICY_HOME=%s %s serve >> %s 2>&1",
		env, env, path, shQuote(s.Home), shQuote(s.Binary), shQuote(s.BootLog()))
}

// envFileNames are the variables service.env sets.
func (s *Service) envFileNames() []string {
	f, err := os.Open(s.EnvFile())
	if err != nil {
		return nil
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		if name, _, ok := strings.Cut(line, "="); ok {
			names = append(names, strings.TrimSpace(name))
		}
	}
	return names
}

// Lost are the variables set in the caller's environment that the
// service's supervisor would not have: not in service.env. Names only.
func (s *Service) Lost() []string {
	inFile := s.envFileNames()
	lost := []string{}
	for _, name := range s.Passed {
		if s.Getenv(name) != "" && !slices.Contains(inFile, name) {
			lost = append(lost, name)
		}
	}
	return lost
}

// checkPath refuses a path a unit file or crontab line cannot hold.
func checkPath(what, p string) error {
	if strings.IndexFunc(p, unicode.IsControl) >= 0 {
		return fmt.Errorf("the %s %q holds a control character, which a unit file cannot hold; choose another", what, p)
	}
	return nil
}

// InstallResult is install's answer (--json).
type InstallResult struct {
	Unit      string   `json:"unit"`
	Path      string   `json:"path"`
	Home      string   `json:"home"`
	Binary    string   `json:"binary"`
	EnvFile   string   `json:"env_file"`
	Systemd   bool     `json:"systemd"`
	NoSystemd string   `json:"no_systemd,omitempty"` // why there is none
	Rewritten bool     `json:"rewritten"`            // a unit was there before
	Enabled   bool     `json:"enabled"`
	Active    bool     `json:"active"`
	Started   bool     `json:"started"` // started by this install
	Note      string   `json:"note,omitempty"`
	Linger    bool     `json:"linger"`
	LingerCmd string   `json:"linger_command,omitempty"`
	Crontab   string   `json:"crontab,omitempty"`
	LostEnv   []string `json:"lost_env"`
}

// Install writes the unit and enables and starts it where a user manager
// is reachable; elsewhere it answers the crontab line instead.
func (s *Service) Install(ctx context.Context) (InstallResult, error) {
	res := InstallResult{Unit: s.Unit(), Path: s.Path(), Home: s.Home, Binary: s.Binary, EnvFile: s.EnvFile(), LostEnv: s.Lost()}
	for what, p := range map[string]string{"home": s.Home, "binary": s.Binary, "unit folder": s.UnitDir, "PATH": s.SearchPath} {
		if err := checkPath(what, p); err != nil {
			return res, err
		}
	}
	if why := s.Manager.Unreachable(ctx); why != "" {
		res.NoSystemd, res.Crontab = why, s.CronLine()
		return res, nil
	}
	res.Systemd = true
	if _, err := os.Stat(s.Path()); err == nil {
		res.Rewritten = true
	}
	if err := os.MkdirAll(s.UnitDir, 0o755); err != nil {
		return res, fmt.Errorf("create %s: %w", s.UnitDir, err)
	}
	if err := os.WriteFile(s.Path(), []byte(s.UnitText()), 0o644); err != nil {
		return res, fmt.Errorf("write the unit: %w", err)
	}
	if _, err := s.Manager.Systemctl(ctx, "daemon-reload"); err != nil {
		return res, err
	}
	if _, err := s.Manager.Systemctl(ctx, "enable", s.Unit()); err != nil {
		return res, err
	}
	res.Enabled = true
	res.Linger = s.Manager.Lingering(s.User)
	if !res.Linger {
		res.LingerCmd = "loginctl enable-linger " + s.User
	}
	if state, _ := s.Manager.Systemctl(ctx, "is-active", s.Unit()); state == "active" {
		res.Active = true
		if res.Rewritten {
			res.Note = "the service runs: the rewritten unit takes effect at its next start (systemctl --user restart " + s.Unit() + ")"
		}
		return res, nil
	}
	if (supervisor.Home{Root: s.Home}).Held() {
		res.Note = "a supervisor started outside systemd runs for this home: the service starts at the next boot, or now after 'cicy-agent shutdown' and 'systemctl --user start " + s.Unit() + "'"
		return res, nil
	}
	if _, err := s.Manager.Systemctl(ctx, "start", s.Unit()); err != nil {
		return res, err
	}
	res.Active, res.Started = true, true
	return res, nil
}

// UninstallResult is uninstall's answer (--json).
type UninstallResult struct {
	Unit      string `json:"unit"`
	Path      string `json:"path"`
	Home      string `json:"home"`
	Systemd   bool   `json:"systemd"`
	NoSystemd string `json:"no_systemd,omitempty"`
	Installed bool   `json:"installed"` // a unit was there
	Removed   bool   `json:"removed"`
	Stopped   bool   `json:"stopped"` // the service ran and was stopped
}

// Uninstall stops and disables the unit where a user manager is
// reachable, and removes its file.
func (s *Service) Uninstall(ctx context.Context) (UninstallResult, error) {
	res := UninstallResult{Unit: s.Unit(), Path: s.Path(), Home: s.Home}
	if _, err := os.Lstat(s.Path()); err == nil {
		res.Installed = true
	} else if !errors.Is(err, fs.ErrNotExist) {
		return res, fmt.Errorf("check the unit: %w", err)
	}
	res.NoSystemd = s.Manager.Unreachable(ctx)
	res.Systemd = res.NoSystemd == ""
	if !res.Installed {
		return res, nil
	}
	if res.Systemd {
		state, _ := s.Manager.Systemctl(ctx, "is-active", s.Unit())
		if _, err := s.Manager.Systemctl(ctx, "disable", "--now", s.Unit()); err != nil {
			return res, err
		}
		res.Stopped = state == "active"
	}
	// Without a manager, disable's link is removed by hand.
	wants := filepath.Join(s.UnitDir, "default.target.wants", s.Unit())
	if target, err := os.Readlink(wants); err == nil && filepath.Base(target) == s.Unit() {
		if err := os.Remove(wants); err != nil {
			return res, fmt.Errorf("remove %s: %w", wants, err)
		}
	}
	if err := os.Remove(s.Path()); err != nil {
		return res, fmt.Errorf("remove the unit: %w", err)
	}
	res.Removed = true
	if res.Systemd {
		if _, err := s.Manager.Systemctl(ctx, "daemon-reload"); err != nil {
			return res, err
		}
	}
	return res, nil
}

// StatusResult is status's answer (--json).
type StatusResult struct {
	Unit      string `json:"unit"`
	Path      string `json:"path"`
	Home      string `json:"home"`
	Installed bool   `json:"installed"`
	Systemd   bool   `json:"systemd"`
	NoSystemd string `json:"no_systemd,omitempty"`
	// What systemctl --user is-enabled and is-active answer: enabled,
	// disabled, …; active, inactive, failed, …
	UnitFileState string `json:"unit_file_state,omitempty"`
	ActiveState   string `json:"active_state,omitempty"`
	Linger        bool   `json:"linger"`
	Crontab       string `json:"crontab,omitempty"` // the line that would start it, without systemd
}

// Status tells whether the unit is there and what systemd says of it.
func (s *Service) Status(ctx context.Context) StatusResult {
	res := StatusResult{Unit: s.Unit(), Path: s.Path(), Home: s.Home}
	if _, err := os.Stat(s.Path()); err == nil {
		res.Installed = true
	}
	if res.NoSystemd = s.Manager.Unreachable(ctx); res.NoSystemd != "" {
		res.Crontab = s.CronLine()
		return res
	}
	res.Systemd = true
	// is-enabled and is-active exit non-zero for "disabled", "inactive":
	// their answer is the word.
	enabled, _ := s.Manager.Systemctl(ctx, "is-enabled", s.Unit())
	active, _ := s.Manager.Systemctl(ctx, "is-active", s.Unit())
	res.UnitFileState, res.ActiveState = firstWord(enabled), firstWord(active)
	res.Linger = s.Manager.Lingering(s.User)
	return res
}

// firstWord is systemctl's one-word answer (enabled, inactive, …), or
// "unknown" for an error message.
func firstWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 || strings.IndexFunc(f[0], func(r rune) bool { return r != '-' && !unicode.IsLower(r) }) >= 0 {
		return "unknown"
	}
	return f[0]
}

// UnitDir is where systemd's user manager reads the user's units.
func UnitDir(getenv func(string) string) (string, error) {
	if d := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "systemd", "user"), nil
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the home folder for the unit (set HOME or XDG_CONFIG_HOME): %w", err)
	}
	return filepath.Join(h, ".config", "systemd", "user"), nil
}
