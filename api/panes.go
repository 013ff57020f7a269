package api

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/cicy-ai/cicy-agent/topology"
)

// The API's JSON documents. Fields may be added, never renamed (see docs/http-api.md).

// CreateRequest asks for a new pane. Paths are absolute: the client
// resolves them against its own working directory.
type CreateRequest struct {
	Title        string `json:"title"`
	Type         string `json:"type"`
	Role         string `json:"role"`
	RoleTemplate string `json:"role_template"`
	Master       string `json:"master"`
	Workspace    string `json:"workspace"`
	// Worktree runs the pane in a git worktree of its own, on branch
	// cicy/<home-tag>/<pane-id>, made from the repository Workspace (or the master's
	// workspace) is in; the pane's workspace is then the worktree.
	Worktree bool     `json:"worktree,omitempty"`
	Provider string   `json:"provider"`
	Model    string   `json:"model"`
	Backend  string   `json:"backend"`
	Command  []string `json:"command"`
	// Team names the team file the pane comes from (`up`); kept in config.
	Team string `json:"team,omitempty"`
	// AllowAll runs a CLI agent in its own bypass-permissions mode; without
	// it, a permission prompt puts the pane in waiting.
	AllowAll bool `json:"allow_all,omitempty"`
	// Env names variables of the supervisor's environment that the pane's
	// program gets although they are kept from panes (the provider keys:
	// see provider.Credentials). Names only: the value is the
	// supervisor's, read at every start, and never stored.
	Env []string `json:"env,omitempty"`
	// BudgetUSD is the pane's spending limit in US dollars at the price
	// table (0: none); see Budget.
	BudgetUSD float64 `json:"budget_usd,omitempty"`
	// Node is the node that runs the pane, in a cluster of supervisors
	// sharing a database: the request goes to that node's supervisor
	// ("": the one asked).
	Node string `json:"node,omitempty"`
	// Restart is the pane's restart policy: always, on-failure or never
	// ("": what was running comes back after a reboot; an exit of its
	// own is final).
	Restart string `json:"restart,omitempty"`
}

// CreateResponse is the new pane's id and what the user should be told.
type CreateResponse struct {
	ID       string   `json:"id"`
	Warnings []string `json:"warnings"`
	// Joined is the master a worker created without one joined: the only
	// master there was (absent when --master named one, or there was none
	// or several to join). A worker never joins a master created later.
	Joined *JoinedMaster `json:"joined,omitempty"`
}

// JoinedMaster is the master a new worker joined by itself.
type JoinedMaster struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Node  string `json:"node,omitempty"`
}

// Usage is a pane's token usage (cicy panes; zero for others).
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

// PaneInfo is one pane as `ls --json` prints it.
type PaneInfo struct {
	ID           string    `json:"id"`
	Title        string    `json:"title"`
	Type         string    `json:"type"`
	Role         string    `json:"role"`
	RoleTemplate string    `json:"role_template"`
	Master       *string   `json:"master"`
	Backend      string    `json:"backend"`
	State        string    `json:"state"`
	Reason       string    `json:"reason"`
	Since        time.Time `json:"since"`
	Workspace    string    `json:"workspace"`
	Tracked      bool      `json:"tracked"`
	Usage        Usage     `json:"usage"`
	Provider     string    `json:"provider"`
	Model        string    `json:"model"`
	Team         string    `json:"team,omitempty"`
	// Node is the supervisor (node) that runs the pane; every pane of a
	// single-machine supervisor has that supervisor's node.
	Node string `json:"node,omitempty"`
	// Attach is how a person attaches to a tmux pane without cicy-agent.
	Attach    []string  `json:"attach,omitempty"`
	Command   []string  `json:"command"`
	PID       int       `json:"pid,omitempty"`
	ExitCode  *int      `json:"exit_code"`
	CreatedAt time.Time `json:"created_at"`
	// CacheHit is cache-read input tokens over all input tokens (-1: no
	// usage yet).
	CacheHit float64 `json:"cache_hit"`
	// CostUSD is what the usage cost at list prices; null when a model's
	// price is unknown or there is no usage.
	CostUSD *float64 `json:"cost_usd"`
	// Messages is a cicy pane's history length; Compactable when over 300.
	Messages    int  `json:"messages,omitempty"`
	Compactable bool `json:"compactable,omitempty"`
	// Unrestored: a cicy pane a start has not restored yet (it is on its
	// first input, or soon in the background); its history is not read,
	// so Messages and Compactable are not known yet.
	Unrestored bool `json:"unrestored,omitempty"`
	// BudgetUSD is the pane's own spending limit (null: none; its team's
	// is in GET /api/budgets/{id}).
	BudgetUSD *float64 `json:"budget_usd"`
	// OverBudget is the sentence the pane's model requests are refused
	// with once its spend reached its budget or its team's; absent
	// otherwise.
	OverBudget string `json:"over_budget,omitempty"`
	// Upstream says why a CLI agent's model requests keep failing
	// upstream (two or more in a row: quota, key, rate limit), with the
	// last error; absent once one succeeds.
	Upstream string `json:"upstream_error,omitempty"`
	// ProviderError says why a cicy pane cannot make a model call: its
	// provider cannot be set up in the supervisor's environment (no key,
	// no script); absent when it can.
	ProviderError string `json:"provider_error,omitempty"`
	// Worktree is the pane's git worktree, when it runs in one.
	Worktree *WorktreeInfo `json:"worktree,omitempty"`
	// SessionID is a CLI agent's own session id (its conversation, as the
	// agent names it), the latest its signals revealed: a /clear or
	// /resume inside the agent replaces it. SessionAt is when the agent
	// was first seen in it; ResumeArgs the arguments, put right after its
	// program's name, that take the session up (absent when the agent
	// cannot resume by id). All absent before the agent revealed one.
	SessionID  string     `json:"session_id,omitempty"`
	SessionAt  *time.Time `json:"session_at,omitempty"`
	ResumeArgs []string   `json:"resume_args,omitempty"`
	// Restart is the pane's restart policy (always, on-failure, never;
	// absent for the default: what was running comes back after a
	// reboot). CameBack is how it last came back by it: "resumed <session
	// id>", "restarted: …", "restarted as a new conversation: …"; absent
	// when it did not (or was started by hand since).
	Restart  string `json:"restart,omitempty"`
	CameBack string `json:"came_back,omitempty"`
	// Signals is a running CLI agent pane's state signals (absent for
	// other panes).
	Signals *Signals `json:"signals,omitempty"`
}

// Signals is what a CLI agent pane's three state signals — its hooks, the
// gateway and its screen rules — say and how often they disagreed, since
// its program was started or re-adopted.
type Signals struct {
	// InFlight is how many of its main-loop model requests the gateway is
	// forwarding now.
	InFlight      int           `json:"in_flight"`
	Disagreements Disagreements `json:"disagreements"`
	// LastGateway is when the count of requests in flight last changed
	// (absent before the first request).
	LastGateway *time.Time `json:"last_gateway,omitempty"`
	// LastScreen is the screen rules' last look at the pane (absent
	// before the first).
	LastScreen *ScreenSeen `json:"last_screen,omitempty"`
}

// ScreenSeen is the screen rules' last look at a pane: the state they
// gave ("unknown" when no rule matched), the rule and the part of the
// layout it read, and when.
type ScreenSeen struct {
	State string    `json:"state"`
	Rule  string    `json:"rule,omitempty"`
	Part  string    `json:"part,omitempty"`
	At    time.Time `json:"at"`
}

// Disagreements counts, per pair of signals, the times they contradicted
// each other for 2 seconds or more (each time once, however long it
// lasted).
type Disagreements struct {
	// HookVsScreen: the screen rules' verdict differed from the last hook's
	// state.
	HookVsScreen int `json:"hook_vs_screen"`
	// GatewayVsHook: a request was in flight while the last hook said idle
	// or waiting.
	GatewayVsHook int `json:"gateway_vs_hook"`
	// GatewayVsScreen: a request was in flight while the screen rules said
	// idle or waiting.
	GatewayVsScreen int `json:"gateway_vs_screen"`
}

// SendRequest is input for a pane: text (typed, then Enter unless NoEnter)
// and then named keys.
type SendRequest struct {
	Text    string   `json:"text"`
	Keys    []string `json:"keys"`
	NoEnter bool     `json:"no_enter"`
	// Wait (cicy panes) blocks until the turn ends; Timeout in seconds.
	Wait    bool    `json:"wait"`
	Timeout float64 `json:"timeout"`
}

// SendResult is the answer of `send --wait` and of compact/clear.
type SendResult struct {
	Status string `json:"status"`
	Answer string `json:"answer"`
	Error  string `json:"error,omitempty"`
	// Unsaved says why the turn's history or usage was not written ("disk
	// full: …"); the turn is then failed even when it has its answer,
	// which is kept in memory and written at the next chance.
	Unsaved string `json:"unsaved,omitempty"`
}

// ViaWeb is an answer given on the web page.
const ViaWeb = "web"

// AnswerRequest answers a pane's dialog (POST /api/panes/{id}/answer).
type AnswerRequest struct {
	// Action is approve, deny or option:N (a CLI agent pane waiting on a
	// dialog), restart (a pane that exited, stopped or is in a crash loop)
	// or screen (the pane's screen, to read before answering).
	Action string `json:"action"`
	// By is who answers (a user name, a chat's name, a browser session);
	// Via where from: "terminal" (the default), "telegram" or "web" (the
	// web page sets both: its session answers).
	By  string `json:"by,omitempty"`
	Via string `json:"via,omitempty"`
	// Event is the notification whose button answered (a stale one is
	// refused); Text the free text of action text (a reply typed into a
	// question).
	Event string `json:"event,omitempty"`
	Text  string `json:"text,omitempty"`
}

// AnswerResult is what an answer did.
type AnswerResult struct {
	Pane   string `json:"pane"`
	Action string `json:"action"`
	// Keys are the keys typed into the pane (approve, deny, option:N).
	Keys []string `json:"keys,omitempty"`
	// State is the pane's state after the answer.
	State string `json:"state"`
	// Screen is the pane's screen (action screen).
	Screen string `json:"screen,omitempty"`
}

// ScreenResponse is a pane's current screen.
type ScreenResponse struct {
	ID     string `json:"id"`
	State  string `json:"state"`
	Screen string `json:"screen"`
	// Dialog is the dialog a CLI agent's screen shows (a permission, a
	// question), as its registry entry reads it; absent when none.
	Dialog *Dialog `json:"dialog,omitempty"`
	// Styled is the screen with its colours (asked with styled=1): its
	// lines, each its runs of text of one style; absent unless asked.
	Styled [][]StyledRun `json:"styled,omitempty"`
}

// StyledRun is text of one style on a screen line. A colour is "" (the
// terminal's default), "0" to "255" (a palette index) or "#rrggbb".
type StyledRun struct {
	Text      string `json:"t"`
	FG        string `json:"fg,omitempty"`
	BG        string `json:"bg,omitempty"`
	Bold      bool   `json:"b,omitempty"`
	Italic    bool   `json:"i,omitempty"`
	Underline bool   `json:"u,omitempty"`
	Reverse   bool   `json:"r,omitempty"`
}

// Dialog is what a CLI agent asks its person on its screen.
type Dialog struct {
	// Kind is "approval" (a tool waits for permission), "question" (the
	// agent asks its person to choose), or "" when the screen shows no
	// dialog.
	Kind string `json:"kind"`
	// Text is the command awaiting approval, or the question, trimmed of
	// frame glyphs and cut to a readable length.
	Text string `json:"text"`
	// Options are the texts of the dialog's choices, in order: option:N
	// picks Options[N-1].
	Options []string `json:"options,omitempty"`
}

// Health is what the supervisor says of itself.
type Health struct {
	PID     int    `json:"pid"`
	Version string `json:"version"`
	Home    string `json:"home"`
	// Gateway is the model gateway's base URL, "http://127.0.0.1:PORT".
	Gateway string `json:"gateway"`
	// Cluster is the cluster API's address (serve --listen), if it has one.
	Cluster string `json:"cluster,omitempty"`
	// Node is this supervisor's node name.
	Node string `json:"node,omitempty"`
	// Provider is the supervisor's CICY_PROVIDER, the cicy panes' default
	// provider ("" when unset: anthropic). A client whose own differs is
	// told: the supervisor keeps the environment it started with.
	Provider string `json:"provider,omitempty"`
	// Starting: the supervisor is restoring its panes and answers only
	// this; other requests wait until it is ready. Restoring says how far
	// it is ("restoring 64,000 of 100,000 panes").
	Starting  bool   `json:"starting,omitempty"`
	Restoring string `json:"restoring,omitempty"`
	// NeedsYou is what needs a person about the home as a whole (its disk
	// is full: kind disk-full); absent when nothing does.
	NeedsYou []topology.Attention `json:"needs_you,omitempty"`
}

// HomeInfo is what needs a person about a supervisor's home as a whole,
// not one pane.
type HomeInfo struct {
	// DiskFull says what cannot be written for lack of space ("disk full:
	// …"), "" while writes succeed.
	DiskFull string `json:"disk_full,omitempty"`
	// Node is the node whose home it is.
	Node string `json:"node,omitempty"`
	// CameBack is how the panes found gone at the supervisor's start came
	// back (absent when none was, or an hour after).
	CameBack *topology.CameBack `json:"came_back,omitempty"`
	// Notify are the notification sinks and what they did.
	Notify []topology.SinkState `json:"notify,omitempty"`
}

// Needs is the home's part of needs-you.
func (h HomeInfo) Needs() []topology.Attention {
	if h.DiskFull == "" {
		return nil
	}
	return []topology.Attention{topology.DiskFull(h.Node, h.DiskFull)}
}

// StatusResponse is `status --json`.
type StatusResponse = topology.Status

// GuidanceDoc is a pane's guidance file (AGENTS.md or CLAUDE.md).
type GuidanceDoc struct {
	Scope    string `json:"scope"`
	Name     string `json:"name"`
	Filename string `json:"filename"`
	Path     string `json:"path"`
	Content  string `json:"content,omitempty"`
	Exists   bool   `json:"exists"`
	Saved    bool   `json:"saved,omitempty"`
}

// HookRequest is one signal of a CLI agent (POST /api/panes/{id}/hook),
// as `cicy-agent hook` posts it (see docs/hooks.md).
type HookRequest struct {
	Agent   string          `json:"agent"`
	Event   string          `json:"event"`
	Payload json.RawMessage `json:"payload,omitempty"`
	// At is when the hook ran: a spooled one (the supervisor was down)
	// arrives late.
	At time.Time `json:"at"`
}

// HookResult is what a hook signal did.
type HookResult struct {
	State   string `json:"state,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Ignored string `json:"ignored,omitempty"`
}

var paneIDRe = regexp.MustCompile(`^w-([1-9][0-9]{0,17})(:main(\.0)?)?$`)

// PaneNum is the N of pane id w-N (0 for anything else), for ordering.
func PaneNum(id string) int64 {
	n, _ := strconv.ParseInt(strings.TrimPrefix(id, "w-"), 10, 64)
	return n
}

// ComparePaneIDs orders pane ids by their number: w-2 before w-10 (ids
// that are not w-N, number 0, first, by their text).
func ComparePaneIDs(a, b string) int {
	return cmp.Or(cmp.Compare(PaneNum(a), PaneNum(b)), strings.Compare(a, b))
}

// ParsePaneID accepts w-N and the tmux-style w-N:main.0 and returns w-N.
func ParsePaneID(s string) (string, error) {
	m := paneIDRe.FindStringSubmatch(s)
	if m == nil {
		return "", &Error{Kind: KindUsage, Message: fmt.Sprintf("%q is not a pane id (expected w-<N>, like w-1)", s)}
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return fmt.Sprintf("w-%d", n), nil
}
