package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Home is the supervisor's home as a client needs it: the socket it
// dials, and what Ensure and Shutdown need to start a supervisor and to
// see it stop. supervisor.Home is one.
type Home interface {
	// Dir is the home folder, given to a supervisor Ensure starts.
	Dir() string
	// Socket is the control socket.
	Socket() string
	// Log is the supervisor's log, where a started one writes.
	Log() string
	// Prepare creates the home's folders.
	Prepare() error
	// Held reports whether a supervisor holds the home's lock.
	Held() bool
}

// Client talks to the supervisor of one home over its socket.
type Client struct {
	home   Home
	scheme string // http, or https for a cluster API with TLS
	http   *http.Client
	// Executable is the binary started by Ensure (default: this one).
	Executable string
	// StartTimeout bounds how long Ensure waits for a new supervisor to
	// answer.
	StartTimeout time.Duration
	// StallTimeout bounds how long Ensure waits for the next progress of
	// a supervisor that answers it is starting (restoring its panes).
	StallTimeout time.Duration
	// Progress, if set, is told what a starting supervisor is doing
	// while Ensure waits for it (for a person: stderr).
	Progress func(string)
}

// NewClient returns a client for home; it does not connect yet.
func NewClient(home Home) *Client {
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", home.Socket())
	}
	return &Client{
		home:   home,
		scheme: "http",
		http: &http.Client{
			Transport: &http.Transport{DialContext: dial, DisableCompression: true},
			// Never follow a redirect: a DELETE or POST re-sent to another
			// path acts on something the user did not name.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		StartTimeout: 5 * time.Second,
		StallTimeout: 2 * time.Minute,
	}
}

// Home is the home whose supervisor the client talks to.
func (c *Client) Home() Home { return c.home }

// seg escapes one path segment; "." and ".." are escaped too, so that
// they reach the API as themselves (which refuses them) rather than as
// directions to another path.
func seg(s string) string {
	if s == "." || s == ".." {
		return strings.ReplaceAll(s, ".", "%2E")
	}
	return url.PathEscape(s)
}

// Health asks the supervisor about itself; ErrNotRunning when none answers.
func (c *Client) Health(ctx context.Context) (Health, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return call[Health](ctx, c, http.MethodGet, "/api/health", nil)
}

// Probe asks the supervisor about itself within ctx's deadline (Health
// bounds it at 2 s): a peer's liveness probe, whose deadline is its own.
func (c *Client) Probe(ctx context.Context) (Health, error) {
	return call[Health](ctx, c, http.MethodGet, "/api/health", nil)
}

// Ensure makes sure a supervisor runs, starting one in the background if
// none answers, as tmux does, and waiting for it — also for one that is
// starting (restoring its panes), as long as it makes progress.
func (c *Client) Ensure(ctx context.Context) error {
	h, err := c.Health(ctx)
	switch {
	case err == nil && !h.Starting:
		return nil
	case err == nil:
		return c.awaitStart(ctx, nil, nil)
	case !errors.Is(err, ErrNotRunning):
		return err
	}
	if _, remote := c.home.(remoteHome); remote {
		return err // another node's supervisor is not started from here
	}
	exe := c.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return fmt.Errorf("find this program to start the supervisor: %w", err)
		}
	}
	if err := c.home.Prepare(); err != nil {
		return err
	}
	logf, err := os.OpenFile(c.home.Log(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("open the supervisor log: %w", err)
	}
	defer logf.Close()
	// The supervisor writes why it could not start (one sentence) to the
	// pipe given as its descriptor 3, and closes it once it is ready.
	rp, wp, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("start the supervisor: %w", err)
	}
	defer rp.Close() // also ends the reader below
	cmd := exec.Command(exe, "--home", c.home.Dir(), "serve", "--report-fd", "3")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{wp}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // not in our terminal's session
	err = cmd.Start()
	wp.Close()
	if err != nil {
		return fmt.Errorf("start the supervisor: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	report := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(rp, 8<<10))
		report <- strings.TrimSpace(string(b))
	}()
	return c.awaitStart(ctx, report, exited)
}

// progressAfter is how long a start must take before Progress hears of
// it.
const progressAfter = time.Second

// awaitStart waits until the supervisor answers and is ready: a failure
// it reports (report, when this client started it) is the error. It gives
// one that does not answer StartTimeout; one that says it is starting
// gets StallTimeout from then and from each new word of its progress,
// which goes to Progress (once there are panes restored to tell of).
func (c *Client) awaitStart(ctx context.Context, report <-chan string, exited <-chan struct{}) error {
	began := time.Now()
	deadline := began.Add(c.StartTimeout)
	said, told, starting := "", "", false
	for time.Now().Before(deadline) {
		if h, err := c.Health(ctx); err == nil {
			if !h.Starting {
				return nil
			}
			if !starting || h.Restoring != said {
				said, starting, deadline = h.Restoring, true, time.Now().Add(max(c.StallTimeout, c.StartTimeout))
			}
		}
		// A start that is over within a second is not worth a word.
		if said != told && said != "" && c.Progress != nil && time.Since(began) >= progressAfter {
			told = said
			c.Progress("the supervisor is starting: " + said)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		case msg := <-report:
			report = nil
			if msg != "" {
				return &Error{Kind: KindFailed, Message: msg}
			}
		case <-exited:
			// It may have lost a race with another supervisor starting for
			// the same home; keep asking until the deadline.
			exited = nil
		}
	}
	if starting {
		if said == "" {
			said = "opening its database"
		}
		return fmt.Errorf("the supervisor has been starting with no progress for %s (%s); see %s", max(c.StallTimeout, c.StartTimeout), said, c.home.Log())
	}
	return fmt.Errorf("the supervisor did not answer within %s; see %s", c.StartTimeout, c.home.Log())
}

// Shutdown asks the supervisor to stop and waits until it has (its lock is
// free). ErrNotRunning when none runs.
func (c *Client) Shutdown(ctx context.Context, wait time.Duration) error {
	if err := c.do(ctx, http.MethodPost, "/api/shutdown", nil, nil); err != nil {
		return err
	}
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if !c.home.Held() {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("the supervisor did not stop within %s", wait)
}

// Create makes a pane.
func (c *Client) Create(ctx context.Context, req CreateRequest) (CreateResponse, error) {
	return call[CreateResponse](ctx, c, http.MethodPost, "/api/panes", req)
}

// List returns every pane.
func (c *Client) List(ctx context.Context) ([]PaneInfo, error) {
	return c.ListFiltered(ctx, PaneFilter{})
}

// ListFiltered returns the panes that pass f, the filter applied by the
// supervisor.
func (c *Client) ListFiltered(ctx context.Context, f PaneFilter) ([]PaneInfo, error) {
	return call[[]PaneInfo](ctx, c, http.MethodGet, panesPath(f), nil)
}

// panesPath is GET /api/panes with f's query.
func panesPath(f PaneFilter) string {
	if q := f.Query(); len(q) > 0 {
		return "/api/panes?" + q.Encode()
	}
	return "/api/panes"
}

// ListEach calls fn with each pane passing f (none: every pane) as the
// supervisor's answer brings it, without holding the whole list: the
// first of 100,000 panes is there long before the last. An error of fn
// ends the list.
func (c *Client) ListEach(ctx context.Context, f PaneFilter, fn func(PaneInfo) error) error {
	body, err := c.stream(ctx, panesPath(f))
	if err != nil {
		return err
	}
	defer body.Close()
	dec := json.NewDecoder(body)
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return fmt.Errorf("read the supervisor's answer: not a list of panes (%v)", err)
	}
	for dec.More() {
		var p PaneInfo
		if err := dec.Decode(&p); err != nil {
			return fmt.Errorf("read the supervisor's answer: %w", err)
		}
		if err := fn(p); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("read the supervisor's answer: %w", err)
	}
	return nil
}

// Get returns one pane.
func (c *Client) Get(ctx context.Context, id string) (PaneInfo, error) {
	return call[PaneInfo](ctx, c, http.MethodGet, "/api/panes/"+seg(id), nil)
}

// Send delivers input. With req.Wait (cicy panes) it returns the turn's
// result.
func (c *Client) Send(ctx context.Context, id string, req SendRequest) (*SendResult, error) {
	if !req.Wait {
		return nil, c.do(ctx, http.MethodPost, "/api/panes/"+seg(id)+"/send", req, nil)
	}
	var res SendResult
	err := c.do(ctx, http.MethodPost, "/api/panes/"+seg(id)+"/send", req, &res)
	return &res, err
}

// Answer answers a pane's dialog: approve, deny, option:N, restart or
// screen (see AnswerRequest).
func (c *Client) Answer(ctx context.Context, id string, req AnswerRequest) (AnswerResult, error) {
	return call[AnswerResult](ctx, c, http.MethodPost, "/api/panes/"+seg(id)+"/answer", req)
}

// Cancel stops a cicy pane's running turn; it reports whether one ran.
func (c *Client) Cancel(ctx context.Context, id string) (bool, error) {
	var out struct {
		Cancelled bool `json:"cancelled"`
	}
	err := c.do(ctx, http.MethodPost, "/api/panes/"+seg(id)+"/cancel", nil, &out)
	return out.Cancelled, err
}

// Command runs "compact" or "clear" on a cicy pane and waits for it.
func (c *Client) Command(ctx context.Context, id, cmd string) (*SendResult, error) {
	var res SendResult
	err := c.do(ctx, http.MethodPost, "/api/panes/"+seg(id)+"/"+seg(cmd), nil, &res)
	return &res, err
}

// Events opens a cicy pane's event stream (JSON lines); close it to stop.
func (c *Client) Events(ctx context.Context, id string) (io.ReadCloser, error) {
	return c.stream(ctx, "/api/panes/"+seg(id)+"/events")
}

// TeamEvents opens the team's event stream: a snapshot, then changes (JSON
// lines of Event); close it to stop.
func (c *Client) TeamEvents(ctx context.Context) (*EventStream, error) {
	body, err := c.stream(ctx, "/api/events")
	if err != nil {
		return nil, err
	}
	return &EventStream{body: body, dec: json.NewDecoder(body)}, nil
}

// NodeEvents is TeamEvents limited to the panes of the supervisor's own
// node: what the cluster's other nodes watch.
func (c *Client) NodeEvents(ctx context.Context) (*EventStream, error) {
	body, err := c.stream(ctx, "/api/events?local=1")
	if err != nil {
		return nil, err
	}
	return &EventStream{body: body, dec: json.NewDecoder(body)}, nil
}

// Preview opens a pane's preview stream: JSON lines of ScreenResponse, one
// each time the screen changes (the last lines if lines > 0).
func (c *Client) Preview(ctx context.Context, id string, lines int) (io.ReadCloser, error) {
	return c.stream(ctx, fmt.Sprintf("/api/panes/%s/preview?lines=%d", seg(id), lines))
}

// stream opens a long-lived GET whose body the caller reads and closes.
func (c *Client) stream(ctx context.Context, path string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.scheme+"://cicy"+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("talk to the supervisor: %w", err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		return nil, decodeErr(resp)
	}
	return resp.Body, nil
}

// Screen returns the screen; lines > 0 keeps the last lines.
func (c *Client) Screen(ctx context.Context, id string, lines int) (ScreenResponse, error) {
	return call[ScreenResponse](ctx, c, http.MethodGet, fmt.Sprintf("/api/panes/%s/screen?lines=%d", seg(id), lines), nil)
}

// Explain says why a pane has its state.
func (c *Client) Explain(ctx context.Context, id string) (Explanation, error) {
	return call[Explanation](ctx, c, http.MethodGet, "/api/panes/"+seg(id)+"/explain", nil)
}

// Kill stops and removes a pane.
func (c *Client) Kill(ctx context.Context, id string) error {
	_, err := c.KillPane(ctx, id)
	return err
}

// KillPane stops a pane and removes it, and says what it left behind (a
// worktree with unmerged work).
func (c *Client) KillPane(ctx context.Context, id string) (KillResult, error) {
	return call[KillResult](ctx, c, http.MethodDelete, "/api/panes/"+seg(id), nil)
}

// Restart starts a pane again; a CLI agent resumes its recorded session.
func (c *Client) Restart(ctx context.Context, id string) error {
	return c.RestartAs(ctx, id, false)
}

// RestartAs is Restart; with fresh, a CLI agent starts a new conversation.
func (c *Client) RestartAs(ctx context.Context, id string, fresh bool) error {
	path := "/api/panes/" + seg(id) + "/restart"
	if fresh {
		path += "?new=1"
	}
	return c.do(ctx, http.MethodPost, path, nil, nil)
}

// Status returns the topology view.
func (c *Client) Status(ctx context.Context) (StatusResponse, error) {
	return call[StatusResponse](ctx, c, http.MethodGet, "/api/status", nil)
}

// call makes a request with do and returns its answer as a T.
func call[T any](ctx context.Context, c *Client, method, path string, in any) (T, error) {
	var out T
	err := c.do(ctx, method, path, in, &out)
	return out, err
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.scheme+"://cicy"+path, body)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		if isNoServer(err) {
			return fmt.Errorf("%w for %s", ErrNotRunning, c.home.Dir())
		}
		return fmt.Errorf("talk to the supervisor: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return decodeErr(resp)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("read the supervisor's answer: %w", err)
	}
	return nil
}

func decodeErr(resp *http.Response) error {
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return &Error{Kind: KindFailed, Message: fmt.Sprintf("the supervisor answered %s to %s %s; the request was not sent again",
			resp.Status, resp.Request.Method, resp.Request.URL.Path)}
	}
	var e Error
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if json.Unmarshal(b, &e) != nil || e.Message == "" {
		return &Error{Kind: KindFailed, Message: fmt.Sprintf("the supervisor answered %s: %s", resp.Status, strings.TrimSpace(string(b)))}
	}
	return &e
}

// isNoServer tells a missing or dead socket from other failures.
func isNoServer(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)
}

// Hook posts a CLI agent's signal; ErrNotRunning when no supervisor
// answers (the caller spools it). It never starts a supervisor.
func (c *Client) Hook(ctx context.Context, id string, req HookRequest) (HookResult, error) {
	return call[HookResult](ctx, c, http.MethodPost, "/api/panes/"+seg(id)+"/hook", req)
}

// Memories lists a cicy pane's memories.
func (c *Client) Memories(ctx context.Context, id string) (MemoryList, error) {
	return call[MemoryList](ctx, c, http.MethodGet, "/api/panes/"+seg(id)+"/memory", nil)
}

// Memory returns one memory of a cicy pane.
func (c *Client) Memory(ctx context.Context, id, memID string) (Memory, error) {
	return call[Memory](ctx, c, http.MethodGet, "/api/panes/"+seg(id)+"/memory/"+seg(memID), nil)
}

// MemoryRemove moves a memory to the pane's _archive/.
func (c *Client) MemoryRemove(ctx context.Context, id, memID string) error {
	return c.do(ctx, http.MethodDelete, "/api/panes/"+seg(id)+"/memory/"+seg(memID), nil, nil)
}

// MemoryFlush recognises the pane's buffered turns now.
func (c *Client) MemoryFlush(ctx context.Context, id string) (FlushResult, error) {
	return call[FlushResult](ctx, c, http.MethodPost, "/api/panes/"+seg(id)+"/memory/flush", nil)
}

// MemoryReindex rebuilds the pane's MEMORY.md from its memory files.
func (c *Client) MemoryReindex(ctx context.Context, id string) (ReindexResult, error) {
	return call[ReindexResult](ctx, c, http.MethodPost, "/api/panes/"+seg(id)+"/memory/reindex", nil)
}

// Dispatch creates a task (and with req.Wait waits for it).
func (c *Client) Dispatch(ctx context.Context, req DispatchRequest) (TaskInfo, error) {
	return call[TaskInfo](ctx, c, http.MethodPost, "/api/tasks", req)
}

// Tasks lists tasks from or to a pane ("" for all).
func (c *Client) Tasks(ctx context.Context, pane string) ([]TaskInfo, error) {
	return call[[]TaskInfo](ctx, c, http.MethodGet, "/api/tasks?pane="+url.QueryEscape(pane), nil)
}

// Task returns one task.
func (c *Client) Task(ctx context.Context, id int64) (TaskInfo, error) {
	return call[TaskInfo](ctx, c, http.MethodGet, fmt.Sprintf("/api/tasks/%d", id), nil)
}

// WaitTask blocks until the task ends or timeout passes (0: no limit).
func (c *Client) WaitTask(ctx context.Context, id int64, timeout time.Duration) (TaskInfo, error) {
	return call[TaskInfo](ctx, c, http.MethodGet, fmt.Sprintf("/api/tasks/%d/wait?timeout=%g", id, timeout.Seconds()), nil)
}

// TeamTool runs a team tool (dispatch, workers, task_status, wait) for the
// master pane, with the tool's JSON input (nil for none). A refusal the
// master should read is a result with IsError; an error is the request's
// (no such pane, not a master, no such tool, no supervisor).
func (c *Client) TeamTool(ctx context.Context, pane, tool string, input json.RawMessage) (TeamToolResult, error) {
	var in any
	if input != nil {
		in = input
	}
	return call[TeamToolResult](ctx, c, http.MethodPost, "/api/panes/"+seg(pane)+"/team/"+seg(tool), in)
}

// CancelTask cancels a task.
func (c *Client) CancelTask(ctx context.Context, id int64) (TaskInfo, error) {
	return call[TaskInfo](ctx, c, http.MethodPost, fmt.Sprintf("/api/tasks/%d/cancel", id), nil)
}

// Usage reports the usage ledger's model calls, grouped (see UsageQuery).
func (c *Client) Usage(ctx context.Context, q UsageQuery) (UsageReport, error) {
	v := url.Values{}
	for k, s := range map[string]string{"pane": q.Pane, "since": q.Since, "by": q.By} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return call[UsageReport](ctx, c, http.MethodGet, "/api/usage?"+v.Encode(), nil)
}

// Budget reports a budget: ref is a pane's id or title, or team:NAME.
func (c *Client) Budget(ctx context.Context, ref string) (Budget, error) {
	return call[Budget](ctx, c, http.MethodGet, "/api/budgets/"+seg(ref), nil)
}

// SetBudget sets a budget (see Budget for ref), or removes it when
// req.BudgetUSD is nil, and reports it.
func (c *Client) SetBudget(ctx context.Context, ref string, req BudgetRequest) (Budget, error) {
	return call[Budget](ctx, c, http.MethodPut, "/api/budgets/"+seg(ref), req)
}

// Budgets reports every budget set: the panes' by id, then the teams' by
// name.
func (c *Client) Budgets(ctx context.Context) ([]Budget, error) {
	return call[[]Budget](ctx, c, http.MethodGet, "/api/budgets", nil)
}
