package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sync/semaphore"

	"github.com/cicy-ai/cicy-agent/supervisor/gateway/modelapi"
)

// API names a wire format the gateway serves.
type API string

// The wire formats, named as modelapi names them.
const (
	Anthropic API = modelapi.APIAnthropic // Anthropic Messages
	Chat      API = modelapi.APIChat      // OpenAI Chat Completions
	Responses API = modelapi.APIResponses // OpenAI Responses
	Gemini    API = modelapi.APIGemini    // Gemini generateContent
)

// Default upstream base URLs, used when [Upstreams] leaves one empty.
const (
	DefaultAnthropicURL = "https://api.anthropic.com"
	DefaultOpenAIURL    = "https://api.openai.com/v1"
	DefaultGeminiURL    = "https://generativelanguage.googleapis.com"
)

// Upstreams are the base URLs requests are forwarded to, spelled as the
// ANTHROPIC_BASE_URL and OPENAI_BASE_URL settings are: the Anthropic one
// without /v1 (the gateway appends /v1/messages), the OpenAI one with it
// (the gateway appends /chat/completions or /responses), and the Gemini
// one as GOOGLE_GEMINI_BASE_URL is, without a version (the gateway appends
// the client's /v1beta/models/<model>:<method>).
type Upstreams struct {
	Anthropic string
	OpenAI    string
	Gemini    string
}

// Panes maps a pane's secret token to the pane's id, and says which APIs
// the pane's program speaks: its token is good for those routes only (a
// Claude Code pane's token never reaches the OpenAI key).
type Panes interface {
	Pane(token string) (id string, ok bool)
	Speaks(pane string, api API) bool
}

// Recorder takes the usage of each forwarded request.
type Recorder interface {
	Record(ctx context.Context, c Call) error
}

// Budget says whether a pane may make a model request. Reserve is asked
// before each request with what the request may cost at most (see Ask):
// "" with a release to call once the request's usage is recorded, or the
// one sentence it is refused with (its budget is reached, or the
// requests in flight may reach it, or its cost cannot be bounded; and
// what to do). Refused is told when a main-loop (not aux) request was
// refused, which ends the agent's turn. Both are called from the
// request's goroutine and must not block long.
type Budget interface {
	Reserve(pane string, ask Ask) (release func(), why string)
	Refused(pane, why string)
}

// Ask is what the gateway read of a request to bound its cost: the
// ledger bills the model the answer names, which may not be the one
// asked for (an alias), so the bound is the budget's to choose.
type Ask struct {
	API       API    // the API, and so the upstream, it goes to
	Model     string // as asked for ("" when the body was not read)
	BodyBytes int    // the size of its body
	MaxTokens int    // the most output tokens of one answer (0: not said)
	Choices   int    // the answers generated, each up to MaxTokens (n, best_of, candidateCount); at least 1
	// Unread says why the gateway could not read the body ("" when it
	// did): then the model, the output limit and the answers are not
	// known.
	Unread string
}

// Activity hears when a pane's main-loop (not aux) request starts and ends,
// and how it ended: a request in flight means the pane is busy, and the
// last answer of a turn is its result or its failure. Calls come from the
// request's goroutine and must not block.
type Activity interface {
	RequestStarted(pane string)
	RequestEnded(pane string, a Answer)
}

// Call is one forwarded request and the usage its upstream reported.
type Call struct {
	Pane  string
	API   API
	Model string // as the upstream answered, else as requested
	Asked string // as requested ("" when the body was not read)
	// Aux is the kind of side call ("count_tokens", "title", "quota",
	// "compact", or the client's X-Cicy-Aux), "" for a main-loop call.
	Aux    string
	Stream bool

	// Tokens in Anthropic's additive shape: InputTokens excludes cache
	// reads and cache writes.
	InputTokens         int64
	OutputTokens        int64
	CacheReadTokens     int64
	CacheCreationTokens int64

	// Latency runs from the request's arrival to its last byte sent.
	Latency time.Duration
	// Status is the upstream's HTTP status, or 502 when there was none.
	Status int
	// Err says why the exchange ended early (the client went away, the
	// upstream broke off); "" when it completed.
	Err string
}

// Config configures a [Gateway].
type Config struct {
	// Addr is where to listen: "127.0.0.1:PORT" (port 0 picks one).
	// Empty means "127.0.0.1:0". Only 127.0.0.1 is accepted.
	Addr      string
	Upstreams Upstreams
	// Credential returns the value of a credential setting by name
	// (ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, OPENAI_API_KEY,
	// GEMINI_API_KEY, GOOGLE_API_KEY), or "".
	// It is called for each request, so a changed key applies at once.
	Credential func(name string) string
	Panes      Panes    // required
	Usage      Recorder // required
	Activity   Activity // optional
	Budget     Budget   // optional: nil refuses nothing
	Log        *logrus.Entry
	// Transport carries upstream requests; nil means a clone of
	// http.DefaultTransport without transparent decompression.
	Transport http.RoundTripper
	// MaxBodiesInFlight bounds the request body bytes held at once
	// (default DefaultMaxBodiesInFlight); BodyTimeout how long a body may
	// take to arrive (default DefaultBodyTimeout).
	MaxBodiesInFlight int64
	BodyTimeout       time.Duration
}

// Gateway is a running gateway; see the package doc.
type Gateway struct {
	cfg Config
	log *logrus.Entry
	ln  net.Listener
	srv *http.Server
	rt  http.RoundTripper

	// bodies bounds the request bytes held at once across requests.
	bodies *semaphore.Weighted
	// refused logs refused requests, a flood as one line a minute.
	refused *Refusals

	mu       sync.Mutex // guards closed and the Add side of inflight
	closed   bool
	inflight sync.WaitGroup
}

// New checks cfg and binds its address; call Serve to answer requests.
// A port already in use is an error naming the address.
func New(cfg Config) (*Gateway, error) {
	if cfg.Panes == nil || cfg.Usage == nil {
		return nil, errors.New("gateway: Config.Panes and Config.Usage are required")
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("gateway: address %q: %w", cfg.Addr, err)
	}
	if host != "127.0.0.1" {
		return nil, fmt.Errorf("gateway: address %q: only 127.0.0.1 is served", cfg.Addr)
	}
	if cfg.Upstreams.Anthropic == "" {
		cfg.Upstreams.Anthropic = DefaultAnthropicURL
	}
	if cfg.Upstreams.OpenAI == "" {
		cfg.Upstreams.OpenAI = DefaultOpenAIURL
	}
	if cfg.Upstreams.Gemini == "" {
		cfg.Upstreams.Gemini = DefaultGeminiURL
	}
	cfg.Upstreams.Anthropic = strings.TrimRight(cfg.Upstreams.Anthropic, "/")
	cfg.Upstreams.OpenAI = strings.TrimRight(cfg.Upstreams.OpenAI, "/")
	cfg.Upstreams.Gemini = strings.TrimRight(cfg.Upstreams.Gemini, "/")
	if cfg.Credential == nil {
		cfg.Credential = func(string) string { return "" }
	}
	log := cfg.Log
	if log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		log = logrus.NewEntry(l)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("gateway: %s is already in use by another program: %w", cfg.Addr, err)
		}
		return nil, fmt.Errorf("gateway: listen on %s: %w", cfg.Addr, err)
	}
	g := &Gateway{cfg: cfg, log: log.WithField("component", "gateway"), ln: ln, rt: cfg.Transport}
	if g.rt == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.DisableCompression = true
		t.MaxIdleConnsPerHost = 64
		g.rt = t
	}
	g.srv = &http.Server{
		Handler:           g,
		ReadHeaderTimeout: 30 * time.Second,
	}
	if g.cfg.MaxBodiesInFlight <= 0 {
		g.cfg.MaxBodiesInFlight = DefaultMaxBodiesInFlight
	}
	if g.cfg.BodyTimeout <= 0 {
		g.cfg.BodyTimeout = DefaultBodyTimeout
	}
	g.bodies = semaphore.NewWeighted(g.cfg.MaxBodiesInFlight)
	g.refused = NewRefusals()
	return g, nil
}

// Addr is the address the gateway listens on, "127.0.0.1:PORT".
func (g *Gateway) Addr() string { return g.ln.Addr().String() }

// URL is the gateway's base URL, "http://127.0.0.1:PORT".
func (g *Gateway) URL() string { return "http://" + g.Addr() }

// Serve answers requests until Close; it then returns nil.
func (g *Gateway) Serve() error {
	err := g.srv.Serve(g.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("gateway: serve: %w", err)
}

// Close stops listening, cuts the requests in progress (which ends their
// upstream requests) and returns once every request goroutine is done.
func (g *Gateway) Close() error {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	err := g.srv.Close()
	g.inflight.Wait()
	if t, ok := g.rt.(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
	if err != nil {
		return fmt.Errorf("gateway: close: %w", err)
	}
	return nil
}

// enter registers a request goroutine; it reports false once closed.
func (g *Gateway) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.inflight.Add(1)
	return true
}
