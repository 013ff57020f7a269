package provider

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// Retry is the retry policy of one model call.
type Retry struct {
	// Attempts is the number of tries in all (default 8).
	Attempts int
	// Base and Max bound the exponential backoff (default 0.5 s, 8 s).
	Base, Max time.Duration
	// MaxRetryAfter caps a server's retry-after (default 60 s).
	MaxRetryAfter time.Duration
	// Sleep waits d or until ctx ends; tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
}

func (r Retry) withDefaults() Retry {
	if r.Attempts <= 0 {
		r.Attempts = 8
	}
	if r.Base <= 0 {
		r.Base = 500 * time.Millisecond
	}
	if r.Max <= 0 {
		r.Max = 8 * time.Second
	}
	if r.MaxRetryAfter <= 0 {
		r.MaxRetryAfter = 60 * time.Second
	}
	if r.Sleep == nil {
		r.Sleep = sleepCtx
	}
	return r
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Do runs call until it succeeds, fails for good, or attempts run out.
func (r Retry) Do(ctx context.Context, call func() (*wire.Response, error)) (*wire.Response, error) {
	r = r.withDefaults()
	for attempt := 0; ; attempt++ {
		resp, err := call()
		if err == nil {
			return resp, nil
		}
		var ae *wire.APIError
		if ctx.Err() != nil || !errors.As(err, &ae) || !ae.Retryable || attempt+1 >= r.Attempts {
			return nil, err
		}
		if err := r.Sleep(ctx, r.delay(attempt, ae)); err != nil {
			return nil, err
		}
	}
}

// delay is the server's retry-after when given (capped), else exponential
// backoff with jitter.
func (r Retry) delay(attempt int, ae *wire.APIError) time.Duration {
	if ae.RetryAfterSeconds > 0 {
		return min(time.Duration(ae.RetryAfterSeconds*float64(time.Second)), r.MaxRetryAfter)
	}
	d := r.Base << attempt
	if d > r.Max || d <= 0 {
		d = r.Max
	}
	return time.Duration(float64(d) * (0.75 + 0.25*rand.Float64()))
}

// retryableStatus: 408, 409, 429 and 5xx are worth another try.
func retryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusConflict ||
		code == http.StatusTooManyRequests || code >= 500
}

// parseRetryAfter reads retry-after in seconds (the only form the LLM
// APIs send); an HTTP date or garbage gives 0.
func parseRetryAfter(h http.Header) float64 {
	v := strings.TrimSpace(h.Get("retry-after"))
	if v == "" {
		return 0
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		return 0
	}
	return f
}

// netError wraps a transport failure as a retryable APIError. The message
// is the error text without the URL (which could carry credentials in
// exotic setups).
func netError(what string, err error) *wire.APIError {
	msg := err.Error()
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			msg = inner.Error()
		}
	}
	return &wire.APIError{Message: what + ": " + msg, Retryable: true}
}
