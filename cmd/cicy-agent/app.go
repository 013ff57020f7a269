package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/cicy/clip"
	"github.com/cicy-ai/cicy-agent/cmd/cicy-agent/dashboard"
	"github.com/cicy-ai/cicy-agent/cmd/cicy-agent/termsafe"
	"github.com/cicy-ai/cicy-agent/panetype"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor"
	"github.com/cicy-ai/cicy-agent/supervisor/logscrub"
	"github.com/cicy-ai/cicy-agent/topology"
)

// env carries what every command needs.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	app := &cli.App{
		Name:  "cicy-agent",
		Usage: "run a mixed team of AI agents on one machine",
		Description: "A supervisor daemon owns the panes (CLI agents, shell commands, headless cicy agents)\n" +
			"and keeps their state in $CICY_HOME/db/cicy.db. Client commands talk to it over\n" +
			"$CICY_HOME/run/cicy.sock and start it in the background when none is running.\n\n" +
			"Reference (team files, role templates and meta.yaml, lite-config.json, the scripted model,\n" +
			"hooks, the HTTP API, requests and caching): the docs/ folder of the cicy-agent repository.",
		Version:         version,
		Reader:          stdin,
		Writer:          stdout,
		ErrWriter:       stderr,
		HideVersion:     true,
		OnUsageError:    onUsageError,
		HideHelpCommand: true,
		ExitErrHandler:  func(*cli.Context, error) {}, // errors are reported by run
		// A command line ending in --generate-bash-completion lists the
		// words that may come next (see completion.go).
		EnableBashCompletion: true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "home", Usage: "the cicy home `DIR` (default: $CICY_HOME, else ~/cicy-ai)", EnvVars: []string{"CICY_HOME"}},
		},
		Commands: []*cli.Command{
			e.serveCmd(), e.shutdownCmd(), e.createCmd(), e.lsCmd(), e.sendCmd(), e.screenCmd(),
			e.attachCmd(), e.killCmd(), e.restartCmd(), e.answerCmd(), e.cancelCmd(),
			e.slashCmd("compact", "fold a cicy pane's conversation into a summary (same as sending /compact)"),
			e.slashCmd("clear", "start a cicy pane's conversation afresh; persona and memory stay (same as sending /clear)"),
			e.memoryCmd(), e.dispatchCmd(), e.tasksCmd(), e.waitCmd(), e.cancelTaskCmd(),
			e.diffCmd(), e.mergeCmd(), e.worktreesCmd(),
			e.upCmd(), e.downCmd(), e.statusCmd(), e.nodesCmd(), e.agentsCmd(), e.usageCmd(), e.budgetCmd(), e.notifyCmd(), e.webCmd(), e.dashboardCmd(), e.viewCmd(), e.hookCmd(), e.mcpCmd(), e.explainCmd(), e.serviceCmd(), e.completionCmd(), e.versionCmd(),
		},
	}
	for _, c := range app.Commands {
		e.guard(c)
		// No built-in "help"/"h" subcommand where a command takes words:
		// `create h -- bash` is a pane titled h, not help (--help stays).
		c.HideHelpCommand = len(c.Subcommands) == 0
		c.OnUsageError = onUsageError
		for _, sub := range c.Subcommands {
			sub.OnUsageError = onUsageError
		}
	}
	e.completePanes(app.Commands)
	return app
}

// home resolves --home / CICY_HOME / ~/cicy-ai to an absolute path.
func home(c *cli.Context) (supervisor.Home, error) {
	h := c.String("home")
	if h == "" {
		var err error
		if h, err = supervisor.DefaultHome(); err != nil {
			return supervisor.Home{}, err
		}
	}
	abs, err := filepath.Abs(h)
	if err != nil {
		return supervisor.Home{}, fmt.Errorf("resolve home %s: %w", h, err)
	}
	return supervisor.Home{Root: abs}, nil
}

// client returns a client to a running supervisor, starting one if needed.
func client(c *cli.Context) (*api.Client, error) {
	h, err := home(c)
	if err != nil {
		return nil, err
	}
	cl := api.NewClient(h)
	cl.Progress = func(msg string) { fmt.Fprintln(c.App.ErrWriter, msg) }
	if err := cl.Ensure(c.Context); err != nil {
		return nil, err
	}
	return cl, nil
}

// args checks the number of positional arguments.
func args(c *cli.Context, min, max int, usage string) ([]string, error) {
	a := c.Args().Slice()
	if len(a) < min || (max >= 0 && len(a) > max) {
		return nil, usagef("usage: cicy-agent %s %s", c.Command.Name, usage)
	}
	return a, nil
}

// paneArg is the one pane argument: an id (w-3), or a title the
// supervisor resolves (one pane must have it).
func paneArg(c *cli.Context, usage string) (string, error) {
	a, err := args(c, 1, 1, usage)
	if err != nil {
		return "", err
	}
	return paneRef(a[0])
}

// paneRef is a pane named on the command line: its id (w-3, w-3:main.0)
// or a title, which the supervisor resolves.
func paneRef(s string) (string, error) {
	if id, err := api.ParsePaneID(s); err == nil || strings.HasPrefix(s, "w-") {
		return id, err
	}
	if strings.TrimSpace(s) == "" {
		return "", usagef("the pane is empty: name it by id (w-<N>) or title")
	}
	return s, nil
}

// withPane parses the one pane argument, connects (starting the
// supervisor if needed) and runs f.
func withPane(c *cli.Context, f func(cl *api.Client, id string) error) error {
	id, err := paneArg(c, "<pane>")
	if err != nil {
		return err
	}
	return withClient(c, func(cl *api.Client) error { return f(cl, id) })
}

// listPanes connects (starting the supervisor if needed) and lists the
// panes.
func listPanes(c *cli.Context) (*api.Client, []api.PaneInfo, error) {
	cl, err := client(c)
	if err != nil {
		return nil, nil, err
	}
	panes, err := cl.List(c.Context)
	if err != nil {
		return nil, nil, err
	}
	return cl, panes, nil
}

// withClient connects (starting the supervisor if needed) and runs f.
func withClient(c *cli.Context, f func(cl *api.Client) error) error {
	cl, err := client(c)
	if err != nil {
		return err
	}
	return f(cl)
}

// connect checks the positional arguments (as args does), then connects
// to the supervisor, starting it if needed.
func connect(c *cli.Context, min, max int, usage string) ([]string, *api.Client, error) {
	a, err := args(c, min, max, usage)
	if err != nil {
		return nil, nil, err
	}
	cl, err := client(c)
	if err != nil {
		return nil, nil, err
	}
	return a, cl, nil
}

// fetch connects (starting the supervisor if needed) and presents what
// get gets.
func fetch[T any](e *env, c *cli.Context, get func(cl *api.Client) (T, error), text func(T) error) error {
	return withClient(c, func(cl *api.Client) error {
		return present(e, c, func() (T, error) { return get(cl) }, text)
	})
}

// present gets v and prints it: the JSON document with --json, else as
// text says.
func present[T any](e *env, c *cli.Context, get func() (T, error), text func(T) error) error {
	v, err := get()
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(e.stdout, v)
	}
	return text(v)
}

// writeJSONLine writes v as one line of JSON.
func writeJSONLine(w io.Writer, v any) error {
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(v); err != nil {
		return err
	}
	_, err := w.Write(termsafe.JSON(b.Bytes()))
	return err
}

// listAction is the action of a command that shows what the supervisor
// has (nodes, sinks, browsers): no argument; the document with --json,
// else show prints it.
func listAction[T any](e *env, get func(*api.Client, context.Context) (T, error), show func(io.Writer, T) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		if _, err := args(c, 0, 0, "[--json]"); err != nil {
			return err
		}
		return fetch(e, c, func(cl *api.Client) (T, error) { return get(cl, c.Context) }, func(v T) error { return show(e.stdout, v) })
	}
}

// paneAction is the action of a command that shows what a pane has
// (its memories, say): the one <pane> argument; the document with
// --json, else show prints it.
func paneAction[T any](e *env, get func(*api.Client, context.Context, string) (T, error), show func(T) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		return withPane(c, func(cl *api.Client, id string) error {
			return present(e, c, func() (T, error) { return get(cl, c.Context, id) }, show)
		})
	}
}

// doneAction is the action of a command that does one thing to what its
// one argument names (usage says what) and says so: done is a format
// taking the argument.
func doneAction(e *env, usage string, do func(*api.Client, context.Context, string) error, done string) cli.ActionFunc {
	return func(c *cli.Context) error {
		a, cl, err := connect(c, 1, 1, usage)
		if err != nil {
			return err
		}
		if err := do(cl, c.Context, a[0]); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, done, a[0])
		return nil
	}
}

// paneNote is the action of a command that does something to the pane
// of its one argument: do's note, if any, goes to stderr when it went
// well.
func (e *env) paneNote(do func(ctx context.Context, cl *api.Client, id string) (string, error)) cli.ActionFunc {
	return func(c *cli.Context) error {
		return withPane(c, func(cl *api.Client, id string) error {
			note, err := do(c.Context, cl, id)
			if err == nil && note != "" {
				fmt.Fprintln(e.stderr, note)
			}
			return err
		})
	}
}

// showThen prints v, the JSON document with --json, else as text says,
// and then answers what judge makes of it: a result that is a failure
// is printed too.
func showThen[T any](e *env, c *cli.Context, v T, text func(T), judge func(T) error) error {
	if c.Bool("json") {
		if err := printJSON(e.stdout, v); err != nil {
			return err
		}
	} else {
		text(v)
	}
	return judge(v)
}

// printTable prints head and a line per item as aligned columns (the
// cells of a line tab-separated).
func printTable[T any](w io.Writer, head string, items []T, line func(T) string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, head)
	for _, it := range items {
		fmt.Fprintln(tw, line(it))
	}
	return tw.Flush()
}

// printJSON writes v as indented JSON; the C0 and C1 controls in its
// strings are escaped (\u001b), so that it is safe on a terminal too.
func printJSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(termsafe.JSON(b.Bytes()))
	return err
}

var jsonFlag = &cli.BoolFlag{Name: "json", Usage: "print JSON for scripts"}

func (e *env) serveCmd() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "run the supervisor in the foreground (client commands start it in the background by themselves)",
		Description: "The supervisor keeps its panes and tasks in db/cicy.db under the home. If that database is missing\n" +
			"or empty (0 bytes, no tables, or only another program's tables) while the home still holds the\n" +
			"folders of panes (workspaces/w-N, panes/w-N) or a tmux server with sessions, it refuses to start:\n" +
			"restore the database from a backup, or start over with --fresh, which moves those folders and the\n" +
			"old database into orphaned-<time>/ under the home and ends the home's tmux sessions.\n\n" +
			"The supervisor also serves the model gateway on 127.0.0.1: the " + topology.List(panetype.Agents(), "and") + " panes\n" +
			"reach their model through it, each with a key of its own, while the real keys\n" +
			"(ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, OPENAI_API_KEY) stay with the supervisor; it forwards\n" +
			"to ANTHROPIC_BASE_URL / OPENAI_BASE_URL (the public APIs when unset) and records every call's\n" +
			"usage (see 'cicy-agent usage'). Its port is chosen at the first start and kept.\n\n" +
			"With --db (or CICY_DB) the state lives in that PostgreSQL database instead of db/cicy.db, and\n" +
			"supervisors on several machines that share it are one cluster: each is a node (--node, default\n" +
			"the host name) that runs its own panes, and ls, status, tasks and the dashboard show every\n" +
			"node's. With --listen (or CICY_LISTEN) the API is served on TCP too, for the holders of the\n" +
			"cluster secret (CICY_CLUSTER_TOKEN or --cluster-token-file), over TLS with --tls-cert and\n" +
			"--tls-key: the other nodes forward commands on this node's panes to it there.\n\n" +
			"With --web HOST:PORT (or CICY_WEB) the supervisor serves the team's page to browsers from the\n" +
			"start; beyond loopback only over TLS (--web-tls, or --web-tls-cert and --web-tls-key). See\n" +
			"'cicy-agent web --help'.",
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "settle", Value: 500 * time.Millisecond, Usage: "output quiet `TIME` after which a shell pane is idle"},
			&cli.DurationFlag{Name: "stop-grace", Value: 3 * time.Second, Usage: "`TIME` a stopping pane gets between SIGTERM and SIGKILL"},
			&cli.BoolFlag{Name: "fresh", Usage: "start over when the database is missing or empty: move the folders of the panes it described aside and end their tmux sessions"},
			&cli.IntFlag{Name: "gateway-port", Usage: "serve the model gateway on 127.0.0.1:`PORT` from now on (default: the port this home's first supervisor chose, kept across restarts)", EnvVars: []string{"CICY_GATEWAY_PORT"}},
			&cli.StringFlag{Name: "listen", Usage: "also serve the API on TCP at `HOST:PORT` for the cluster's other nodes, each request carrying the cluster secret (CICY_CLUSTER_TOKEN, or --cluster-token-file)", EnvVars: []string{"CICY_LISTEN"}},
			&cli.StringFlag{Name: "cluster-token-file", Usage: "read the cluster secret from `FILE` (readable by its owner only) instead of CICY_CLUSTER_TOKEN", EnvVars: []string{"CICY_CLUSTER_TOKEN_FILE"}},
			&cli.StringFlag{Name: "tls-cert", Usage: "serve the cluster API over TLS with the certificate in `FILE` (PEM; with --tls-key)", EnvVars: []string{"CICY_TLS_CERT"}},
			&cli.StringFlag{Name: "tls-key", Usage: "the TLS certificate's private key `FILE` (PEM)", EnvVars: []string{"CICY_TLS_KEY"}},
			&cli.StringFlag{Name: "node", Usage: "this supervisor's `NAME` in a cluster sharing one database (default: the host name); letters, digits, '.', '_' and '-'", EnvVars: []string{"CICY_NODE"}},
			&cli.StringFlag{Name: "web", Usage: "serve the team's page at `HOST:PORT` (127.0.0.1:0: any free port, kept for the home); beyond loopback with --web-tls or --web-tls-cert (see 'cicy-agent web')", EnvVars: []string{"CICY_WEB"}},
			&cli.BoolFlag{Name: "web-tls", Usage: "serve the page over TLS with a certificate the supervisor makes once and keeps in the home", EnvVars: []string{"CICY_WEB_TLS"}},
			&cli.StringFlag{Name: "web-tls-cert", Usage: "serve the page over TLS with the certificate in `FILE` (PEM; with --web-tls-key)", EnvVars: []string{"CICY_WEB_TLS_CERT"}},
			&cli.StringFlag{Name: "web-tls-key", Usage: "the page's certificate's private key `FILE` (PEM)", EnvVars: []string{"CICY_WEB_TLS_KEY"}},
			&cli.StringFlag{Name: "db", Usage: "keep the state in the PostgreSQL database at `URL` (postgres://user@host:5432/name) instead of db/cicy.db under the home; a password goes in CICY_DB, PGPASSWORD or ~/.pgpass, never on the command line", EnvVars: []string{"CICY_DB"}},
			// The client that starts a supervisor in the background reads
			// a startup failure from this descriptor (closed once ready).
			&cli.IntFlag{Name: "report-fd", Hidden: true},
		},
		Action: func(c *cli.Context) (err error) {
			var report *os.File
			if fd := c.Int("report-fd"); fd > 2 {
				syscall.CloseOnExec(fd) // not for the panes
				report = os.NewFile(uintptr(fd), "startup report")
			}
			ready := func() {
				if report != nil {
					report.Close()
					report = nil
				}
			}
			defer func() {
				if err != nil && report != nil && !errors.Is(err, supervisor.ErrAlreadyRunning) {
					fmt.Fprintln(report, strings.ReplaceAll(err.Error(), "\n", " "))
				}
				ready()
			}()
			if _, err := args(c, 0, 0, ""); err != nil {
				return err
			}
			h, err := home(c)
			if err != nil {
				return err
			}
			db, err := dbURL(c.String("db"), os.Getenv("CICY_DB"))
			if err != nil {
				return err
			}
			listen, err := clusterListen(c)
			if err != nil {
				return err
			}
			node, err := nodeName(c.String("node"))
			if err != nil {
				return err
			}
			webAt, err := webFlags(c)
			if err != nil {
				return err
			}
			if err := h.Prepare(); err != nil {
				return err
			}
			logf, err := os.OpenFile(h.Log(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
			if err != nil {
				return fmt.Errorf("open log %s: %w", h.Log(), err)
			}
			defer logf.Close()
			logger := logrus.New()
			logger.SetOutput(logf)
			scrub := logscrub.New(os.Getenv, listen.Token)
			logger.SetFormatter(logscrub.Formatter(&logrus.TextFormatter{FullTimestamp: true, TimestampFormat: time.RFC3339Nano, DisableColors: true}, scrub))
			if err := supervisor.HideEnvironment(); err != nil {
				logger.WithError(err).Warn("Could not hide the supervisor's environment from the panes' programs")
			}
			ctx, stop := signal.NotifyContext(c.Context, syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			err = supervisor.Serve(ctx, supervisor.Config{
				Home: h, Version: version, Settle: c.Duration("settle"), StopGrace: c.Duration("stop-grace"),
				Log: logrus.NewEntry(logger).WithField("pid", os.Getpid()), Fresh: c.Bool("fresh"), Ready: ready,
				GatewayPort: c.Int("gateway-port"), DB: db, Listen: listen, Node: node, Scrub: scrub,
				Web: webAt, WebPages: webPages,
			})
			if err != nil {
				logger.WithError(err).Error("Supervisor stopped with an error")
			}
			return err
		},
	}
}

// dbURL checks serve's --db value: empty (the home's SQLite file) or a
// postgres:// URL. A password in it is refused unless it came from CICY_DB
// (fromEnv): on the command line every local user could read it.
func dbURL(value, fromEnv string) (string, error) {
	if value == "" {
		return "", nil
	}
	if !schema.IsURL(value) {
		return "", usagef("--db takes a postgres:// URL (the SQLite database is db/cicy.db under the home, used when --db is not given), not %q", value)
	}
	u, err := url.Parse(value)
	if err != nil {
		return "", usagef("--db %s: %v", schema.RedactURL(value), err)
	}
	if _, has := u.User.Password(); has && value != fromEnv {
		return "", usagef("--db %s holds a password, which every local user can read on a command line: give the URL in CICY_DB, or the password in PGPASSWORD or ~/.pgpass", schema.RedactURL(value))
	}
	return value, nil
}

// nodeName checks serve's --node: empty (the host name) or a name of
// letters, digits, '.', '_' and '-', at most 63 long.
func nodeName(v string) (string, error) {
	if v == "" {
		return supervisor.DefaultNode(), nil
	}
	if !topology.ValidNode(v) {
		return "", usagef("--node %q: a node name is 1 to 63 letters, digits, '.', '_' or '-', starting with a letter or digit", v)
	}
	return v, nil
}

// webFlags reads serve's web page settings: where, and its TLS (the
// files come as a pair and are made absolute).
func webFlags(c *cli.Context) (supervisor.Web, error) {
	w := supervisor.Web{Addr: c.String("web"), TLS: c.Bool("web-tls"), CertFile: c.String("web-tls-cert"), KeyFile: c.String("web-tls-key")}
	if (w.CertFile == "") != (w.KeyFile == "") {
		return w, usagef("--web-tls-cert and --web-tls-key go together")
	}
	if w.Addr == "" {
		if w.TLS || w.CertFile != "" {
			return w, usagef("--web-tls and --web-tls-cert are for the page: give --web HOST:PORT too")
		}
		return w, nil
	}
	if _, _, err := net.SplitHostPort(w.Addr); err != nil {
		return w, usagef("--web %q is not HOST:PORT (127.0.0.1:0 for any free port): %v", w.Addr, err)
	}
	var err error
	if w.CertFile != "" {
		if w.CertFile, err = filepath.Abs(w.CertFile); err != nil {
			return w, err
		}
		if w.KeyFile, err = filepath.Abs(w.KeyFile); err != nil {
			return w, err
		}
	}
	return w, nil
}

// clusterListen reads serve's cluster API settings: the address, the
// secret (from --cluster-token-file, which only its owner may read, or
// CICY_CLUSTER_TOKEN; never a command-line value) and the TLS files, which
// come as a pair.
func clusterListen(c *cli.Context) (supervisor.Listen, error) {
	l := supervisor.Listen{Addr: c.String("listen"), CertFile: c.String("tls-cert"), KeyFile: c.String("tls-key")}
	if (l.CertFile == "") != (l.KeyFile == "") {
		return l, usagef("--tls-cert and --tls-key go together")
	}
	if l.Addr == "" {
		if l.CertFile != "" {
			return l, usagef("--tls-cert is for the cluster API: give --listen HOST:PORT too")
		}
		// Without a listener of its own a node still forwards to the
		// others with the secret, when it has one.
		l.Token = os.Getenv("CICY_CLUSTER_TOKEN")
		return l, nil
	}
	if _, _, err := net.SplitHostPort(l.Addr); err != nil {
		return l, usagef("--listen %q is not HOST:PORT: %v", l.Addr, err)
	}
	l.Token = os.Getenv("CICY_CLUSTER_TOKEN")
	if f := c.String("cluster-token-file"); f != "" {
		st, err := os.Stat(f)
		if err != nil {
			return l, fmt.Errorf("read the cluster secret: %w", err)
		}
		if st.Mode().Perm()&0o077 != 0 {
			return l, usagef("the cluster secret file %s can be read by other users (mode %04o): chmod 600 it", f, st.Mode().Perm())
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return l, fmt.Errorf("read the cluster secret: %w", err)
		}
		l.Token = strings.TrimSpace(string(b))
	}
	if len(l.Token) < supervisor.MinClusterToken {
		return l, usagef("--listen needs the cluster secret, at least %d characters, in CICY_CLUSTER_TOKEN or a file named by --cluster-token-file", supervisor.MinClusterToken)
	}
	return l, nil
}

func (e *env) shutdownCmd() *cli.Command {
	return &cli.Command{
		Name:  "shutdown",
		Usage: "stop the supervisor and its PTY panes (tmux panes keep running)",
		Action: func(c *cli.Context) error {
			if _, err := args(c, 0, 0, ""); err != nil {
				return err
			}
			h, err := home(c)
			if err != nil {
				return err
			}
			err = api.NewClient(h).Shutdown(c.Context, 30*time.Second)
			if errors.Is(err, api.ErrNotRunning) {
				fmt.Fprintf(e.stderr, "no supervisor is running for %s\n", h.Root)
				return nil
			}
			return err
		},
	}
}

func (e *env) createCmd() *cli.Command {
	return &cli.Command{
		Name:      "create",
		Usage:     "create and start a pane; prints only its id",
		ArgsUsage: "<title> [-- argv…]",
		Description: "Types: cicy (default; headless agent), " + strings.Join(panetype.Agents(), ", ") + " (CLI agents), shell (any argv).\n" +
			"--role is a roster label: 'worker' (default) and 'master' drive the topology; any other\n" +
			"text makes the pane untracked. A persona is set with --role-template.\n\n" +
			"Example: cicy-agent create build --type shell -- bash",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "type", Aliases: []string{"t"}, Usage: "pane `TYPE`: " + topology.PaneTypeChoices(), Value: "cicy"},
			&cli.StringFlag{Name: "role", Usage: "roster `LABEL`: worker (default) or master; other text is untracked"},
			&cli.StringFlag{Name: "role-template", Usage: "role template `SLUG` under memory/agents/ (cicy default: assistant)"},
			&cli.StringFlag{Name: "master", Usage: "the master `PANE` this worker reports to (default: the only master there is now, said on stderr; none when there are none or several)"},
			&cli.StringFlag{Name: "workspace", Aliases: []string{"w"}, Usage: "working `DIR` (default: $CICY_HOME/workspaces/<id>)"},
			&cli.BoolFlag{Name: "worktree", Usage: "run the pane in a git worktree of its own, on a new branch cicy/<home-tag>/<id> from the current branch of the repository that --workspace (else the --master's workspace, else the current directory) is in; the worktree lives under $CICY_HOME, and each task that ends done is committed there (see 'cicy-agent diff', 'merge', 'worktrees')"},
			&cli.StringFlag{Name: "provider", Usage: "LLM `PROVIDER` of a cicy pane: anthropic, openai or script"},
			&cli.StringFlag{Name: "model", Usage: "`MODEL` of a cicy pane, or passed to a CLI agent's pane (" + strings.Join(panetype.Agents(), ", ") + ")"},
			&cli.StringFlag{Name: "backend", Usage: "`BACKEND` of a terminal pane: pty or tmux"},
			&cli.StringSliceFlag{Name: "env", Usage: "give the pane's program the supervisor's variable `NAME` (repeatable; a name, not NAME=VALUE). Terminal panes get the supervisor's environment except the provider keys (ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, OPENAI_API_KEY); this is how a shell pane gets one. " + topology.List(panetype.Agents(), "and") + " panes never get them: they reach their model through the supervisor's gateway with a token of their own"},
			&cli.BoolFlag{Name: "allow-all", Usage: "let a CLI agent's pane (" + strings.Join(panetype.Agents(), ", ") + ") run every tool without asking (its own bypass mode); without it a permission prompt puts the pane in waiting"},
			&cli.StringFlag{Name: "node", Usage: "run the pane on the cluster's node `NAME` (its supervisor is asked through this one; see 'cicy-agent nodes')"},
			&cli.StringFlag{Name: "budget-usd", Usage: "the pane's spending limit in `USD` at the price table, e.g. 2.50: once its calls cost that much, its model requests are refused (see 'cicy-agent budget')"},
			&cli.StringFlag{Name: "restart", Usage: "restart `POLICY`: always (brought back after a reboot and whenever its program exits), on-failure (after a reboot, and when it exits with an error) or never; by default a pane that was running when the machine went down comes back at the next start and an exit of its own is final. Three deaths within 10 s of starting stop the restarts (crash-loop, under needs-you)"},
		},
		Action: func(c *cli.Context) error {
			before, argv := splitDashDash(c.Args().Slice())
			if len(before) != 1 {
				return usagef("usage: cicy-agent create <title> [flags] [-- argv…]")
			}
			req := api.CreateRequest{
				Title: before[0], Type: c.String("type"), Role: c.String("role"), RoleTemplate: c.String("role-template"),
				Master: c.String("master"), Provider: c.String("provider"), Model: c.String("model"),
				Backend: c.String("backend"), Command: argv, AllowAll: c.Bool("allow-all"), Node: c.String("node"),
				Env: c.StringSlice("env"), Restart: c.String("restart"),
			}
			if c.IsSet("role") && req.Role == "" {
				return usagef("--role must not be empty")
			}
			var err error
			if req.BudgetUSD, err = budgetFlag(c); err != nil {
				return err
			}
			if req.Workspace, err = workspaceFlag(c); err != nil {
				return err
			}
			req.Worktree = c.Bool("worktree")
			// A relative program path means relative to where the user is.
			if len(argv) > 0 && strings.Contains(argv[0], "/") && !filepath.IsAbs(argv[0]) {
				abs, err := filepath.Abs(argv[0])
				if err == nil {
					req.Command = append([]string{abs}, argv[1:]...)
				}
			}
			cl, err := client(c)
			if err != nil {
				return err
			}
			resp, err := cl.Create(c.Context, req)
			if err != nil {
				return err
			}
			for _, w := range resp.Warnings {
				fmt.Fprintf(e.stderr, "warning: %s\n", w)
			}
			if j := resp.Joined; j != nil {
				fmt.Fprintf(e.stderr, "%s reports to master %s (%s), the only master (--master names one; a worker never joins a master created later)\n",
					resp.ID, j.ID, j.Title)
			}
			fmt.Fprintln(e.stdout, resp.ID)
			return nil
		},
	}
}

// workspaceFlag is --workspace as an absolute path; with --worktree and
// neither it nor --master, the current directory (the repository the
// user stands in).
func workspaceFlag(c *cli.Context) (string, error) {
	ws := c.String("workspace")
	if ws == "" && c.Bool("worktree") && c.String("master") == "" {
		ws = "."
	}
	if ws == "" {
		return "", nil
	}
	abs, err := filepath.Abs(ws)
	if err != nil {
		return "", usagef("bad workspace %s: %v", ws, err)
	}
	return abs, nil
}

func (e *env) lsCmd() *cli.Command {
	return &cli.Command{
		Name:  "ls",
		Usage: "list panes: id, title, type, role, state (with reason), workspace",
		Description: "The filters are applied by the supervisor; each may be given more than once (a pane\n" +
			"matching any of its values passes), and a pane is listed when it passes every filter given.\n\n" +
			"Example: cicy-agent ls --state busy --state waiting --role worker",
		Flags: []cli.Flag{jsonFlag,
			&cli.StringSliceFlag{Name: "state", Usage: "only panes in `STATE`: " + topology.List(api.PaneStates, "or")},
			&cli.StringSliceFlag{Name: "role", Usage: "only panes of `ROLE`: master, worker, or untracked (a label of its own)"},
			&cli.StringSliceFlag{Name: "team", Usage: "only the panes of team `NAME` (a team file's name)"},
			&cli.StringSliceFlag{Name: "node", Usage: "only the panes of node `NAME` (see 'cicy-agent nodes')"}},
		Action: func(c *cli.Context) error {
			if _, err := args(c, 0, 0, "[--state S]… [--role R]… [--team T]… [--node N]… [--json]"); err != nil {
				return err
			}
			cl, err := client(c)
			if err != nil {
				return err
			}
			f := api.PaneFilter{States: c.StringSlice("state"), Roles: c.StringSlice("role"), Teams: c.StringSlice("team"), Nodes: c.StringSlice("node")}
			if c.Bool("json") {
				panes, err := cl.ListFiltered(c.Context, f)
				if err != nil {
					return err
				}
				return printJSON(e.stdout, panes)
			}
			t := newPaneTable(e.stdout, func() bool {
				ns, err := cl.Nodes(c.Context)
				return err == nil && len(ns) > 1
			})
			if err := cl.ListEach(c.Context, f, t.add); err != nil {
				return err
			}
			switch {
			case t.rows == 0 && len(f.Query()) > 0:
				fmt.Fprintln(e.stderr, "no pane passes the filters")
			case t.rows == 0:
				fmt.Fprintln(e.stderr, "no panes; create one with: cicy-agent create <title> --type shell -- bash")
			}
			return t.flush()
		},
	}
}

// tableBlock is how many rows of ls are laid out together before any is
// printed; the rows after them keep their column widths.
const tableBlock = 500

// paneTable prints the table of ls as the panes arrive: the first
// tableBlock rows are laid out as one table (as text/tabwriter would:
// each column as wide as its widest cell, two spaces apart), then each
// row after them is printed at once in those columns, a wider cell
// pushing the rest of its row right, as ps does. The NODE column is
// there when the first rows span nodes, or, when there are more, when
// severalNodes says the home has several.
type paneTable struct {
	w            io.Writer
	severalNodes func() bool
	block        []api.PaneInfo
	widths       []int // set once the first block is printed
	many         bool
	rows         int
}

func newPaneTable(w io.Writer, severalNodes func() bool) *paneTable {
	return &paneTable{w: w, severalNodes: severalNodes}
}

// add takes the next pane.
func (t *paneTable) add(p api.PaneInfo) error {
	t.rows++
	if t.widths != nil {
		return t.line(t.cells(p))
	}
	t.block = append(t.block, p)
	if len(t.block) < tableBlock {
		return nil
	}
	return t.layout(true)
}

// flush prints what is held.
func (t *paneTable) flush() error {
	if t.widths != nil || len(t.block) == 0 {
		return nil
	}
	return t.layout(false)
}

// layout prints the heading and the first block, setting the widths.
func (t *paneTable) layout(more bool) error {
	nodes := make([]string, len(t.block))
	for i, p := range t.block {
		nodes[i] = p.Node
	}
	t.many = topology.SpansNodes(nodes...) || (more && t.severalNodes != nil && t.severalNodes())
	head := append([]string{"ID"}, nodeHeads(t.many)...)
	rows := [][]string{append(head, "TITLE", "TYPE", "ROLE", "STATE", "REASON", "TOKENS", "CACHE", "WORKSPACE")}
	for _, p := range t.block {
		rows = append(rows, t.cells(p))
	}
	t.widths = make([]int, len(rows[0])-1) // the last column is not padded
	for _, r := range rows {
		for i := range t.widths {
			t.widths[i] = max(t.widths[i], utf8.RuneCountInString(r[i]))
		}
	}
	t.block = nil
	for _, r := range rows {
		if err := t.line(r); err != nil {
			return err
		}
	}
	return nil
}

// line prints one row in the table's columns.
func (t *paneTable) line(cells []string) error {
	var b strings.Builder
	for i, c := range cells {
		b.WriteString(c)
		if i < len(t.widths) {
			b.WriteString(strings.Repeat(" ", max(t.widths[i]-utf8.RuneCountInString(c), 0)+2))
		}
	}
	b.WriteByte('\n')
	_, err := io.WriteString(t.w, b.String())
	return err
}

// cells are a pane's row.
func (t *paneTable) cells(p api.PaneInfo) []string {
	r := []string{p.ID}
	if t.many {
		r = append(r, nodeLabel(p.Node))
	}
	return append(r, clip.Runes(p.Title, 24), p.Type, clip.Runes(p.Role, 16), p.State, clip.Runes(p.Reason, 40),
		tokens(p.Usage), percent(p.CacheHit), p.Workspace)
}

// nodeHeads is the NODE column's heading, when there is one.
func nodeHeads(many bool) []string {
	if !many {
		return nil
	}
	return []string{"NODE"}
}

// nodeLabel is a NODE cell.
func nodeLabel(node string) string {
	if node == "" {
		return "-"
	}
	return clip.Runes(node, 16)
}

// nodeHead is the NODE column's heading and nodeCell its cell (with the
// tab that ends it), or nothing when the rows are all of one node.
func nodeHead(many bool) string {
	if !many {
		return ""
	}
	return "NODE\t"
}

func nodeCell(many bool, node string) string {
	if !many {
		return ""
	}
	return nodeLabel(node) + "\t"
}

// usageCell is "12.3k tok 91% cached", or "" for a pane with no usage.
func usageCell(n int64, hit float64, compactable bool) string {
	if n == 0 {
		return ""
	}
	s := fmt.Sprintf("%s tok %s cached", short(n), percent(hit))
	if compactable {
		s += " (compactable)"
	}
	return s
}

// tokens is a pane's total tokens (input of all kinds plus output), short.
func tokens(u api.Usage) string {
	return short(u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens + u.OutputTokens)
}

func short(n int64) string {
	switch {
	case n == 0:
		return "-"
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

func percent(f float64) string {
	if f < 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*f)
}

func (e *env) sendCmd() *cli.Command {
	return &cli.Command{
		Name:      "send",
		Usage:     "type text into a pane, then Enter",
		ArgsUsage: "<pane> <text…>",
		Description: "The text is delivered as a bracketed paste when the program asked for one, and\n" +
			"Enter follows it. --key sends named keys after the text (tmux names: Enter, Escape,\n" +
			"Tab, BSpace, Up, Down, Left, Right, C-c, M-x, …, or one character such as 1 or y).\n" +
			"To answer an agent's dialog, 'cicy-agent answer' knows its keys.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "no-enter", Usage: "type the text without pressing Enter"},
			&cli.StringSliceFlag{Name: "key", Aliases: []string{"k"}, Usage: "send the named `KEY` after the text (repeatable)"},
			&cli.BoolFlag{Name: "wait", Usage: "wait and print the result: a cicy pane's answer, a terminal pane's new output once quiet"},
			&cli.DurationFlag{Name: "timeout", Usage: "with --wait: give up after `TIME`, e.g. 90s or 10m (exit 1; the turn goes on)", DefaultText: "0, which means no timeout"},
			jsonFlag, rawFlag,
		},
		Action: func(c *cli.Context) error {
			a := c.Args().Slice()
			if len(a) < 1 || (len(a) < 2 && len(c.StringSlice("key")) == 0) {
				return usagef("usage: cicy-agent send <pane> <text…> [--no-enter] [--key KEY]")
			}
			id, err := paneRef(a[0])
			if err != nil {
				return err
			}
			text := a[1:]
			if len(text) > 0 && text[0] == "--" {
				text = text[1:]
			}
			req := api.SendRequest{Text: strings.Join(text, " "), Keys: c.StringSlice("key"), NoEnter: c.Bool("no-enter"),
				Wait: c.Bool("wait"), Timeout: c.Duration("timeout").Seconds()}
			if len(text) == 0 {
				req.NoEnter = true
			}
			cl, err := client(c)
			if err != nil {
				return err
			}
			res, err := cl.Send(c.Context, id, req)
			if err != nil || res == nil {
				return err
			}
			return e.printResult(c, res)
		},
	}
}

// printResult prints a turn's answer, then answers its exit (turnExit).
func (e *env) printResult(c *cli.Context, res *api.SendResult) error {
	return showThen(e, c, res, func(res *api.SendResult) {
		if res.Answer != "" {
			fmt.Fprintln(e.stdout, res.Answer)
		}
	}, turnExit)
}

// turnExit is a turn's exit: a failed or cancelled turn is a failure,
// and so is one whose history or usage could not be written.
func turnExit(res *api.SendResult) error {
	switch {
	case res.Status == cicy.TurnCompleted:
		return nil
	case res.Unsaved != "" && res.Error == res.Unsaved:
		return failf("%s", res.Unsaved) // the turn itself went well
	case res.Status == cicy.TurnCancelled && res.Unsaved != "":
		return failf("the turn was cancelled; %s", res.Unsaved)
	case res.Status == cicy.TurnCancelled:
		return failf("the turn was cancelled")
	default:
		return failf("the turn failed: %s", res.Error)
	}
}

func (e *env) cancelCmd() *cli.Command {
	return &cli.Command{
		Name:      "cancel",
		Usage:     "stop the running turn of a cicy pane and the tools it runs (queued messages still run)",
		ArgsUsage: "<pane>",
		Action: e.paneNote(func(ctx context.Context, cl *api.Client, id string) (string, error) {
			was, err := cl.Cancel(ctx, id)
			if was {
				return "", err
			}
			return id + " has no turn running", err
		}),
	}
}

// slashCmd is compact or clear: the same as sending /compact or /clear,
// waiting for it to be done.
func (e *env) slashCmd(name, usage string) *cli.Command {
	return &cli.Command{
		Name:      name,
		Usage:     usage,
		ArgsUsage: "<pane>",
		Flags:     []cli.Flag{jsonFlag},
		Action: func(c *cli.Context) error {
			return withPane(c, func(cl *api.Client, id string) error {
				return present(e, c, func() (*api.SendResult, error) { return cl.Command(c.Context, id, name) }, func(res *api.SendResult) error {
					if res.Status != "completed" {
						return failf("%s failed: %s", name, res.Error)
					}
					fmt.Fprintln(e.stdout, res.Answer)
					return nil
				})
			})
		},
	}
}

func (e *env) screenCmd() *cli.Command {
	return &cli.Command{
		Name:      "screen",
		Usage:     "print a pane's current screen",
		ArgsUsage: "<pane>",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "lines", Aliases: []string{"n"}, Usage: "print only the last `N` lines"},
			jsonFlag, rawFlag,
		},
		Action: func(c *cli.Context) error {
			id, err := paneArg(c, "<pane> [--lines N]")
			if err != nil {
				return err
			}
			if c.Int("lines") < 0 {
				return usagef("--lines must not be negative")
			}
			return fetch(e, c, func(cl *api.Client) (api.ScreenResponse, error) { return cl.Screen(c.Context, id, c.Int("lines")) }, func(sc api.ScreenResponse) error {
				if sc.Screen != "" {
					fmt.Fprintln(e.stdout, sc.Screen)
				}
				return nil
			})
		},
	}
}

func (e *env) killCmd() *cli.Command {
	return &cli.Command{
		Name:      "kill",
		Usage:     "stop a pane and remove it (its workspace stays; a worktree only while it holds work not merged)",
		ArgsUsage: "<pane>",
		Action: e.paneNote(func(ctx context.Context, cl *api.Client, id string) (string, error) {
			res, err := cl.KillPane(ctx, id)
			return res.Kept, err
		}),
	}
}

func (e *env) restartCmd() *cli.Command {
	return &cli.Command{
		Name:      "restart",
		Usage:     "start a pane again with the same argv and workspace (stopping it first if it runs)",
		ArgsUsage: "<pane> [--new]",
		Description: "A CLI agent (" + strings.Join(panetype.Agents(), ", ") + ") resumes its own recorded session, so its\n" +
			"conversation goes on (after an upgrade of the CLIs, say); --new starts a new one. A pane\n" +
			"with no recorded session starts afresh. 'cicy-agent explain <pane>' shows the session.",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "new", Usage: "start a CLI agent in a new conversation instead of resuming its session"}},
		Action: func(c *cli.Context) error {
			return withPane(c, func(cl *api.Client, id string) error { return cl.RestartAs(c.Context, id, c.Bool("new")) })
		},
	}
}

func (e *env) statusCmd() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "topology and completion: masters, their workers, untracked panes, what needs you",
		Description: "Each master with how many of its tasks are done, then its workers: state, why, the\n" +
			"task each works on and for how long, tokens and the share read from the cache. Then the\n" +
			"workers without a master, the untracked panes (a free-text role), and what needs you:\n" +
			"one line per pane with its state (or its kind, for budget, upstream, provider and worker-stopped)\n" +
			"and why. --json gives each its kind:\n" +
			strings.Join(dashboard.NeedKindLines("  "), "\n") + "\n" +
			"--watch prints it again each time the team changes, until Ctrl-C.",
		Flags: []cli.Flag{jsonFlag,
			&cli.BoolFlag{Name: "watch", Aliases: []string{"w"}, Usage: "print it again each time the team changes (with --json: one document per line)"}},
		Action: func(c *cli.Context) error {
			_, cl, err := connect(c, 0, 0, "[--json] [--watch]")
			if err != nil {
				return err
			}
			if c.Bool("watch") {
				return watchStatus(c, cl, e.stdout, c.Bool("json"))
			}
			return present(e, c, func() (api.StatusResponse, error) { return cl.Status(c.Context) }, func(st api.StatusResponse) error {
				printStatus(e.stdout, st)
				return nil
			})
		},
	}
}

// printStatus is status as text; each pane's node is in it ("node b")
// when the team runs on more than one node.
func printStatus(w io.Writer, st api.StatusResponse) {
	if st.CameBack != nil {
		fmt.Fprintln(w, st.CameBack.Line())
	}
	for _, n := range st.Notify {
		fmt.Fprintln(w, n.Line())
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	many := topology.SpansNodes(st.Nodes()...)
	node := func(n string) string {
		if !many {
			return ""
		}
		return nodeCell(true, "node "+n)
	}
	worker := func(wk topology.Worker) {
		task := wk.CurrentTask
		if task == "" {
			task = "-"
		} else {
			task += fmt.Sprintf(" (%s)", (time.Duration(wk.Elapsed) * time.Second).String())
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s%s\t%s\ttask %s\t%s%s\n", wk.ID, clip.Runes(wk.Title, 24), wk.Type, node(wk.Node), wk.State, clip.Runes(wk.Reason, 36), task, usageCell(wk.Tokens, wk.CacheHit, wk.Compactable), workNote(wk.Work))
	}
	if len(st.Masters) == 0 {
		fmt.Fprintln(tw, "no masters (create one with --role master)")
	}
	for _, m := range st.Masters {
		fmt.Fprintf(tw, "master %s\t%s\t%s\t%s%s\t%s\ttasks %d/%d done\t%s\n", m.ID, clip.Runes(m.Title, 24), m.Type, node(m.Node), m.State, clip.Runes(m.Reason, 36), m.Tasks.Done, m.Tasks.Total, usageCell(m.Tokens, m.CacheHit, m.Compactable))
		for _, wk := range m.Workers {
			worker(wk)
		}
	}
	if len(st.Unassigned) > 0 {
		fmt.Fprintln(tw, "workers without a master:")
		for _, wk := range st.Unassigned {
			worker(wk)
		}
	}
	if len(st.Untracked) > 0 {
		fmt.Fprintln(tw, "untracked (role is a label; not in completion tracking):")
		for _, u := range st.Untracked {
			fmt.Fprintf(tw, "  %s\t%s\t%srole %q\n", u.ID, clip.Runes(u.Title, 24), node(u.Node), u.Role)
		}
	}
	if len(st.NeedsYou) > 0 {
		fmt.Fprintln(tw, "needs you:")
		for _, n := range st.NeedsYou {
			what := n.State
			if n.Kind == topology.NeedBudget || n.Kind == topology.NeedUpstream || n.Kind == topology.NeedProvider || n.Kind == topology.NeedWorkerStopped || n.Kind == topology.NeedDiskFull {
				what = n.Kind // the pane's state is not the news
			}
			fmt.Fprintf(tw, "  %s\t%s%s\t%s\n", n.ID, node(n.Node), what, n.Reason)
		}
	}
	tw.Flush()
}

func (e *env) versionCmd() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version (and the running supervisor's, with its model gateway's URL, if one runs)",
		Flags: []cli.Flag{jsonFlag},
		Action: func(c *cli.Context) error {
			h, err := home(c)
			if err != nil {
				return err
			}
			out := map[string]any{"version": version, "go": runtime.Version()}
			ctx, cancel := context.WithTimeout(c.Context, time.Second)
			defer cancel()
			if hl, err := api.NewClient(h).Health(ctx); err == nil {
				out["supervisor"] = hl
			}
			if c.Bool("json") {
				return printJSON(e.stdout, out)
			}
			fmt.Fprintf(e.stdout, "cicy-agent %s (%s)\n", version, runtime.Version())
			if hl, ok := out["supervisor"].(api.Health); ok {
				if hl.Version != version {
					fmt.Fprintf(e.stdout, "running supervisor: %s (pid %d)\n", hl.Version, hl.PID)
				}
				fmt.Fprintf(e.stdout, "model gateway: %s\n", hl.Gateway)
				for _, n := range hl.NeedsYou {
					fmt.Fprintf(e.stdout, "needs you: %s\n", n.Reason)
				}
			}
			return nil
		},
	}
}
