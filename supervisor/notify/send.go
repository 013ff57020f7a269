package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/clip"
	"github.com/slack-go/slack"
)

// DefaultTimeout bounds one request to a sink (one run of a command).
const DefaultTimeout = 10 * time.Second

const (
	maxAnswer = 64 << 10 // the most of an answer read
	maxResult = 2 << 10  // the most of it kept in a Result
	userAgent = "cicy-agent"
)

// Headers of a webhook request.
const (
	HeaderEvent     = "X-Cicy-Event"
	HeaderDelivery  = "X-Cicy-Delivery"
	HeaderSignature = "X-Cicy-Signature"
)

// Sender delivers events to sinks. Its zero value works.
type Sender struct {
	// Client's transport carries the requests (nil: the default one);
	// its timeout is not used (Timeout is), nor are redirects followed
	// (a 3xx is an answer like any other not 2xx).
	Client *http.Client
	// Timeout bounds one request or one command run (default 10s).
	Timeout time.Duration
	// Env is a command sink's environment, which must carry no secret
	// (nil: PATH, HOME, LANG and what a desktop notifier needs to reach
	// the session — never the supervisor's whole environment).
	Env []string
	// Poll is how long one getUpdates waits for an update (Listen;
	// default 50s).
	Poll time.Duration
}

// ErrInvalid is matched (errors.Is) by Send's error when the sink or
// the event cannot be sent as it is (a sink that does not validate, a
// button Telegram would refuse): sending it again fails the same way.
var ErrInvalid = errors.New("invalid sink or event")

// invalid marks an error as ErrInvalid and keeps its text.
type invalid struct{ err error }

func (e invalid) Error() string        { return e.err.Error() }
func (e invalid) Unwrap() error        { return e.err }
func (e invalid) Is(target error) bool { return target == ErrInvalid }

// HTTPError is a sink's answer that was not 2xx.
type HTTPError struct {
	Status int
	Body   string // cut, scrubbed of the sink's secret
}

func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("answered %d %s", e.Status, http.StatusText(e.Status))
	if b := strings.TrimSpace(e.Body); b != "" {
		msg += ": " + clip.Runes(strings.Join(strings.Fields(b), " "), 200)
	}
	return msg
}

func (x *Sender) timeout() time.Duration {
	if x.Timeout > 0 {
		return x.Timeout
	}
	return DefaultTimeout
}

// Send delivers the event to the sink in its wire format and returns
// what the sink answered. An answer not 2xx (a command's exit status not
// 0) is an error, with the Result filled; no error or Result carries the
// sink's secret. It returns within the timeout.
func (x *Sender) Send(ctx context.Context, s Sink, e Event) (Result, error) {
	s = s.WithDefaults()
	if err := s.Validate(); err != nil {
		return Result{}, invalid{err}
	}
	ctx, cancel := context.WithTimeout(ctx, x.timeout())
	defer cancel()
	var res Result
	var err error
	switch s.Type {
	case TypeWebhook:
		res, err = x.webhook(ctx, s, e)
	case TypeNtfy:
		res, err = x.ntfy(ctx, s, e)
	case TypeSlack:
		res, err = x.slack(ctx, s, e)
	case TypeTelegram:
		res, err = x.telegram(ctx, s, e)
	case TypeCommand:
		res, err = x.command(ctx, s, e)
	}
	sc := scrubberFor(s)
	res.Body = sc.text(res.Body)
	if err != nil {
		return res, fmt.Errorf("%s sink %s: %w", s.Type, s.Name, sc.err(err))
	}
	return res, nil
}

// recorder is a transport that keeps the last answer's status and the
// start of its body, and reads no more than its limit of any body.
type recorder struct {
	base  http.RoundTripper
	limit int64

	mu     sync.Mutex
	status int
	body   bytes.Buffer
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.status = resp.StatusCode
	r.body.Reset()
	r.mu.Unlock()
	resp.Body = &cappedBody{rc: resp.Body, left: r.limit, r: r}
	return resp, nil
}

// answer is the last answer's status and body, cut.
func (r *recorder) answer() Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Result{Status: r.status, Body: clip.Bytes(r.body.String(), maxResult)}
}

// cappedBody ends a body at its limit and keeps its start.
type cappedBody struct {
	rc   io.ReadCloser
	left int64
	r    *recorder
}

func (c *cappedBody) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.rc.Read(p)
	c.left -= int64(n)
	c.r.mu.Lock()
	if keep := maxResult + 8 - c.r.body.Len(); keep > 0 {
		c.r.body.Write(p[:min(n, keep)])
	}
	c.r.mu.Unlock()
	return n, err
}

func (c *cappedBody) Close() error { return c.rc.Close() }

// client is an HTTP client for one delivery through a recorder: no
// redirects, the timeout as a backstop to the context's.
func (x *Sender) client(limit int64, timeout time.Duration) (*http.Client, *recorder) {
	base := http.DefaultTransport
	if x.Client != nil && x.Client.Transport != nil {
		base = x.Client.Transport
	}
	rec := &recorder{base: base, limit: limit}
	return &http.Client{
		Transport:     rec,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, rec
}

// post sends one request and reads its answer (at most maxAnswer).
func (x *Sender) post(ctx context.Context, target string, body []byte, header http.Header) (Result, error) {
	hc, rec := x.client(maxAnswer, x.timeout())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return Result{}, err
	}
	req.Header = header
	req.Header.Set("User-Agent", userAgent)
	resp, err := hc.Do(req)
	if err != nil {
		return Result{}, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	res := rec.answer()
	if res.Status >= 300 {
		return res, &HTTPError{Status: res.Status, Body: res.Body}
	}
	if err != nil {
		return res, fmt.Errorf("read the answer: %w", err)
	}
	return res, nil
}

// Sign is a webhook body's signature under the secret, as sent in
// X-Cicy-Signature: "sha256=" and the hex HMAC-SHA256 of the body.
func Sign(body []byte, secret string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// webhook POSTs the event's JSON, signed when the sink has a secret.
func (x *Sender) webhook(ctx context.Context, s Sink, e Event) (Result, error) {
	body, err := json.Marshal(e)
	if err != nil {
		return Result{}, err
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set(HeaderEvent, e.Event)
	h.Set(HeaderDelivery, e.ID)
	if s.Secret != "" {
		h.Set(HeaderSignature, Sign(body, s.Secret))
	}
	return x.post(ctx, s.URL, body, h)
}

// ntfy publishes the plain message to the topic: its title, tags and
// priority in ntfy's headers (encoded as RFC 2047 when not plain ASCII,
// which ntfy decodes), the access token as a bearer.
func (x *Sender) ntfy(ctx context.Context, s Sink, e Event) (Result, error) {
	title, body := Format(e)
	h := http.Header{}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Title", mime.QEncoding.Encode("utf-8", title))
	h.Set("Priority", ntfyPriority(e))
	if tags := ntfyTags(e); tags != "" {
		h.Set("Tags", tags)
	}
	if s.Secret != "" {
		h.Set("Authorization", "Bearer "+s.Secret)
	}
	return x.post(ctx, s.URL, []byte(body), h)
}

func ntfyPriority(e Event) string {
	switch e.Event {
	case EventNeedsYou, EventNodeDown:
		return "4"
	}
	return "3"
}

// ntfyTags are emoji short codes ntfy shows before the title.
func ntfyTags(e Event) string {
	switch e.Event {
	case EventNeedsYou:
		return "warning"
	case EventTaskFailed:
		return "x"
	case EventGoalDone:
		return "white_check_mark"
	case EventBudgetReached:
		return "moneybag"
	case EventNodeDown:
		return "rotating_light"
	case EventTest:
		return "bell"
	}
	return ""
}

// slack posts to the incoming webhook in Slack's format (slack-go's).
func (x *Sender) slack(ctx context.Context, s Sink, e Event) (Result, error) {
	hc, rec := x.client(maxAnswer, x.timeout())
	f := false
	err := slack.PostWebhookCustomHTTPContext(ctx, s.slackURL(), hc, &slack.WebhookMessage{
		Text: slackText(e), UnfurlLinks: &f, UnfurlMedia: &f,
	})
	res := rec.answer()
	if res.Status >= 300 {
		return res, &HTTPError{Status: res.Status, Body: res.Body}
	}
	return res, err
}

// scrubber takes a sink's secrets out of text: its secret, and a URL
// that is one (a Slack webhook's), as written and as escaped.
type scrubber []string

func scrubberFor(s Sink) scrubber {
	var sc scrubber
	add := func(v string) {
		if len(v) >= 4 {
			sc = append(sc, v)
			if esc := url.PathEscape(v); esc != v {
				sc = append(sc, esc)
			}
			if esc := url.QueryEscape(v); esc != v {
				sc = append(sc, esc)
			}
		}
	}
	add(s.Secret)
	if s.Type == TypeSlack {
		raw := s.slackURL()
		add(raw)
		if u, err := url.Parse(raw); err == nil {
			add(strings.Trim(u.EscapedPath(), "/"))
			add(strings.Trim(u.Path, "/"))
		}
	}
	if u, err := url.Parse(s.URL); err == nil && s.Type != TypeCommand {
		if pw, ok := u.User.Password(); ok {
			add(pw)
		}
		for _, vs := range u.Query() { // a key in the query
			for _, v := range vs {
				add(v)
			}
		}
	}
	return sc
}

func (sc scrubber) text(s string) string {
	for _, v := range sc {
		s = strings.ReplaceAll(s, v, "***")
	}
	return s
}

// err is the error with the secrets scrubbed from its text; it unwraps
// to what caused it (a *url.Error, which carries the URL, is unwrapped
// past), so errors.Is still finds a deadline or an *HTTPError.
func (sc scrubber) err(err error) error {
	var he *HTTPError
	if errors.As(err, &he) {
		he.Body = sc.text(he.Body)
	}
	return &scrubbed{msg: sc.text(err.Error()), cause: causeOf(err)}
}

type scrubbed struct {
	msg   string
	cause error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.cause }

// causeOf is the error under a *url.Error when there is one (the URL
// stays behind), else the error itself.
func causeOf(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
