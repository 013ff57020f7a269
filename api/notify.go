package api

import (
	"context"
	"net/http"
	"time"

	"github.com/cicy-ai/cicy-agent/topology"
)

// NotifySink is a notification sink as the API shows it: its secret
// never, its URL masked where the URL is itself a secret (Slack's); with
// what it did (its state: the last message sent, since when it fails).
type NotifySink struct {
	topology.SinkState
	URL    string   `json:"url"`
	Chat   string   `json:"chat,omitempty"`
	Events []string `json:"events,omitempty"`
	// Secret says where its secret is ("stored" in the home, "env NAME"),
	// and the secret masked ("1234…ab"); "" when it has none.
	Secret string `json:"secret,omitempty"`
	// Team is the team file the sink came from ("" when added by hand).
	Team string `json:"team,omitempty"`
}

// NotifyAddRequest adds a sink (POST /api/notify/sinks). The secret is
// read by the client from a file (never given on a command line), or
// named as a variable of the supervisor's environment (SecretEnv).
type NotifyAddRequest struct {
	Name      string   `json:"name"`
	Type      string   `json:"type"`
	URL       string   `json:"url,omitempty"`
	Chat      string   `json:"chat,omitempty"`
	Events    []string `json:"events,omitempty"`
	Secret    string   `json:"secret,omitempty"`
	SecretEnv string   `json:"secret_env,omitempty"`
	// Team marks a team file's sink: it replaces the one of that name.
	Team string `json:"team,omitempty"`
}

// NotifyTestResult is what a sink answered a sample (notify test).
type NotifyTestResult struct {
	Sink   string `json:"sink"`
	Status int    `json:"status"`
	Answer string `json:"answer"`
	Error  string `json:"error,omitempty"`
}

// NotifyMute silences the notifications of a pane or a team (Target: a
// pane id, or team:<name>) until Until (nil: until unmuted).
type NotifyMute struct {
	Target string     `json:"target"`
	Until  *time.Time `json:"until,omitempty"`
}

// NotifyMuteRequest mutes a target for For (0: until unmuted).
type NotifyMuteRequest struct {
	Target string        `json:"target"`
	For    time.Duration `json:"for,omitempty"`
}

// NotifySinks lists the sinks with what they did.
func (c *Client) NotifySinks(ctx context.Context) ([]NotifySink, error) {
	return call[[]NotifySink](ctx, c, http.MethodGet, "/api/notify/sinks", nil)
}

// AddNotifySink adds a sink (or, for a team's, replaces it).
func (c *Client) AddNotifySink(ctx context.Context, req NotifyAddRequest) (NotifySink, error) {
	return call[NotifySink](ctx, c, http.MethodPost, "/api/notify/sinks", req)
}

// RemoveNotifySink removes a sink and its messages not sent yet.
func (c *Client) RemoveNotifySink(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/api/notify/sinks/"+seg(name), nil, nil)
}

// TestNotifySink sends a sample to a sink and returns its answer.
func (c *Client) TestNotifySink(ctx context.Context, name string) (NotifyTestResult, error) {
	return call[NotifyTestResult](ctx, c, http.MethodPost, "/api/notify/sinks/"+seg(name)+"/test", nil)
}

// NotifyMutes lists the mutes in force.
func (c *Client) NotifyMutes(ctx context.Context) ([]NotifyMute, error) {
	return call[[]NotifyMute](ctx, c, http.MethodGet, "/api/notify/mutes", nil)
}

// MuteNotify mutes a pane or a team.
func (c *Client) MuteNotify(ctx context.Context, req NotifyMuteRequest) (NotifyMute, error) {
	return call[NotifyMute](ctx, c, http.MethodPost, "/api/notify/mutes", req)
}

// UnmuteNotify lifts a mute.
func (c *Client) UnmuteNotify(ctx context.Context, target string) error {
	return c.do(ctx, http.MethodDelete, "/api/notify/mutes/"+seg(target), nil, nil)
}

// Answer is a person's answer to a pane (approve, deny, option:N, text,
// restart), from the terminal or a messenger: who, when, what.
type Answer struct {
	// Event is the notification it answered (its idempotency id), or a
	// fresh id for an answer no notification asked for.
	Event  string    `json:"event"`
	Pane   string    `json:"pane"`
	Task   int64     `json:"task,omitempty"` // the pane's task then
	Action string    `json:"action"`
	By     string    `json:"by,omitempty"`
	Via    string    `json:"via"`
	At     time.Time `json:"at"`
	Detail string    `json:"detail,omitempty"` // the keys typed, the text
}
