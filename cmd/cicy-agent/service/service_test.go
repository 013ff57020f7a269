package service

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/supervisor"
)

// fakeUserManager is a user systemd for the tests: reachable or not,
// recording each systemctl call and answering is-active from active.
type fakeUserManager struct {
	why     string // "" when reachable
	mu      sync.Mutex
	calls   []string
	active  bool
	linger  bool
	enabled bool
}

func (f *fakeUserManager) Unreachable(context.Context) string { return f.why }

func (f *fakeUserManager) Systemctl(_ context.Context, args ...string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, strings.Join(args, " "))
	switch args[0] {
	case "is-active":
		if f.active {
			return "active", nil
		}
		return "inactive", nil
	case "is-enabled":
		if f.enabled {
			return "enabled", nil
		}
		return "disabled", nil
	case "enable":
		f.enabled = true
	case "start":
		f.active = true
	case "disable":
		f.enabled, f.active = false, false
	}
	return "", nil
}

func (f *fakeUserManager) Lingering(string) bool { return f.linger }

func (f *fakeUserManager) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

const testKey = "sk-ant-api03-very-secret-value"

// testService is a service of a new home (its path holding a space and a
// %, which a unit file must escape) with a unit folder of its own, run by
// the test binary, its caller holding a provider key.
func testService(t *testing.T, m Manager) *Service {
	t.Helper()
	dir := t.TempDir()
	home := filepath.Join(dir, "my home%1")
	if err := (supervisor.Home{Root: home}).Prepare(); err != nil {
		t.Fatal(err)
	}
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"ANTHROPIC_API_KEY": testKey, "OPENAI_API_KEY": "sk-openai-in-file", "CICY_NODE": "n1"}
	return &Service{
		Home: home, Binary: bin, UnitDir: filepath.Join(dir, "config", "systemd", "user"), User: "alice",
		Getenv: func(k string) string { return vars[k] }, Manager: m, Passed: []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "CICY_NODE"}, SearchPath: "/opt/x/bin:/usr/bin",
	}
}

func TestServiceInstallWritesTheUnit(t *testing.T) {
	t.Parallel()
	m := &fakeUserManager{}
	s := testService(t, m)
	// A key in service.env is not lost; one only in the caller's environment is.
	if err := os.WriteFile(s.EnvFile(), []byte("# keys\nOPENAI_API_KEY=sk-openai-in-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := s.Install(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Systemd || res.Rewritten || !res.Enabled || !res.Started || res.Crontab != "" {
		t.Errorf("install answered %+v", res)
	}
	if !slices.Equal(res.LostEnv, []string{"ANTHROPIC_API_KEY", "CICY_NODE"}) {
		t.Errorf("lost env %q, want ANTHROPIC_API_KEY and CICY_NODE", res.LostEnv)
	}
	if res.LingerCmd != "loginctl enable-linger alice" {
		t.Errorf("linger command %q", res.LingerCmd)
	}
	unit := strings.TrimSuffix(filepath.Base(s.Path()), ".service")
	if want := []string{"daemon-reload", "enable " + unit + ".service", "is-active " + unit + ".service", "start " + unit + ".service"}; !slices.Equal(m.called(), want) {
		t.Errorf("systemctl calls %q, want %q", m.called(), want)
	}
	b, err := os.ReadFile(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, line := range []string{
		`ExecStart="` + s.Binary + `" serve`,
		`Environment="CICY_HOME=` + strings.ReplaceAll(s.Home, "%", "%%") + `"`,
		`Environment="PATH=/opt/x/bin:/usr/bin"`,
		`EnvironmentFile=-` + strings.ReplaceAll(s.Home, "%", "%%") + `/service.env`,
		"Restart=on-failure", "RestartSec=5s", "KillMode=process", "WantedBy=default.target",
	} {
		if !slices.Contains(strings.Split(text, "\n"), line) {
			t.Errorf("the unit has no line %q:\n%s", line, text)
		}
	}
	for _, secret := range []string{testKey, "sk-openai-in-file"} {
		if strings.Contains(text, secret) {
			t.Errorf("the unit holds a key:\n%s", text)
		}
	}
	// The tag is the one the home's tmux server is named by.
	if sock := pane.NewTmuxServer(s.Home, nil).Socket; unit != "cicy-agent-"+strings.TrimPrefix(sock, "cicy-") {
		t.Errorf("unit %s does not carry the home's tag (tmux socket %s)", unit, sock)
	}

	t.Run("systemd-analyze verify", func(t *testing.T) {
		if _, err := exec.LookPath("systemd-analyze"); err != nil {
			t.Skip("systemd-analyze is not installed")
		}
		var out bytes.Buffer
		cmd := exec.Command("systemd-analyze", "verify", s.Path())
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil || strings.Contains(out.String(), filepath.Base(s.Path())) {
			t.Errorf("systemd-analyze verify: %v\n%s\n%s", err, out.String(), text)
		}
	})

	// Again: the unit is rewritten, and a running service is not started.
	if err := os.WriteFile(s.Path(), []byte("[Service]\nExecStart=/old serve\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err = s.Install(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Rewritten || res.Started || !res.Active || !strings.Contains(res.Note, "next start") {
		t.Errorf("a second install answered %+v", res)
	}
	if b, _ := os.ReadFile(s.Path()); string(b) != text {
		t.Errorf("the unit was not rewritten:\n%s", b)
	}
	if n := len(m.called()); m.called()[n-1] != "is-active "+unit+".service" {
		t.Errorf("a second install ran %q", m.called())
	}
}

// A supervisor started outside systemd holds the home: the unit is
// enabled, not started (it would fail: one supervisor per home).
func TestServiceInstallBesideARunningSupervisor(t *testing.T) {
	t.Parallel()
	m := &fakeUserManager{linger: true}
	s := testService(t, m)
	f, err := os.OpenFile(supervisor.Home{Root: s.Home}.LockFile(), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	res, err := s.Install(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Started || res.Active || !res.Enabled || !strings.Contains(res.Note, "cicy-agent shutdown") || res.LingerCmd != "" {
		t.Errorf("install answered %+v", res)
	}
	if slices.ContainsFunc(m.called(), func(c string) bool { return strings.HasPrefix(c, "start") }) {
		t.Errorf("install started the unit: %q", m.called())
	}
}

func TestServiceWithoutSystemd(t *testing.T) {
	t.Parallel()
	m := &fakeUserManager{why: "systemctl is not installed"}
	s := testService(t, m)
	res, err := s.Install(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Systemd || res.NoSystemd != m.why || res.Enabled {
		t.Errorf("install answered %+v", res)
	}
	if _, err := os.Stat(s.Path()); err == nil {
		t.Error("install wrote a unit without systemd")
	}
	if len(m.called()) != 0 {
		t.Errorf("systemctl was run: %q", m.called())
	}
	// The crontab line: the same home, binary, PATH and key file, a
	// log in the home; % escaped (cron ends a command there).
	want := `@reboot set -a; [ ! -r '` + s.Home + `/service.env' ] || . '` + s.Home + `/service.env'; set +a; PATH='/opt/x/bin:/usr/bin' CICY_HOME='` + s.Home + `' '` + s.Binary + `' serve >> '` + s.Home + `/logs/boot.log' 2>&1`
	if want = strings.ReplaceAll(want, "%", `\%`); res.Crontab != want {
		t.Errorf("crontab line\n%s\nwant\n%s", res.Crontab, want)
	}
	if strings.Contains(res.Crontab, testKey) {
		t.Error("the crontab line holds a key")
	}
	// sh runs it as cron would (less the %): the binary gets the home.
	fake := filepath.Join(t.TempDir(), "fake")
	// Written by a child of its own, not by this process: a program
	// another test forks while this process holds the file open for
	// writing would keep it open, and running it would fail with "text
	// file busy".
	write := exec.Command("sh", "-c", `cat > "$1" && chmod 755 "$1"`, "sh", fake)
	write.Stdin = strings.NewReader("#!/bin/sh\necho \"$CICY_HOME|$1|$OPENAI_API_KEY\"\n")
	if out, err := write.CombinedOutput(); err != nil {
		t.Fatalf("write %s: %v %s", fake, err, out)
	}
	if err := os.WriteFile(s.EnvFile(), []byte("OPENAI_API_KEY=from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.Binary = fake
	line := strings.ReplaceAll(strings.TrimPrefix(s.CronLine(), "@reboot "), `\%`, "%")
	if out, err := exec.Command("sh", "-c", line).CombinedOutput(); err != nil || len(out) != 0 {
		t.Fatalf("sh -c %s: %v %s", line, err, out)
	}
	if b, _ := os.ReadFile(s.BootLog()); string(b) != s.Home+"|serve|from-file\n" {
		t.Errorf("boot.log holds %q", b)
	}

	st := s.Status(context.Background())
	if st.Installed || st.Systemd || st.NoSystemd != m.why || st.Crontab == "" {
		t.Errorf("status answered %+v", st)
	}
}

func TestServiceUninstallAndStatus(t *testing.T) {
	t.Parallel()
	m := &fakeUserManager{}
	s := testService(t, m)
	ctx := context.Background()
	if st := s.Status(ctx); st.Installed || !st.Systemd || st.UnitFileState != "disabled" || st.ActiveState != "inactive" {
		t.Errorf("status before install: %+v", st)
	}
	res, err := s.Uninstall(ctx)
	if err != nil || res.Installed || res.Removed {
		t.Errorf("uninstall of nothing: %+v %v", res, err)
	}
	if _, err := s.Install(ctx); err != nil {
		t.Fatal(err)
	}
	if st := s.Status(ctx); !st.Installed || st.UnitFileState != "enabled" || st.ActiveState != "active" {
		t.Errorf("status after install: %+v", st)
	}
	res, err = s.Uninstall(ctx)
	if err != nil || !res.Installed || !res.Removed || !res.Stopped {
		t.Errorf("uninstall: %+v %v", res, err)
	}
	if _, err := os.Stat(s.Path()); err == nil {
		t.Error("the unit is still there")
	}
	if !slices.Contains(m.called(), "disable --now "+filepath.Base(s.Path())) {
		t.Errorf("not disabled: %q", m.called())
	}
	if st := s.Status(ctx); st.Installed {
		t.Errorf("status after uninstall: %+v", st)
	}

	// Without systemd, the file and the link disable would remove go.
	if _, err := s.Install(ctx); err != nil {
		t.Fatal(err)
	}
	m.why = "no user manager"
	wants := filepath.Join(s.UnitDir, "default.target.wants")
	if err := os.MkdirAll(wants, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(s.Path(), filepath.Join(wants, filepath.Base(s.Path()))); err != nil {
		t.Fatal(err)
	}
	res, err = s.Uninstall(ctx)
	if err != nil || !res.Removed || res.Systemd {
		t.Errorf("uninstall without systemd: %+v %v", res, err)
	}
	if _, err := os.Lstat(filepath.Join(wants, filepath.Base(s.Path()))); err == nil {
		t.Error("the wants link is still there")
	}
}

// Two homes, two units.
func TestServiceUnitPerHome(t *testing.T) {
	t.Parallel()
	a := &Service{Home: "/home/u/cicy-ai", UnitDir: "/x"}
	b := &Service{Home: "/home/u/other", UnitDir: "/x"}
	if a.Unit() == b.Unit() || !strings.HasPrefix(a.Unit(), "cicy-agent-") {
		t.Errorf("units %s and %s", a.Unit(), b.Unit())
	}
}
