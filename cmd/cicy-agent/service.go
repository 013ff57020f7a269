package main

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/cicy-ai/cicy-agent/cicy/provider"
	"github.com/cicy-ai/cicy-agent/cmd/cicy-agent/service"
	"github.com/cicy-ai/cicy-agent/supervisor"
)

// cicy-agent service: the home's supervisor started at boot by a systemd
// user unit, else a crontab line (package service does the work).

// newService is the service of the home c names, run by this binary, with
// the machine's own user manager.
func (e *env) newService(c *cli.Context) (*service.Service, error) {
	h, err := home(c)
	if err != nil {
		return nil, err
	}
	bin, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this program's path: %w", err)
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return nil, fmt.Errorf("find this program's path: %w", err)
	}
	dir, err := service.UnitDir(os.Getenv)
	if err != nil {
		return nil, err
	}
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	return &service.Service{Home: h.Root, Binary: bin, UnitDir: dir, User: name, Getenv: os.Getenv, Manager: service.SystemdUser{}, Passed: e.servedEnv(), SearchPath: os.Getenv("PATH")}, nil
}

// servedEnv are the variables the supervisor reads: the credentials, the
// upstream URLs and serve's flags' variables, but the home (the unit's).
func (e *env) servedEnv() []string {
	names := append(append([]string(nil), provider.Credentials...), provider.Upstreams...)
	for _, f := range e.serveCmd().Flags {
		if d, ok := f.(cli.DocGenerationFlag); ok {
			for _, v := range d.GetEnvVars() {
				if !slices.Contains(names, v) && v != "CICY_HOME" {
					names = append(names, v)
				}
			}
		}
	}
	return names
}

func (e *env) serviceCmd() *cli.Command {
	return &cli.Command{
		Name:  "service",
		Usage: "start the supervisor at boot: install, uninstall, status (a systemd user unit, else a crontab line)",
		Description: "install writes a systemd user unit for the home, cicy-agent-<tag>.service in\n" +
			"$XDG_CONFIG_HOME/systemd/user (~/.config/systemd/user), that runs this binary's 'serve' with\n" +
			"CICY_HOME and your PATH (to find tmux and the CLI agents) set, restarted 5 s after a failure\n" +
			"(given up after 5 starts in 5 minutes). It enables and starts it, and prints the one command\n" +
			"that makes it start at boot without a login (loginctl enable-linger <user>). The <tag> is the\n" +
			"hash of the home path, so each home has a unit of its own. Stopping the service is a shutdown:\n" +
			"tmux panes keep running for the next start.\n\n" +
			"No key goes into the unit: the supervisor's keys (ANTHROPIC_API_KEY, OPENAI_API_KEY, CICY_DB, …)\n" +
			"go in the home's service.env, NAME=value lines, which the unit reads at each start. install\n" +
			"names each such variable set in your shell but not in that file: the service would not have it.\n\n" +
			"Where systemd is not (no systemctl, a machine not started by it, or no user manager to reach),\n" +
			"install writes nothing and prints an @reboot line for your crontab (crontab -e) that does the\n" +
			"same; it exits 0.",
		Subcommands: []*cli.Command{
			{
				Name:  "install",
				Usage: "write, enable and start the home's systemd user unit (again: rewrite it), else print a crontab line",
				Description: "Re-running install rewrites the unit with this binary's path and says so; a running service\n" +
					"goes on with the old one until its next start (systemctl --user restart <unit>). A supervisor\n" +
					"started outside systemd is left running: the service starts at the next boot, or after\n" +
					"'cicy-agent shutdown' and 'systemctl --user start <unit>'.",
				Flags:  []cli.Flag{jsonFlag},
				Action: e.serviceAction(e.printInstall),
			},
			{
				Name:   "uninstall",
				Usage:  "stop and disable the home's unit and remove it (tmux panes keep running)",
				Flags:  []cli.Flag{jsonFlag},
				Action: e.serviceAction(e.printUninstall),
			},
			{
				Name:   "status",
				Usage:  "whether the home's unit is installed, and whether systemd has it enabled and running",
				Flags:  []cli.Flag{jsonFlag},
				Action: e.serviceAction(e.printServiceStatus),
			},
		},
	}
}

// serviceAction checks the arguments and runs do on the home's service.
func (e *env) serviceAction(do func(c *cli.Context, s *service.Service) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		if c.Args().Present() {
			return usagef("usage: cicy-agent service %s [--json]", c.Command.Name)
		}
		s, err := e.newService(c)
		if err != nil {
			return err
		}
		return do(c, s)
	}
}

func (e *env) printInstall(c *cli.Context, s *service.Service) error {
	if !c.Bool("json") { // before the home is made: a failure still tells
		for _, name := range s.Lost() {
			fmt.Fprintf(e.stderr, "warning: %s is set here but the service will not have it: put it in %s (NAME=value, one a line)\n", name, s.EnvFile())
		}
	}
	if err := (supervisor.Home{Root: s.Home}).Prepare(); err != nil {
		return err
	}
	res, err := s.Install(c.Context)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(e.stdout, res)
	}
	if !res.Systemd {
		fmt.Fprintf(e.stdout, "no systemd here: %s.\nnothing was installed. To start the supervisor at boot, add this line to your crontab (crontab -e):\n%s\n", res.NoSystemd, res.Crontab)
		return nil
	}
	verb := "wrote"
	if res.Rewritten {
		verb = "rewrote (it was installed already)"
	}
	fmt.Fprintf(e.stdout, "%s %s\nenabled %s", verb, res.Path, res.Unit)
	switch {
	case res.Started:
		fmt.Fprint(e.stdout, " and started it\n")
	case res.Active:
		fmt.Fprint(e.stdout, "; it runs\n")
	default:
		fmt.Fprint(e.stdout, "\n")
	}
	if res.Note != "" {
		fmt.Fprintln(e.stdout, res.Note)
	}
	if res.LingerCmd != "" {
		fmt.Fprintf(e.stdout, "to start it at boot without a login, run once: %s\n", res.LingerCmd)
	}
	return nil
}

func (e *env) printUninstall(c *cli.Context, s *service.Service) error {
	res, err := s.Uninstall(c.Context)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(e.stdout, res)
	}
	switch {
	case !res.Installed:
		fmt.Fprintf(e.stdout, "no service was installed for %s (no %s)\n", res.Home, res.Path)
	case res.Stopped:
		fmt.Fprintf(e.stdout, "stopped, disabled and removed %s (tmux panes keep running; any command starts a supervisor again)\n", res.Path)
	case res.Systemd:
		fmt.Fprintf(e.stdout, "disabled and removed %s\n", res.Path)
	default:
		fmt.Fprintf(e.stdout, "removed %s (no systemd here to disable it: %s)\n", res.Path, res.NoSystemd)
	}
	if !res.Systemd {
		fmt.Fprintln(e.stdout, "if you added the @reboot line to your crontab, remove it there (crontab -e)")
	}
	return nil
}

func (e *env) printServiceStatus(c *cli.Context, s *service.Service) error {
	res := s.Status(c.Context)
	if c.Bool("json") {
		return printJSON(e.stdout, res)
	}
	if res.Installed {
		fmt.Fprintf(e.stdout, "installed: %s\n", res.Path)
	} else {
		fmt.Fprintf(e.stdout, "not installed (no %s)\n", res.Path)
	}
	if !res.Systemd {
		fmt.Fprintf(e.stdout, "no systemd here: %s; a crontab line starts it at boot instead:\n%s\n", res.NoSystemd, res.Crontab)
		return nil
	}
	fmt.Fprintf(e.stdout, "%s: %s, %s\n", res.Unit, res.UnitFileState, res.ActiveState)
	if !res.Linger {
		fmt.Fprintf(e.stdout, "it starts at your login only: loginctl enable-linger %s makes it start at boot\n", s.User)
	}
	return nil
}
