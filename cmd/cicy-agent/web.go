package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"
	"rsc.io/qr"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cmd/cicy-agent/termsafe"
	"github.com/cicy-ai/cicy-agent/supervisor"
	"github.com/cicy-ai/cicy-agent/supervisor/web"
)

// webPages makes the web page's handler: package web's Pages (templates,
// styles, script, embedded).
var webPages supervisor.PagesFunc = web.Pages

func (e *env) webCmd() *cli.Command {
	return &cli.Command{
		Name:      "web",
		Usage:     "serve the team's page to browsers, and log a browser in",
		ArgsUsage: "[--url] [--listen HOST:PORT] [--tls | --tls-cert FILE --tls-key FILE]",
		Description: "The supervisor serves a page of the team (needs-you first, panes' screens, tasks, diffs) and\n" +
			"does what the CLI does from it. 'cicy-agent web' starts serving it, if it is not served yet, on\n" +
			"127.0.0.1 on a port kept for the home, and says where; from then on the page is served at each\n" +
			"start of the supervisor, until 'cicy-agent web stop'. 'serve --web HOST:PORT' (or CICY_WEB) serves\n" +
			"it from the start.\n\n" +
			"A browser logs in with a one-time link: 'cicy-agent web --url' prints one on a line of its own\n" +
			"(valid 10 minutes, used once) and, in a terminal, its QR code for a phone. The link becomes a\n" +
			"session cookie (HttpOnly, SameSite=Strict; Secure over TLS); 'web sessions' lists the browsers\n" +
			"logged in, 'web revoke <id|all>' logs them out. Every change made from the page carries the\n" +
			"session's CSRF token and is logged with the session's id.\n\n" +
			"Beyond loopback (--listen 0.0.0.0:8443) the page is served over TLS only: with the certificate\n" +
			"--tls-cert/--tls-key name, or with --tls one the supervisor makes once (self-signed, kept in\n" +
			"web/tls.crt under the home); check the fingerprint printed with the link against the one the\n" +
			"browser shows. See docs/web.md.\n\n" +
			"Examples:\n" +
			"  cicy-agent web --url                        log this machine's browser in\n" +
			"  cicy-agent web --listen 0.0.0.0:8443 --tls --url   serve to the phone on the LAN, scan the code",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "url", Usage: "print a one-time login link (and its QR code in a terminal)"},
			&cli.StringFlag{Name: "listen", Usage: "serve the page at `HOST:PORT` (default 127.0.0.1 on the home's port); beyond loopback needs --tls or --tls-cert"},
			&cli.BoolFlag{Name: "tls", Usage: "serve over TLS with a certificate the supervisor makes once and keeps in the home"},
			&cli.StringFlag{Name: "tls-cert", Usage: "serve over TLS with the certificate in `FILE` (PEM; with --tls-key)"},
			&cli.StringFlag{Name: "tls-key", Usage: "the certificate's private key `FILE` (PEM)"},
			&cli.DurationFlag{Name: "ttl", Value: 10 * time.Minute, Usage: "with --url: how long the link may wait to be used"},
			&cli.BoolFlag{Name: "qr", Usage: "with --url: print the QR code (default: when stdout is a terminal); --qr=false never"},
			jsonFlag,
		},
		Subcommands: []*cli.Command{e.webSessionsCmd(), e.webRevokeCmd(), e.webStopCmd()},
		Action: func(c *cli.Context) error {
			if _, err := args(c, 0, 0, "[--url] [--listen HOST:PORT] [--tls | --tls-cert FILE --tls-key FILE]"); err != nil {
				return err
			}
			req := api.WebStartRequest{Listen: c.String("listen"), TLS: c.Bool("tls"), TLSCert: c.String("tls-cert"), TLSKey: c.String("tls-key")}
			if (req.TLSCert == "") != (req.TLSKey == "") {
				return usagef("--tls-cert and --tls-key go together")
			}
			if req.TLSCert != "" {
				var err error
				if req.TLSCert, err = filepath.Abs(req.TLSCert); err != nil {
					return err
				}
				if req.TLSKey, err = filepath.Abs(req.TLSKey); err != nil {
					return err
				}
			}
			if c.Duration("ttl") <= 0 {
				return usagef("--ttl must be more than 0")
			}
			cl, err := client(c)
			if err != nil {
				return err
			}
			st, err := cl.WebStart(c.Context, req)
			if err != nil {
				return err
			}
			if !c.Bool("url") {
				if c.Bool("json") {
					return printJSON(e.stdout, st)
				}
				printWebStatus(e.stdout, st)
				return nil
			}
			return present(e, c, func() (api.WebLink, error) {
				return cl.WebLink(c.Context, api.WebLinkRequest{TTLSeconds: int(c.Duration("ttl").Seconds())})
			}, func(link api.WebLink) error {
				f, ok := termsafe.Underlying(e.stdout).(*os.File)
				showQR := ok && term.IsTerminal(int(f.Fd()))
				if c.IsSet("qr") {
					showQR = c.Bool("qr")
				}
				return printWebLink(e.stdout, link, showQR)
			})
		},
	}
}

// printWebStatus is 'web' as text.
func printWebStatus(w io.Writer, st api.WebStatus) {
	fmt.Fprintf(w, "the team's page is served at %s\n", st.URL)
	if st.Fingerprint != "" {
		fmt.Fprintf(w, "its certificate's SHA-256 fingerprint: %s\n", st.Fingerprint)
	}
	fmt.Fprintf(w, "%d browser(s) logged in; log one in with the link 'cicy-agent web --url' prints\n", st.Sessions)
}

// printWebLink prints the link on a line of its own, then what to check
// and, if asked, its QR code.
func printWebLink(w io.Writer, l api.WebLink, showQR bool) error {
	fmt.Fprintln(w, l.URL)
	if showQR {
		code, err := qrText(l.URL)
		if err != nil {
			return err
		}
		fmt.Fprint(w, code)
	}
	fmt.Fprintf(w, "open it once, before %s; it logs that browser in\n", l.Expires.Local().Format("15:04:05"))
	if l.Fingerprint != "" {
		fmt.Fprintf(w, "the certificate is the supervisor's own: check that the browser shows the SHA-256 fingerprint %s\n", l.Fingerprint)
	}
	return nil
}

// qrText draws text's QR code with Unicode half blocks, two rows of
// modules a line: light modules are drawn (in the terminal's text colour),
// dark ones left blank, with a quiet zone of two light modules.
func qrText(text string) (string, error) {
	code, err := qr.Encode(text, qr.L)
	if err != nil {
		return "", fmt.Errorf("draw the QR code: %w", err)
	}
	const quiet = 2
	n := code.Size + 2*quiet
	light := func(x, y int) bool {
		x, y = x-quiet, y-quiet
		if x < 0 || y < 0 || x >= code.Size || y >= code.Size {
			return true
		}
		return !code.Black(x, y)
	}
	var b strings.Builder
	for y := 0; y < n; y += 2 {
		for x := 0; x < n; x++ {
			top, bottom := light(x, y), y+1 < n && light(x, y+1)
			switch {
			case top && bottom:
				b.WriteString("█")
			case top:
				b.WriteString("▀")
			case bottom:
				b.WriteString("▄")
			default:
				b.WriteByte(' ')
			}
		}
		b.WriteByte('\n')
	}
	return b.String(), nil
}

func (e *env) webSessionsCmd() *cli.Command {
	return &cli.Command{
		Name:   "sessions",
		Usage:  "list the browsers logged in to the team's page",
		Flags:  []cli.Flag{jsonFlag},
		Action: listAction(e, (*api.Client).WebSessions, printSessions),
	}
}

// printSessions is the table of the browsers logged in.
func printSessions(w io.Writer, ss []api.WebSession) error {
	if len(ss) == 0 {
		fmt.Fprintln(w, "no browser is logged in (log one in with 'cicy-agent web --url')")
		return nil
	}
	return printTable(w, "ID\tLOGGED IN\tLAST SEEN\tFROM\tBROWSER", ss, func(s api.WebSession) string {
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s", s.ID, s.Created.Local().Format("2006-01-02 15:04"),
			s.LastSeen.Local().Format("2006-01-02 15:04"), s.RemoteAddr, clipLine(s.UserAgent, 60))
	})
}

func (e *env) webRevokeCmd() *cli.Command {
	return &cli.Command{
		Name:      "revoke",
		Usage:     "log a browser out of the team's page (its next request is refused), or every one with all",
		ArgsUsage: "<id|all>",
		Flags:     []cli.Flag{jsonFlag},
		Action: func(c *cli.Context) error {
			a, cl, err := connect(c, 1, 1, "revoke <id|all>")
			if err != nil {
				return err
			}
			return present(e, c, func() (api.WebRevokeResult, error) { return cl.WebRevoke(c.Context, a[0]) }, func(r api.WebRevokeResult) error {
				fmt.Fprintf(e.stdout, "%d session(s) ended\n", r.Revoked)
				return nil
			})
		},
	}
}

func (e *env) webStopCmd() *cli.Command {
	return &cli.Command{
		Name:  "stop",
		Usage: "stop serving the team's page (and at the next starts); the browsers stay logged in for when it is served again",
		Action: func(c *cli.Context) error {
			_, cl, err := connect(c, 0, 0, "")
			if err != nil {
				return err
			}
			if _, err := cl.WebStop(c.Context); err != nil {
				return err
			}
			fmt.Fprintln(e.stdout, "the team's page is no longer served ('cicy-agent web' serves it again)")
			return nil
		},
	}
}

// clipLine is s on one line, at most n runes.
func clipLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
