package provider

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// Streamer is what every provider of this package is.
type Streamer interface {
	Stream(ctx context.Context, req *wire.Request, onEvent func(wire.Event)) (*wire.Response, error)
}

// Factory builds providers from the environment's variables (see docs/requests-and-caching.md). It
// keeps what must outlive one turn: the HTTP client, the script rules and
// their cache simulator.
type Factory struct {
	Getenv func(string) string
	HTTP   *http.Client

	mu        sync.Mutex
	script    *Script
	scriptKey string // path and modification time of the loaded rules
}

// NewFactory returns a factory reading variables with getenv.
func NewFactory(getenv func(string) string) *Factory {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = 5 * time.Minute
	return &Factory{Getenv: getenv, HTTP: &http.Client{Transport: tr}}
}

// New returns the named provider, or an error sentence naming what to set.
// Its errors never carry a credential of the environment (an upstream may
// echo the key it was sent).
func (f *Factory) New(name string) (Streamer, error) {
	p, err := f.build(name)
	if err != nil {
		return nil, err
	}
	return scrubbing{p, NewScrubber(f.Getenv)}, nil
}

// scrubbing cleans a provider's errors of the credentials.
type scrubbing struct {
	Streamer
	scrub *Scrubber
}

func (p scrubbing) Stream(ctx context.Context, req *wire.Request, onEvent func(wire.Event)) (*wire.Response, error) {
	resp, err := p.Streamer.Stream(ctx, req, onEvent)
	return resp, p.scrub.Error(err)
}

func (f *Factory) build(name string) (Streamer, error) {
	switch name {
	case "anthropic":
		key, token := f.Getenv("ANTHROPIC_API_KEY"), f.Getenv("ANTHROPIC_AUTH_TOKEN")
		if key == "" && token == "" {
			return nil, fmt.Errorf("the anthropic provider needs ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN in the supervisor's environment")
		}
		base := f.Getenv("ANTHROPIC_BASE_URL")
		if base == "" {
			base = "https://api.anthropic.com"
		}
		return &Anthropic{BaseURL: base, APIKey: key, AuthToken: token, HTTP: f.HTTP}, nil
	case "openai":
		key, base := f.Getenv("OPENAI_API_KEY"), f.Getenv("OPENAI_BASE_URL")
		if key == "" && base == "" {
			return nil, fmt.Errorf("the openai provider needs OPENAI_API_KEY (and OPENAI_BASE_URL for a server other than OpenAI's) in the supervisor's environment")
		}
		return &OpenAI{BaseURL: base, APIKey: key, HTTP: f.HTTP}, nil
	case "script":
		s, err := f.Script()
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	return nil, fmt.Errorf("unknown provider %q (choose anthropic, openai or script)", name)
}

// Script is the scripted model: the rules of CICY_SCRIPT, loaded again
// only when the file changed, and one cache simulator for all panes (as
// the real cache is shared), kept across reloads.
func (f *Factory) Script() (*Script, error) {
	path := f.Getenv("CICY_SCRIPT")
	if path == "" {
		return nil, fmt.Errorf("the script provider needs CICY_SCRIPT (the path of a rules file) in the supervisor's environment")
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("the script rules file CICY_SCRIPT=%s cannot be read: %v", path, err)
	}
	key := fmt.Sprintf("%s@%d", path, fi.ModTime().UnixNano())
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.script != nil && f.scriptKey == key {
		return f.script, nil
	}
	rules, err := LoadScript(path)
	if err != nil {
		return nil, err
	}
	sim := NewCacheSim(nil)
	if f.script != nil {
		sim = f.script.Sim
	}
	f.script, f.scriptKey = &Script{Rules: rules, Sim: sim}, key
	return f.script, nil
}
