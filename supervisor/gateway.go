package supervisor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cicy-ai/cicy-agent/panetype"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
	"github.com/cicy-ai/cicy-agent/supervisor/gateway"
)

// The local AI gateway (package gateway) carries the CLI agents' model
// traffic: each CLI pane gets its URL as its base URL and a secret token of
// its own as its key; the gateway maps the token to the pane, sends the
// request upstream with the real key, which only the supervisor holds, and
// records the usage in the ledger. Its port is chosen once per home and
// kept: tmux panes outlive the supervisor with the URL in their config.

// gatewayPortSetting is the setting that keeps the gateway's port.
const gatewayPortSetting = "gateway_port"

// startGateway binds the gateway on its kept port (choosing and keeping
// one the first time, or the one cfg.GatewayPort names) and serves it.
func (s *Supervisor) startGateway(ctx context.Context) error {
	tokens, err := s.store.GatewayTokens(ctx)
	if err != nil {
		return err
	}
	s.tokens = gateway.NewTokens(tokens)
	key := gatewayPortSetting
	if s.store.Dialect() == schema.Postgres {
		key += ":" + s.cfg.Node // each node of a shared database has its own
	}
	kept, have, err := s.store.Setting(ctx, key)
	if err != nil {
		return err
	}
	port := kept
	if s.cfg.GatewayPort > 0 {
		port = strconv.Itoa(s.cfg.GatewayPort)
	} else if !have {
		port = "0"
	}
	g, err := gateway.New(gateway.Config{
		Addr: net.JoinHostPort("127.0.0.1", port),
		Upstreams: gateway.Upstreams{Anthropic: s.cfg.Getenv("ANTHROPIC_BASE_URL"), OpenAI: s.cfg.Getenv("OPENAI_BASE_URL"),
			Gemini: s.cfg.Getenv("GOOGLE_GEMINI_BASE_URL")},
		Credential: s.cfg.Getenv,
		Panes:      gatewayPanes{s},
		Usage:      gatewayLedger{s},
		Activity:   s, // a request in flight keeps its pane busy (agentwire.go)
		Budget:     gatewayBudget{s},
		Log:        s.log,
		Transport:  s.gatewayUpstream(),
	})
	if errors.Is(err, syscall.EADDRINUSE) {
		how := "it is kept for this home so that panes which outlive a restart still reach it"
		if s.cfg.GatewayPort > 0 {
			how = "it was asked for with --gateway-port or CICY_GATEWAY_PORT"
		}
		return fmt.Errorf("the model gateway's port 127.0.0.1:%s is in use by another program (%s): stop that program, or move the gateway with 'cicy-agent serve --gateway-port N' or CICY_GATEWAY_PORT=N (running tmux panes reach the new port once restarted)", port, how)
	}
	if err != nil {
		return fmt.Errorf("start the model gateway: %w", err)
	}
	_, bound, _ := net.SplitHostPort(g.Addr())
	if bound != kept {
		if err := s.store.SetSetting(ctx, key, bound); err != nil {
			g.Close()
			return err
		}
	}
	s.gw = g
	go func() {
		if err := g.Serve(); err != nil {
			s.log.WithError(err).Error("The model gateway stopped")
		}
	}()
	s.log.WithField("url", g.URL()).Info("Model gateway listening")
	return nil
}

// gatewayUpstream is what carries the gateway's upstream requests: with
// the scripted model (CICY_PROVIDER=script) the script rules answer them
// in process, sharing the cicy panes' rules and cache simulator; else nil,
// the network.
func (s *Supervisor) gatewayUpstream() http.RoundTripper {
	if s.cfg.Getenv("CICY_PROVIDER") != "script" {
		return nil
	}
	return gateway.NewScriptTransport(s.providers, s.log)
}

// GatewayURL is the gateway's base URL, "http://127.0.0.1:PORT".
func (s *Supervisor) GatewayURL() string { return s.gw.URL() }

// paneGatewayURL is the gateway's URL as panes reach it: CICY_GATEWAY_URL
// when set (a pane whose network sees the supervisor under another
// address, or a recording proxy in between), else GatewayURL.
func (s *Supervisor) paneGatewayURL() string {
	if u := strings.TrimRight(s.cfg.Getenv("CICY_GATEWAY_URL"), "/"); u != "" {
		return u
	}
	return s.gw.URL()
}

// newPaneToken makes a new secret token for a pane, records its hash (the
// token itself is kept nowhere but in the pane's environment) and makes it
// the pane's only valid one.
func (s *Supervisor) newPaneToken(ctx context.Context, id string) (string, error) {
	tok, h, err := gateway.NewToken()
	if err != nil {
		return "", err
	}
	if err := s.store.SaveGatewayToken(ctx, id, h); err != nil {
		return "", err
	}
	s.tokens.Set(id, h)
	return tok, nil
}

// gatewayPanes are the panes as the gateway knows them: by token, and by
// the APIs their agents speak.
type gatewayPanes struct{ s *Supervisor }

func (g gatewayPanes) Pane(tok string) (string, bool) { return g.s.tokens.Pane(tok) }

// Speaks reports whether pane's agent speaks api (cliagent's APIs).
func (g gatewayPanes) Speaks(pane string, api gateway.API) bool {
	e, ok := g.s.live(pane)
	if !ok {
		return false
	}
	k, ok := cliagent.Lookup(e.cfg.Type)
	return ok && slices.Contains(k.APIs, string(api))
}

// gatewayLedger records the gateway's calls in the ledger, as cicy panes'
// calls are (see record).
type gatewayLedger struct{ s *Supervisor }

func (l gatewayLedger) Record(ctx context.Context, c gateway.Call) error {
	if c.Status == 0 && c.InputTokens+c.OutputTokens+c.CacheReadTokens+c.CacheCreationTokens == 0 {
		return nil // never reached the upstream: no call to count
	}
	l.s.spend.NoteBilled(c.Asked, c.Model)
	return l.s.spend.Record(ctx, schema.UsageRow{
		PaneID: c.Pane, TurnID: l.s.cliTurn(c.Pane), Aux: c.Aux, Model: c.Model,
		InputTokens: c.InputTokens, OutputTokens: c.OutputTokens,
		CacheRead: c.CacheReadTokens, CacheCreation: c.CacheCreationTokens,
		LatencyMS: c.Latency.Milliseconds(),
	})
}

// cliTurn names a CLI pane's current turn in the ledger: the time its
// last prompt was submitted, as its hooks told; "" before any.
func (s *Supervisor) cliTurn(id string) string {
	e, err := s.get(id)
	if err != nil {
		return ""
	}
	at := e.hooks.LastPrompt()
	if at.IsZero() {
		return ""
	}
	return schema.FormatTime(at)
}

// gatewayBudget is the gateway's Budget: the spending's check of a
// request (package spend), so that a pane over its budget is answered,
// not forwarded, and the end of a CLI pane's turn when one is refused.
type gatewayBudget struct{ s *Supervisor }

func (b gatewayBudget) Reserve(pane string, ask gateway.Ask) (func(), string) {
	return b.s.spend.Reserve(pane, ask)
}

func (b gatewayBudget) Refused(pane, why string) { b.s.Refused(pane, why) }

// Refused hears that the gateway refused a CLI pane's main-loop request
// for its budget. The agent's turn has ended in that failure: a task it
// works on fails with the sentence, whatever the agent signals after
// (Codex nothing, opencode an idle carrying an earlier turn's answer).
func (s *Supervisor) Refused(pane, why string) {
	e, ok := s.live(pane)
	if !ok || !panetype.IsAgent(e.cfg.Type) {
		return
	}
	e.hooks.Refused(time.Now(), "the gateway refused the agent's model request: "+why)
	s.tasks.PaneChanged() // settles a task the pane works on
}
