package cicy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/cicy/apitest"
	"github.com/cicy-ai/cicy-agent/cicy/clip"
	"github.com/cicy-ai/cicy-agent/cicy/provider"
	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// testWait bounds every wait of these tests; nothing sleeps to synchronise.
const testWait = 30 * time.Second

// Fixed persona and memory texts: the golden request must not depend on
// temp paths.
const (
	testAgentsMD = "# Role\n\nYou are w-1, the test agent of the cicy turn-loop tests.\nAnswer briefly.\n"
	testMemoryMD = "- [preference★5] Colour: the user likes teal.\n- [fact★3] Editor: the user works in vim.\n"
	testSkillMD  = "---\nname: demo\ndescription: A demo skill for the tests.\n---\nRun `echo demo`.\n"
)

// rig is one cicy pane under test: a home with the built-in templates, a
// workspace with a hand-written AGENTS.md, a fake Anthropic API and the
// agent talking to it over HTTP with the real provider.
type rig struct {
	t     *testing.T
	home  string
	ws    string
	cfg   PaneConfig
	srv   *apitest.Server
	a     *Agent
	usage *usageSink
	// tweak, if set, changes the agent's Env before it starts.
	tweak func(*Env)
}

// usageSink records the usage records of an agent.
type usageSink struct {
	mu   sync.Mutex
	recs []UsageRecord
}

func (u *usageSink) RecordUsage(_ context.Context, r UsageRecord) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.recs = append(u.recs, r)
	return nil
}

func (u *usageSink) records() []UsageRecord {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]UsageRecord(nil), u.recs...)
}

// newRig prepares the home, the workspace and the server; start() starts
// the agent (tests may first write files the agent reads at start).
func newRig(t *testing.T, handle func(n int, r *apitest.Recorded) apitest.Reply) *rig {
	t.Helper()
	// bash -l reads the profile of $HOME: keep the machine's out.
	t.Setenv("HOME", t.TempDir())
	r := &rig{t: t, home: t.TempDir(), ws: t.TempDir(), usage: &usageSink{}}
	if err := SeedTemplates(r.home); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(r.ws, "AGENTS.md"), testAgentsMD)
	r.cfg = PaneConfig{ID: "w-1", Workspace: r.ws, RoleTemplate: "assistant"}
	r.srv = apitest.NewAnthropic(t, handle)
	return r
}

func (r *rig) env() Env {
	logger := logrus.New()
	logger.SetOutput(io.Discard)
	env := Env{
		Home: r.home,
		NewProvider: func(name string) (Provider, error) {
			if name != "anthropic" {
				return nil, fmt.Errorf("test: unexpected provider %q", name)
			}
			return &provider.Anthropic{
				BaseURL: r.srv.URL,
				APIKey:  "test-key",
				Retry: provider.Retry{Attempts: 3, Sleep: func(ctx context.Context, _ time.Duration) error {
					return ctx.Err()
				}},
			}, nil
		},
		Getenv: func(string) string { return "" },
		Log:    logrus.NewEntry(logger),
		Usage:  r.usage,
	}
	if r.tweak != nil {
		r.tweak(&env)
	}
	return env
}

// start starts the agent; at cleanup a running turn is cancelled and the
// agent closed once idle (so nothing writes into the temp dirs after).
func (r *rig) start() *Agent {
	r.t.Helper()
	a, err := Start(r.cfg, r.env())
	if err != nil {
		r.t.Fatalf("Start: %v", err)
	}
	r.a = a
	r.t.Cleanup(func() {
		deadline := time.Now().Add(testWait)
		for a.Status().State == Busy && time.Now().Before(deadline) {
			a.Cancel()
			time.Sleep(5 * time.Millisecond)
		}
		a.Close()
	})
	return a
}

// send delivers a message and waits for the turn that handles it.
func (r *rig) send(text string) TurnResult {
	r.t.Helper()
	return awaitTurn(r.t, r.sendAsync(text, ""))
}

func (r *rig) sendAsync(text, from string) <-chan TurnResult {
	r.t.Helper()
	ch, err := r.a.Send(text, from, true)
	if err != nil {
		r.t.Fatalf("Send(%q): %v", text, err)
	}
	return ch
}

func awaitTurn(t *testing.T, ch <-chan TurnResult) TurnResult {
	t.Helper()
	select {
	case res := <-ch:
		return res
	case <-time.After(testWait):
		t.Fatalf("no turn result within %v", testWait)
		return TurnResult{}
	}
}

// waitFor polls cond until it holds.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (r *rig) expectIdle() {
	r.t.Helper()
	if s := r.a.Status(); s.State != Idle {
		r.t.Fatalf("pane state %s (%s), want idle", s.State, s.Reason)
	}
}

func (r *rig) requests(want int) []apitest.Recorded {
	r.t.Helper()
	rs := r.srv.Requests()
	if want >= 0 && len(rs) != want {
		r.t.Fatalf("the server got %d requests, want %d", len(rs), want)
	}
	return rs
}

func (r *rig) current() Current {
	r.t.Helper()
	var cur Current
	ok, err := readJSON(filepath.Join(HistoryDir(r.ws), "current.json"), &cur)
	if err != nil || !ok {
		r.t.Fatalf("read current.json: ok=%v %v", ok, err)
	}
	return cur
}

func (r *rig) history() []wire.Message { return fromHist(r.current().Messages) }

func (r *rig) replyFile() Reply {
	r.t.Helper()
	var rep Reply
	ok, err := readJSON(filepath.Join(HistoryDir(r.ws), "reply.json"), &rep)
	if err != nil || !ok {
		r.t.Fatalf("read reply.json: ok=%v %v", ok, err)
	}
	return rep
}

// writeTemplate writes a role template folder under <home>/memory/agents.
func (r *rig) writeTemplate(slug, system, meta string) {
	r.t.Helper()
	dir := filepath.Join(r.home, "memory", "agents", slug)
	mustWrite(r.t, filepath.Join(dir, "system.md"), system)
	mustWrite(r.t, filepath.Join(dir, "meta.yaml"), meta)
}

func (r *rig) writeMemory(text string) {
	r.t.Helper()
	mustWrite(r.t, filepath.Join(r.ws, ".cicy", "memory", "MEMORY.md"), text)
}

// writeHistory writes current.json (and optionally reply.json) before
// Start.
func (r *rig) writeHistory(convID string, msgs []wire.Message) {
	r.t.Helper()
	w := historyWriter{dir: HistoryDir(r.ws), agentID: r.cfg.ID, convID: convID}
	if err := w.save(msgs, time.Unix(1700000000, 0)); err != nil {
		r.t.Fatal(err)
	}
}

func mustWrite(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// replies answers the n-th request with rs[n], the last one repeating.
func replies(rs ...apitest.Reply) func(int, *apitest.Recorded) apitest.Reply {
	return func(n int, _ *apitest.Recorded) apitest.Reply { return rs[min(n, len(rs)-1)] }
}

// textReply is a one-text-block answer.

func textReply(s string) apitest.Reply {
	return apitest.Reply{Resp: apitest.TextResponse(s, wire.Usage{InputTokens: 10, OutputTokens: 2})}
}

func shellCall(id, command string) apitest.Reply {
	return apitest.Reply{Resp: apitest.ToolResponse(id, "shell", map[string]any{"command": command}, wire.Usage{InputTokens: 10, OutputTokens: 3})}
}

func textMsg(role, s string) wire.Message {
	return wire.Message{Role: role, Content: []wire.Block{wire.Text(s)}}
}

// alternating is n messages user/assistant/… with texts msg-000, msg-001….
func alternating(n int) []wire.Message {
	out := make([]wire.Message, n)
	for i := range out {
		role := wire.RoleUser
		if i%2 == 1 {
			role = wire.RoleAssistant
		}
		out[i] = textMsg(role, fmt.Sprintf("msg-%03d", i))
	}
	return out
}

func randomToken(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// checkBalanced: every tool_use has exactly one tool_result, in order, in
// the user message right after it, and every tool_result answers a
// tool_use of the message before it.
func checkBalanced(t *testing.T, where string, msgs []wire.Message) {
	t.Helper()
	for i, m := range msgs {
		var uses []string
		if m.Role == wire.RoleAssistant {
			for _, u := range m.ToolUses() {
				uses = append(uses, u.ID)
			}
		}
		var results []string
		if i+1 < len(msgs) && msgs[i+1].Role == wire.RoleUser {
			for _, b := range msgs[i+1].Content {
				if b.Type == wire.TypeToolResult {
					results = append(results, b.ToolUseID)
				}
			}
		}
		if len(uses) > 0 && strings.Join(uses, ",") != strings.Join(results, ",") {
			t.Errorf("%s: message %d calls tools %v but the next message answers %v", where, i, uses, results)
		}
		if m.Role == wire.RoleUser && hasToolResult(m) && (i == 0 || len(msgs[i-1].ToolUses()) == 0) {
			t.Errorf("%s: message %d holds a tool_result without a tool_use before it", where, i)
		}
	}
}

// toolResults returns the tool_result blocks of a message.
func toolResults(m wire.Message) []wire.Block {
	var out []wire.Block
	for _, b := range m.Content {
		if b.Type == wire.TypeToolResult {
			out = append(out, b)
		}
	}
	return out
}

func lastMessage(t *testing.T, msgs []wire.Message) wire.Message {
	t.Helper()
	if len(msgs) == 0 {
		t.Fatal("no messages")
	}
	return msgs[len(msgs)-1]
}

func lastText(m wire.Message) string {
	if len(m.Content) == 0 {
		return ""
	}
	return m.Content[len(m.Content)-1].Text
}

func expectMarker(t *testing.T, msgs []wire.Message, marker string) {
	t.Helper()
	m := lastMessage(t, msgs)
	if m.Role != wire.RoleAssistant || len(m.Content) != 1 || m.Content[0].Text != marker {
		t.Fatalf("history ends with %+v, want the assistant marker %q", m, marker)
	}
}

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// ---------------------------------------------------------------------------
// The wire contract.

func TestGoldenFirstRequest(t *testing.T) {
	r := newRig(t, replies(shellCall("toolu_g1", "echo golden"), textReply("done"), textReply("second")))
	mustWrite(t, filepath.Join(r.home, "skills", "demo", "SKILL.md"), testSkillMD)
	r.writeMemory(testMemoryMD)
	r.start()

	if res := r.send("hello"); res.Status != TurnCompleted || res.Answer != "done" {
		t.Fatalf("turn 1: %+v", res)
	}
	if res := r.send("again"); res.Status != TurnCompleted || res.Answer != "second" {
		t.Fatalf("turn 2: %+v", res)
	}
	rs := r.requests(3)

	// Golden: the first body, indented (json.Indent keeps the order and
	// escapes of the bytes on the wire).
	var got bytes.Buffer
	if err := json.Indent(&got, rs[0].Body, "", "  "); err != nil {
		t.Fatalf("body is not JSON: %v", err)
	}
	got.WriteByte('\n')
	golden := filepath.Join("testdata", "golden", "first_request.json")
	if *update {
		mustWrite(t, golden, got.String())
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./cicy -run TestGoldenFirstRequest -update to write it)", err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("first request differs from %s (rerun with -update after checking the change):\n%s", golden, firstDiff(want, got.Bytes()))
	}

	// The same contract, checked structurally (see docs/requests-and-caching.md).
	req := rs[0].Req
	systemMD := string(mustRead(t, filepath.Join(r.home, "memory", "agents", "assistant", "system.md")))
	if len(req.System) != 2 {
		t.Fatalf("system has %d blocks, want system.md + skills", len(req.System))
	}
	if s := req.System[0]; s.Type != wire.TypeText || s.Text != systemMD || s.CacheControl != nil {
		t.Errorf("system[0] = %+v, want system.md without cache_control", s)
	}
	if s := req.System[1]; !strings.Contains(s.Text, "demo: A demo skill for the tests.") || s.CacheControl == nil || s.CacheControl.Type != "ephemeral" {
		t.Errorf("system[1] = %+v, want the skills listing with cache_control", s)
	}
	if len(req.Tools) != 2 || req.Tools[0].Name != "shell" || req.Tools[1].Name != "skill" {
		t.Fatalf("tools %+v, want shell, skill", req.Tools)
	}
	if req.Tools[0].CacheControl != nil || req.Tools[1].CacheControl == nil {
		t.Errorf("cache_control on tools: %v, %v; want only on the last", req.Tools[0].CacheControl, req.Tools[1].CacheControl)
	}
	if req.ToolChoice != nil {
		t.Errorf("tool_choice %+v on a normal round", req.ToolChoice)
	}
	if !req.Stream || req.Model != "claude-sonnet-4-5" || req.MaxTokens != defaultMaxTokens {
		t.Errorf("stream %v model %q max_tokens %d", req.Stream, req.Model, req.MaxTokens)
	}
	if len(req.Messages) != 1 || req.Messages[0].Role != wire.RoleUser {
		t.Fatalf("messages %+v", req.Messages)
	}
	c := req.Messages[0].Content
	roleBlock := "<role>\n" + strings.TrimSpace(testAgentsMD) + "\n</role>"
	memBlock := "<memories>\n" + strings.TrimSpace(testMemoryMD) + "\n</memories>"
	if len(c) != 3 {
		t.Fatalf("first user message has %d blocks, want role, text, memories: %+v", len(c), c)
	}
	if c[0].Text != roleBlock || c[0].CacheControl != nil {
		t.Errorf("content[0] = %+v, want the role block %q", c[0], roleBlock)
	}
	if c[1].Text != "hello" || c[1].CacheControl == nil {
		t.Errorf("content[1] = %+v, want the user text with the breakpoint", c[1])
	}
	if c[2].Text != memBlock || c[2].CacheControl != nil {
		t.Errorf("content[2] = %+v, want the memories block after the breakpoint", c[2])
	}

	for i, rec := range rs {
		if n := bytes.Count(rec.Body, []byte(`"cache_control"`)); n > 4 || n < 3 {
			t.Errorf("request %d has %d cache_control, want 3 (at most 4)", i, n)
		}
		checkRoleAndMemories(t, fmt.Sprintf("request %d", i), rec.Req, roleBlock, memBlock)
		h := rec.Header
		if h.Get("X-Cicy-Pane") != "w-1" || h.Get("anthropic-version") != "2023-06-01" || h.Get("x-api-key") != "test-key" {
			t.Errorf("request %d headers: pane %q version %q key %q", i, h.Get("X-Cicy-Pane"), h.Get("anthropic-version"), h.Get("x-api-key"))
		}
		if h.Get("X-Cicy-Turn-Id") == "" || h.Get("X-Cicy-Aux") != "" {
			t.Errorf("request %d: turn id %q, aux %q", i, h.Get("X-Cicy-Turn-Id"), h.Get("X-Cicy-Aux"))
		}
	}
	t1, t1b, t2 := rs[0].Header.Get("X-Cicy-Turn-Id"), rs[1].Header.Get("X-Cicy-Turn-Id"), rs[2].Header.Get("X-Cicy-Turn-Id")
	if t1 != t1b {
		t.Errorf("the two rounds of turn 1 carry turn ids %q and %q", t1, t1b)
	}
	if t2 == t1 {
		t.Errorf("turn 2 reuses turn id %q", t1)
	}
}

// checkRoleAndMemories: the role block is the first block of the first
// user message, the memories block the last block of the last user
// message, after the breakpoint on the last history block; each appears
// once.
func checkRoleAndMemories(t *testing.T, where string, req wire.Request, roleBlock, memBlock string) {
	t.Helper()
	msgs := req.Messages
	if msgs[0].Role != wire.RoleUser || msgs[0].Content[0].Text != roleBlock {
		t.Errorf("%s: the first block of the first user message is %+v, want the role block", where, msgs[0].Content[0])
	}
	last := msgs[len(msgs)-1]
	if last.Role != wire.RoleUser || lastText(last) != memBlock {
		t.Errorf("%s: the last block of the last message is %+v, want the memories block", where, last.Content[len(last.Content)-1])
	}
	if len(last.Content) < 2 || last.Content[len(last.Content)-2].CacheControl == nil {
		t.Errorf("%s: no breakpoint on the block before the memories block", where)
	}
	var roles, mems int
	for _, m := range msgs {
		for _, b := range m.Content {
			roles += strings.Count(b.Text, "<role>")
			mems += strings.Count(b.Text, "<memories>")
		}
	}
	if roles != 1 || mems != 1 {
		t.Errorf("%s: %d role blocks and %d memories blocks, want one each", where, roles, mems)
	}
}

// containsText reports whether the JSON document raw holds s, as is or
// JSON-escaped (encoding/json escapes < and >).
func containsText(raw []byte, s string) bool {
	esc, _ := json.Marshal(s)
	return bytes.Contains(raw, []byte(s)) || bytes.Contains(raw, esc[1:len(esc)-1])
}

// firstDiff shows the first differing line of two texts.
func firstDiff(want, got []byte) string {
	wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\n  want %s\n  got  %s", i+1, clip.Bytes(w, 300), clip.Bytes(g, 300))
		}
	}
	return "(same lines, different bytes)"
}

func TestPrefixByteIdenticalAcrossRounds(t *testing.T) {
	r := newRig(t, replies(shellCall("toolu_p1", "echo one"), shellCall("toolu_p2", "echo two"), textReply("done"), textReply("turn two")))
	r.writeMemory(testMemoryMD)
	r.start()
	if res := r.send("go"); res.Status != TurnCompleted {
		t.Fatalf("turn: %+v", res)
	}
	// A second turn extends the same prefix too.
	if res := r.send("and now?"); res.Status != TurnCompleted {
		t.Fatalf("turn 2: %+v", res)
	}
	rs := r.requests(4)
	bp := []byte(`,"cache_control":{"type":"ephemeral"}`)
	for i := 0; i+1 < len(rs); i++ {
		a, b := rs[i].Body, rs[i+1].Body
		// The last cache_control of a body is the history breakpoint; only
		// the memories block follows it.
		off := bytes.LastIndex(a, bp)
		if off < 0 || !containsText(a[off:], "<memories>") {
			t.Fatalf("request %d: no history breakpoint before the memories block", i)
		}
		if !bytes.Equal(a[:off], b[:min(off, len(b))]) {
			d := 0
			for d < off && d < len(b) && a[d] == b[d] {
				d++
			}
			t.Errorf("request %d changes the bytes before request %d's breakpoint at offset %d of %d:\n  request %d: …%s…\n  request %d: …%s…",
				i+2, i+1, d, off, i+1, clip.Bytes(string(a[max(0, d-80):]), 160), i+2, clip.Bytes(string(b[max(0, d-80):]), 160))
		}
		// The same, structurally: tools, system and the messages up to the
		// breakpoint block, without cache_control.
		if pa, pb := prefixJSON(rs[i].Req, rs[i].Req), prefixJSON(rs[i].Req, rs[i+1].Req); pa != pb {
			t.Errorf("the prefix up to request %d's breakpoint differs in request %d:\n%s\n%s", i+1, i+2, clip.Bytes(pa, 400), clip.Bytes(pb, 400))
		}
	}

	// Nothing injected is persisted.
	cur := mustRead(t, filepath.Join(HistoryDir(r.ws), "current.json"))
	for _, s := range []string{"<memories>", "teal", "<role>", "test agent of the cicy", "cache_control", finalNote} {
		if containsText(cur, s) {
			t.Errorf("current.json contains %q", s)
		}
	}
	checkBalanced(t, "current.json", r.history())
}

// prefixJSON renders of req the tools, the system and the messages up to
// the block that carries ref's last message breakpoint, all without
// cache_control.
func prefixJSON(ref, req wire.Request) string {
	mi, bi := -1, -1
	for i, m := range ref.Messages {
		for j, b := range m.Content {
			if b.CacheControl != nil {
				mi, bi = i, j
			}
		}
	}
	strip := func(bs []wire.Block) []wire.Block {
		out := append([]wire.Block(nil), bs...)
		for i := range out {
			out[i].CacheControl = nil
		}
		return out
	}
	var msgs []wire.Message
	for i := 0; i <= mi && i < len(req.Messages); i++ {
		c := req.Messages[i].Content
		if i == mi {
			c = c[:min(bi+1, len(c))]
		}
		msgs = append(msgs, wire.Message{Role: req.Messages[i].Role, Content: strip(c)})
	}
	tools := append([]wire.Tool(nil), req.Tools...)
	for i := range tools {
		tools[i].CacheControl = nil
	}
	b, _ := json.Marshal(struct {
		Tools    []wire.Tool
		System   []wire.Block
		Messages []wire.Message
	}{tools, strip(req.System), msgs})
	return string(b)
}

// ---------------------------------------------------------------------------
// Tools and rounds.

func TestToolRoundRunsRealShell(t *testing.T) {
	token := "hi-" + randomToken(t)
	r := newRig(t, replies(
		apitest.Reply{Resp: apitest.ToolResponse("toolu_s1", "shell", map[string]any{"command": "echo " + token}, wire.Usage{InputTokens: 10, OutputTokens: 5})},
		apitest.Reply{Resp: apitest.TextResponse("the output was "+token, wire.Usage{InputTokens: 20, OutputTokens: 6, CacheReadInputTokens: 8, CacheCreationInputTokens: 4})},
	))
	a := r.start()
	res := r.send("run it")
	if res.Status != TurnCompleted || res.Answer != "the output was "+token {
		t.Fatalf("turn: %+v", res)
	}
	rs := r.requests(2)
	msgs := rs[1].Req.Messages
	if len(msgs) != 3 || len(msgs[1].ToolUses()) != 1 {
		t.Fatalf("round 2 messages: %+v", msgs)
	}
	trs := toolResults(msgs[2])
	if len(trs) != 1 || trs[0].ToolUseID != "toolu_s1" || trs[0].Content != token+"\n" || trs[0].IsError {
		t.Fatalf("tool_result in round 2: %+v, want %q", trs, token+"\n")
	}

	cur := r.current()
	if cur.AgentID != "w-1" || cur.ConversationID != a.ConversationID() || !uuidV4.MatchString(cur.ConversationID) {
		t.Errorf("current.json agent %q conversation %q", cur.AgentID, cur.ConversationID)
	}
	if len(cur.Messages) != 4 {
		t.Fatalf("current.json has %d messages, want user, tool_use, tool_result, answer", len(cur.Messages))
	}
	for i, m := range cur.Messages {
		if m.ID != i+1 {
			t.Errorf("message %d has id %d", i, m.ID)
		}
	}
	h := r.history()
	if h[0].JoinedText() != "run it" || h[1].ToolUses()[0].Name != "shell" ||
		toolResults(h[2])[0].Content != token+"\n" || h[3].JoinedText() != "the output was "+token {
		t.Errorf("current.json messages: %+v", h)
	}
	checkBalanced(t, "current.json", h)

	rep := r.replyFile()
	if rep.Status != TurnCompleted || rep.Answer != "the output was "+token || rep.ConversationID != cur.ConversationID {
		t.Errorf("reply.json: %+v", rep)
	}
	if rep.TurnID == "" || rep.TurnID != rs[0].Header.Get("X-Cicy-Turn-Id") {
		t.Errorf("reply.json turn id %q, header %q", rep.TurnID, rs[0].Header.Get("X-Cicy-Turn-Id"))
	}
	if len(rep.ToolCalls) != 1 || rep.ToolCalls[0].Name != "shell" || rep.ToolCalls[0].Result != token+"\n" ||
		!strings.Contains(string(rep.ToolCalls[0].Input), "echo "+token) {
		t.Errorf("reply.json tool_calls: %+v", rep.ToolCalls)
	}
	if want := (wire.Usage{InputTokens: 30, OutputTokens: 11, CacheReadInputTokens: 8, CacheCreationInputTokens: 4}); rep.Usage != want {
		t.Errorf("reply.json usage %+v, want %+v", rep.Usage, want)
	}
	if got := a.Reply(); got.Status != TurnCompleted || got.Answer != rep.Answer {
		t.Errorf("Reply() = %+v", got)
	}
	recs := r.usage.records()
	if len(recs) != 2 {
		t.Fatalf("%d usage records, want one per round", len(recs))
	}
	for i, u := range recs {
		if u.PaneID != "w-1" || u.TurnID != rep.TurnID || u.ConversationID != cur.ConversationID || u.Aux != "" || u.Model != "claude-sonnet-4-5" {
			t.Errorf("usage record %d: %+v", i, u)
		}
	}
	if recs[1].Usage != (wire.Usage{InputTokens: 20, OutputTokens: 6, CacheReadInputTokens: 8, CacheCreationInputTokens: 4}) {
		t.Errorf("usage of round 2: %+v", recs[1].Usage)
	}
	r.expectIdle()
}

func TestCurrentJSONNamesModel(t *testing.T) {
	// current.json is {agent_id, conversation_id, updated_at,
	// model, messages}.
	r := newRig(t, replies(textReply("hi")))
	r.start()
	r.send("hello")
	if m := r.current().Model; m != "claude-sonnet-4-5" {
		t.Errorf("current.json model = %q, want the model of the turn (claude-sonnet-4-5): "+
			"historyWriter.save (history.go) encodes Current without Model, and neither the turn nor saveCurrent passes it", m)
	}
}

func TestRoundCap(t *testing.T) {
	r := newRig(t, func(n int, _ *apitest.Recorded) apitest.Reply {
		return shellCall(fmt.Sprintf("toolu_c%d", n), "echo round")
	})
	r.writeTemplate("capped", "You are capped.\n", "name: Capped\ntools: [core]\nmax_tool_rounds: 3\nmodel: claude-capped\nmax_tokens: 1000\n")
	r.cfg.RoleTemplate = "capped"
	r.start()
	res := r.send("loop forever")
	if res.Status != TurnCompleted {
		t.Fatalf("turn: %+v", res)
	}
	rs := r.requests(3)
	for i, rec := range rs[:2] {
		if rec.Req.ToolChoice != nil {
			t.Errorf("round %d has tool_choice %+v", i+1, rec.Req.ToolChoice)
		}
		if lastText(lastMessage(t, rec.Req.Messages)) == finalNote {
			t.Errorf("round %d carries the budget note", i+1)
		}
	}
	for i, rec := range rs {
		if rec.Req.Model != "claude-capped" || rec.Req.MaxTokens != 1000 {
			t.Errorf("request %d: model %q max_tokens %d, want meta.yaml's claude-capped and 1000", i, rec.Req.Model, rec.Req.MaxTokens)
		}
	}
	final := rs[2].Req
	if final.ToolChoice == nil || final.ToolChoice.Type != "none" || !bytes.Contains(rs[2].Body, []byte(`"tool_choice":{"type":"none"}`)) {
		t.Errorf("round 3 tool_choice %+v, want {\"type\":\"none\"}", final.ToolChoice)
	}
	if len(final.Tools) != 2 {
		t.Errorf("the final round dropped the tools (cache prefix changes): %d tools", len(final.Tools))
	}
	last := lastMessage(t, final.Messages)
	if last.Role != wire.RoleUser || lastText(last) != finalNote {
		t.Errorf("the last block of the final round is %q, want the budget note", lastText(last))
	}
	h := r.history()
	checkBalanced(t, "current.json", h)
	var uses int
	for _, m := range h {
		uses += len(m.ToolUses())
	}
	if uses != 3 {
		t.Errorf("%d tool calls in history, want 3", uses)
	}
	lr := toolResults(lastMessage(t, h))
	if len(lr) != 1 || !lr[0].IsError || !strings.Contains(lr[0].Content, "budget") {
		t.Errorf("the final round's tool call got %+v, want the budget-spent error", lr)
	}
	if containsText(mustRead(t, filepath.Join(HistoryDir(r.ws), "current.json")), finalNote) {
		t.Error("the budget note was persisted")
	}
	r.expectIdle()
}

// ---------------------------------------------------------------------------
// Queue and cancel.

func TestQueueDuringTurn(t *testing.T) {
	release := make(chan struct{})
	r := newRig(t, func(n int, rec *apitest.Recorded) apitest.Reply {
		switch {
		case n == 0:
			select {
			case <-release:
			case <-rec.Context.Done():
			}
			return textReply("first")
		case rec.Req.Aux == "compact":
			return textReply("SUMMARY")
		default:
			return textReply(fmt.Sprintf("reply-%d", n))
		}
	})
	released := false
	t.Cleanup(func() {
		if !released {
			close(release)
		}
	})
	a := r.start()
	ch1 := r.sendAsync("one", "")
	pollUntil(t, "the first request", func() bool { return r.srv.Len() == 1 })
	if s := a.Status(); s.State != Busy {
		t.Fatalf("state %s during a turn", s.State)
	}
	chC := r.sendAsync("/compact", "")
	chA := r.sendAsync("a", "")
	chB := r.sendAsync("b", "w-2")
	if r.srv.Len() != 1 {
		t.Fatal("a message sent during a turn started a request at once")
	}
	close(release)
	released = true

	if res := awaitTurn(t, ch1); res.Status != TurnCompleted || res.Answer != "first" {
		t.Fatalf("turn 1: %+v", res)
	}
	if res := awaitTurn(t, chC); res.Status != TurnCompleted {
		t.Fatalf("/compact: %+v", res)
	}
	ra, rb := awaitTurn(t, chA), awaitTurn(t, chB)
	if ra.Status != TurnCompleted || ra != rb {
		t.Fatalf("queued messages: %+v and %+v, want the same completed turn", ra, rb)
	}
	rs := r.requests(3)
	if rs[1].Header.Get("X-Cicy-Aux") != "compact" {
		t.Errorf("request 2 is not the compaction right after the turn: aux %q", rs[1].Header.Get("X-Cicy-Aux"))
	}
	follow := rs[2]
	if follow.Header.Get("X-Cicy-Aux") != "" || follow.Header.Get("X-Cicy-Turn-Id") == rs[0].Header.Get("X-Cicy-Turn-Id") {
		t.Errorf("request 3 is not a new turn: %v", follow.Header)
	}
	want := "a\n📮 [w-2] b"
	var found int
	for _, m := range follow.Req.Messages {
		for _, b := range m.Content {
			if strings.Contains(b.Text, "📮") || b.Text == "a" || b.Text == "b" {
				found++
				if b.Text != want {
					t.Errorf("queued text block %q, want %q", b.Text, want)
				}
			}
		}
	}
	if found != 1 {
		t.Errorf("the follow-up turn carries %d blocks with the queued texts, want one", found)
	}
	r.expectIdle()
}

func TestCancelDuringLongTool(t *testing.T) {
	r := newRig(t, replies(shellCall("toolu_long", "sleep 30 & echo $! > sleep.pid; wait"), textReply("after cancel")))
	a := r.start()
	ch := r.sendAsync("run the long thing", "")
	pidFile := filepath.Join(r.ws, "sleep.pid")
	var pid int
	pollUntil(t, "the sleep to start", func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	t0 := time.Now()
	if !a.Cancel() {
		t.Fatal("Cancel reported no running turn")
	}
	if d := time.Since(t0); d > time.Second {
		t.Errorf("Cancel took %v", d)
	}
	res := awaitTurn(t, ch)
	if res.Status != TurnCancelled {
		t.Fatalf("turn result %+v, want cancelled", res)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("the turn ended %v after Cancel", d)
	}
	h := r.history()
	expectMarker(t, h, markerCancelled)
	checkBalanced(t, "current.json", h)
	if trs := toolResults(h[len(h)-2]); len(trs) != 1 || !trs[0].IsError || !strings.Contains(trs[0].Content, "cancel") {
		t.Errorf("the sleep's tool_result: %+v", trs)
	}
	if rep := r.replyFile(); rep.Status != TurnCancelled {
		t.Errorf("reply.json status %q", rep.Status)
	}
	pollUntil(t, fmt.Sprintf("sleep (pid %d) to be gone", pid), func() bool { return !processAlive(pid) })
	r.expectIdle()

	if res := r.send("hello again"); res.Status != TurnCompleted || res.Answer != "after cancel" {
		t.Fatalf("the next message: %+v", res)
	}
	rs := r.requests(2)
	checkBalanced(t, "the request after cancel", rs[1].Req.Messages)
	if lastText(lastMessage(t, rs[1].Req.Messages)) != "hello again" {
		t.Errorf("the request after cancel ends with %+v", lastMessage(t, rs[1].Req.Messages))
	}
}

// processAlive: the process exists and is not a zombie (a container's
// init may not reap orphans).
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] != 'Z' && b[i+2] != 'X'
	}
	return true
}

func TestCancelDuringModelCallKeepsQueue(t *testing.T) {
	r := newRig(t, func(n int, rec *apitest.Recorded) apitest.Reply {
		if n == 0 {
			<-rec.Context.Done() // held until the client gives up
			return textReply("too late")
		}
		return textReply("queued answer")
	})
	a := r.start()
	ch1 := r.sendAsync("first", "")
	pollUntil(t, "the first request", func() bool { return r.srv.Len() == 1 })
	ch2 := r.sendAsync("queued", "")
	if !a.Cancel() {
		t.Fatal("Cancel reported no running turn")
	}
	if res := awaitTurn(t, ch1); res.Status != TurnCancelled {
		t.Fatalf("the cancelled turn: %+v", res)
	}
	if res := awaitTurn(t, ch2); res.Status != TurnCompleted || res.Answer != "queued answer" {
		t.Fatalf("the queued message after cancel: %+v", res)
	}
	r.requests(2)
	h := r.history()
	if len(h) != 4 || h[1].JoinedText() != markerCancelled || h[2].JoinedText() != "queued" {
		t.Errorf("history %+v, want first, cancelled marker, queued, answer", h)
	}
	if a.Cancel() {
		t.Error("Cancel on an idle pane reported a running turn")
	}
}

func TestMemoriesCapped(t *testing.T) {
	r := newRig(t, replies(textReply("ok")))
	var mem strings.Builder
	for i := 0; mem.Len() < 10000; i++ {
		fmt.Fprintf(&mem, "- [fact★3] Fact %03d: the user mentioned thing number %03d.\n", i, i)
	}
	r.writeMemory(mem.String())
	r.start()
	r.send("hi")
	req := r.requests(1)[0].Req
	block := lastText(lastMessage(t, req.Messages))
	inner, ok := strings.CutPrefix(block, "<memories>\n")
	inner, ok2 := strings.CutSuffix(inner, "\n</memories>")
	if !ok || !ok2 {
		t.Fatalf("last block %q is not the memories block", clip.Bytes(block, 100))
	}
	if len(inner) > MemoryCap || len(inner) < MemoryCap-200 {
		t.Errorf("memories block holds %d bytes of MEMORY.md, want at most %d (and close to it)", len(inner), MemoryCap)
	}
	if !strings.HasPrefix(mem.String(), inner+"\n") {
		t.Error("MEMORY.md is not cut at a line boundary")
	}
}

func TestCloseWaitsForRunningTurn(t *testing.T) {
	r := newRig(t, replies(shellCall("toolu_close", "sleep 30 & echo $! > sleep.pid; wait"), textReply("x")))
	// Once Close is called, the clock holds whoever asks for the time (the
	// turn goroutine does before each history write) until the gate opens
	// or 250 ms pass: a Close that waits for its turn still returns, one
	// that does not is caught writing after it returned.
	var closing atomic.Bool
	gate := make(chan struct{})
	env := r.env()
	env.Now = func() time.Time {
		if closing.Load() {
			select {
			case <-gate:
			case <-time.After(250 * time.Millisecond):
			}
		}
		return time.Now()
	}
	a, err := Start(r.cfg, env)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Send("run the long thing", "", false); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(r.ws, "sleep.pid")
	pollUntil(t, "the sleep to start", func() bool {
		b, err := os.ReadFile(pidFile)
		return err == nil && len(bytes.TrimSpace(b)) > 0
	})
	closing.Store(true)
	a.Close()
	dir := HistoryDir(r.ws)
	cur0 := mustRead(t, filepath.Join(dir, "current.json"))
	rep0 := mustRead(t, filepath.Join(dir, "reply.json"))
	close(gate)
	// A bounded watch: the files of a closed pane must not change any more
	// (a pane restarted on the same workspace owns them).
	changed := false
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		cur := mustRead(t, filepath.Join(dir, "current.json"))
		rep := mustRead(t, filepath.Join(dir, "reply.json"))
		if !bytes.Equal(cur, cur0) || !bytes.Equal(rep, rep0) {
			changed = true
			cur0, rep0 = cur, rep
		}
		time.Sleep(10 * time.Millisecond)
	}
	if changed {
		t.Errorf("current.json/reply.json were rewritten after Close returned: Close (agent.go) does not wait for " +
			"the turn goroutine, which goes on to write the tool results and the cancelled marker; a pane " +
			"restarted on the same workspace races with it")
	}
}

// ---------------------------------------------------------------------------
// /compact and /clear.

func TestCompact350(t *testing.T) {
	type seen struct {
		aux, turnID, pane string
		unchanged         bool
		system, prompt    string
	}
	saw := make(chan seen, 4)
	var r *rig
	var before []byte
	r = newRig(t, func(n int, rec *apitest.Recorded) apitest.Reply {
		now, _ := os.ReadFile(filepath.Join(HistoryDir(r.ws), "current.json"))
		s := seen{aux: rec.Header.Get("X-Cicy-Aux"), pane: rec.Header.Get("X-Cicy-Pane"), unchanged: bytes.Equal(now, before)}
		if v, ok := rec.Header["X-Cicy-Turn-Id"]; ok {
			s.turnID = strings.Join(v, ",")
		}
		if len(rec.Req.System) > 0 {
			s.system = rec.Req.System[0].Text
		}
		if len(rec.Req.Messages) > 0 {
			s.prompt = rec.Req.Messages[0].JoinedText()
		}
		saw <- s
		return textReply("SUMMARY-TEXT")
	})
	orig := alternating(350)
	convID := "11111111-2222-4333-8444-555555555555"
	r.writeHistory(convID, orig)
	before = mustRead(t, filepath.Join(HistoryDir(r.ws), "current.json"))
	a := r.start()
	if n := a.MessageCount(); n != 350 {
		t.Fatalf("restored %d messages", n)
	}

	res := r.send("/compact")
	if res.Status != TurnCompleted {
		t.Fatalf("/compact: %+v", res)
	}
	r.requests(1)
	s := <-saw
	if s.aux != "compact" || s.turnID != "" || s.pane != "w-1" {
		t.Errorf("summary call headers: aux %q, turn id %q, pane %q; want compact, none, w-1", s.aux, s.turnID, s.pane)
	}
	if !s.unchanged {
		t.Error("current.json changed during the summary call")
	}
	if s.system != compactPrompt {
		t.Errorf("summary system prompt %q", clip.Bytes(s.system, 100))
	}
	if !strings.Contains(s.prompt, "msg-000") || !strings.Contains(s.prompt, "msg-189") || strings.Contains(s.prompt, "msg-190") {
		t.Errorf("the summary call does not get exactly the 190 oldest messages")
	}

	cur := r.current()
	if cur.ConversationID != convID {
		t.Errorf("conversation id changed to %q", cur.ConversationID)
	}
	h := fromHist(cur.Messages)
	if len(h) != 1+CompactKeep {
		t.Fatalf("current.json has %d messages after /compact, want 1 + %d", len(h), CompactKeep)
	}
	if h[0].Role != wire.RoleUser || h[0].JoinedText() != summaryPrefix+"SUMMARY-TEXT" {
		t.Errorf("summary message %+v", h[0])
	}
	for i, m := range h[1:] {
		o := orig[350-CompactKeep+i]
		if m.Role != o.Role || m.JoinedText() != o.JoinedText() {
			t.Fatalf("kept message %d is %+v, want %+v", i, m, o)
		}
	}
	if n := a.MessageCount(); n != 1+CompactKeep {
		t.Errorf("MessageCount %d", n)
	}
	if recs := r.usage.records(); len(recs) != 1 || recs[0].Aux != "compact" || recs[0].TurnID != "" || recs[0].ConversationID != convID {
		t.Errorf("usage records of /compact: %+v, want one with aux compact", recs)
	}
	if rep, err := os.ReadFile(filepath.Join(HistoryDir(r.ws), "reply.json")); err == nil && containsText(rep, "SUMMARY-TEXT") {
		t.Error("the aux call wrote reply.json")
	}

	arch := archives(t, r.ws)
	if len(arch) != 1 {
		t.Fatalf("archives %v, want one", arch)
	}
	var ac Current
	if _, err := readJSON(arch[0], &ac); err != nil || len(ac.Messages) != 350 {
		t.Errorf("archive %s has %d messages (%v), want 350", arch[0], len(ac.Messages), err)
	}
	r.expectIdle()
}

// archives lists current.<ts>.json files.
func archives(t *testing.T, ws string) []string {
	t.Helper()
	all, err := filepath.Glob(filepath.Join(HistoryDir(ws), "current.*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range all {
		if regexp.MustCompile(`^current\.\d+(-\d+)?\.json$`).MatchString(filepath.Base(p)) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

func TestCompactFailureLeavesHistory(t *testing.T) {
	cases := []struct {
		name     string
		reply    apitest.Reply
		requests int
	}{
		{"500 until attempts run out", apitest.Reply{Status: 500, RawBody: `{"type":"error","error":{"type":"api_error","message":"boom"}}`}, 3},
		{"400", apitest.Reply{Status: 400, RawBody: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}}`}, 1},
		{"empty summary", apitest.Reply{Resp: apitest.TextResponse("   ", wire.Usage{})}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, replies(c.reply))
			r.writeHistory("11111111-2222-4333-8444-555555555555", alternating(350))
			cur := filepath.Join(HistoryDir(r.ws), "current.json")
			before := mustRead(t, cur)
			a := r.start()
			res := r.send("/compact")
			if res.Status != TurnFailed || res.Error == "" {
				t.Fatalf("/compact: %+v, want failed with a reason", res)
			}
			r.requests(c.requests)
			if !bytes.Equal(mustRead(t, cur), before) {
				t.Error("current.json changed after a failed /compact")
			}
			if n := a.MessageCount(); n != 350 {
				t.Errorf("%d messages after a failed /compact, want 350", n)
			}
			r.expectIdle()
		})
	}
}

func TestHardCapWindow(t *testing.T) {
	r := newRig(t, replies(textReply("ok")))
	msgs := alternating(700)
	// Tool pairs around the cut (701 messages with the new one → the
	// window starts at message 200, the first multiple of windowStep that
	// leaves at most HardCap): message 200 answers a call of 199, cut off,
	// so its result becomes the marker.
	msgs[199] = wire.Message{Role: wire.RoleAssistant, Content: []wire.Block{{Type: wire.TypeToolUse, ID: "tu_a", Name: "shell", Input: json.RawMessage(`{"command":"true"}`)}}}
	msgs[200] = wire.Message{Role: wire.RoleUser, Content: []wire.Block{wire.ToolResult("tu_a", "ok", false)}}
	msgs[201] = wire.Message{Role: wire.RoleAssistant, Content: []wire.Block{{Type: wire.TypeToolUse, ID: "tu_b", Name: "shell", Input: json.RawMessage(`{"command":"true"}`)}}}
	msgs[202] = wire.Message{Role: wire.RoleUser, Content: []wire.Block{wire.ToolResult("tu_b", "ok", false)}}
	r.writeHistory("11111111-2222-4333-8444-555555555555", msgs)
	r.start()
	if res := r.send("new question"); res.Status != TurnCompleted {
		t.Fatalf("turn: %+v", res)
	}
	req := r.requests(1)[0].Req
	if n := len(req.Messages); n > HardCap {
		t.Fatalf("the request carries %d messages, more than %d", n, HardCap)
	}
	first := req.Messages[0]
	if first.Role != wire.RoleUser || hasToolResult(first) {
		t.Fatalf("the window starts with %+v, want a user message without tool_result", first)
	}
	if len(first.Content) != 2 || first.Content[1].Text != cutResultsMarker || len(req.Messages) != 701-200 {
		t.Errorf("the window starts with %+v and has %d messages, want the marker and %d", first.Content, len(req.Messages), 701-200)
	}
	if !strings.HasPrefix(first.Content[0].Text, "<role>\n") {
		t.Errorf("the role block is not first in the window")
	}
	if lastText(lastMessage(t, req.Messages)) != "new question" {
		t.Errorf("the window does not end with the new message")
	}
	checkBalanced(t, "the windowed request", req.Messages)
	if n := len(r.current().Messages); n != 702 {
		t.Errorf("current.json has %d messages, want all 702 (the cap is wire-only)", n)
	}
}

func TestClear(t *testing.T) {
	main := replies(textReply("first-answer-q7"), textReply("fresh"))
	turns := 0
	r := newRig(t, func(_ int, rec *apitest.Recorded) apitest.Reply {
		if rec.Req.Aux == "memory" { // /clear flushes the memory buffer first
			return textReply(`{"memories":[]}`)
		}
		turns++
		return main(turns-1, rec)
	})
	// The memory file first: MEMORY.md, newer, is taken as its index.
	mustWrite(t, filepath.Join(r.ws, ".cicy", "memory", "preference_colour.md"), "---\nmem_id: preference_colour\n---\n\nteal\n")
	r.writeMemory(testMemoryMD)
	agentsBefore := mustRead(t, filepath.Join(r.ws, "AGENTS.md"))
	memBefore := dirSnapshot(t, filepath.Join(r.ws, ".cicy", "memory"))
	a := r.start()
	if res := r.send("hi"); res.Status != TurnCompleted {
		t.Fatalf("turn: %+v", res)
	}
	old := a.ConversationID()

	res := r.send("/clear")
	if res.Status != TurnCompleted {
		t.Fatalf("/clear: %+v", res)
	}
	<-a.FlushMemory(true) // the flush /clear started has ended
	if rs := r.requests(2); rs[1].Req.Aux != "memory" {
		t.Errorf("/clear made a model call other than the memory flush: aux %q", rs[1].Req.Aux)
	}
	id := a.ConversationID()
	if id == old || !uuidV4.MatchString(id) {
		t.Errorf("conversation id %q after /clear (was %q), want a new UUIDv4", id, old)
	}
	if n := a.MessageCount(); n != 0 {
		t.Errorf("%d messages after /clear", n)
	}
	cur := r.current()
	if len(cur.Messages) != 0 || cur.ConversationID != id {
		t.Errorf("current.json after /clear: %d messages, conversation %q", len(cur.Messages), cur.ConversationID)
	}
	arch := archives(t, r.ws)
	if len(arch) != 1 {
		t.Fatalf("archives %v, want one", arch)
	}
	var ac Current
	if _, err := readJSON(arch[0], &ac); err != nil || ac.ConversationID != old || len(ac.Messages) != 2 {
		t.Errorf("archive: conversation %q, %d messages (%v)", ac.ConversationID, len(ac.Messages), err)
	}
	if !bytes.Equal(mustRead(t, filepath.Join(r.ws, "AGENTS.md")), agentsBefore) {
		t.Error("/clear changed AGENTS.md")
	}
	if got := dirSnapshot(t, filepath.Join(r.ws, ".cicy", "memory")); got != memBefore {
		t.Errorf("/clear changed .cicy/memory:\n%s\nwas\n%s", got, memBefore)
	}
	r.expectIdle()

	if res := r.send("again"); res.Status != TurnCompleted || res.Answer != "fresh" {
		t.Fatalf("after /clear: %+v", res)
	}
	req := r.requests(3)[2].Req
	if len(req.Messages) != 1 || strings.Contains(string(r.requests(3)[2].Body), "first-answer-q7") {
		t.Errorf("the first request after /clear carries old history: %d messages", len(req.Messages))
	}
	// The memories survive /clear and are still injected.
	if !strings.Contains(lastText(req.Messages[0]), "teal") {
		t.Error("memories not injected after /clear")
	}
}

// dirSnapshot renders the names and contents of the files under dir.
func dirSnapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		fmt.Fprintf(&b, "%s: %q\n", strings.TrimPrefix(p, dir), data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// ---------------------------------------------------------------------------
// Bad input keeps the pane working.

// expectFailedTurn checks a failed turn: the result, the marker, the idle
// pane, and that no raw error text reached the history.
func (r *rig) expectFailedTurn(res TurnResult, mention string) {
	r.t.Helper()
	if res.Status != TurnFailed {
		r.t.Fatalf("turn %+v, want failed", res)
	}
	if !strings.Contains(res.Error, mention) || strings.Contains(res.Error, "\n") {
		r.t.Errorf("error %q: want one line mentioning %q", res.Error, mention)
	}
	h := r.history()
	expectMarker(r.t, h, markerFailed)
	checkBalanced(r.t, "current.json", h)
	if cur := mustRead(r.t, filepath.Join(HistoryDir(r.ws), "current.json")); res.Error != "" && containsText(cur, res.Error) {
		r.t.Errorf("the raw error reached current.json")
	}
	if rep := r.replyFile(); rep.Status != TurnFailed {
		r.t.Errorf("reply.json status %q", rep.Status)
	}
	r.expectIdle()
}

func TestBadInputKeepsPaneWorking(t *testing.T) {
	t.Run("malformed meta.yaml", func(t *testing.T) {
		r := newRig(t, replies(textReply("works again")))
		r.writeTemplate("broken", "Broken.\n", "name: Broken\ntools: [core\n")
		r.cfg.RoleTemplate = "broken"
		r.start()
		r.expectFailedTurn(r.send("hi"), "meta.yaml")
		r.requests(0)
		r.writeTemplate("broken", "Broken.\n", "name: Broken\ntools: [core]\n")
		if res := r.send("hi again"); res.Status != TurnCompleted || res.Answer != "works again" {
			t.Fatalf("after fixing meta.yaml: %+v", res)
		}
		checkBalanced(t, "request", r.requests(1)[0].Req.Messages)
	})
	t.Run("missing template", func(t *testing.T) {
		r := newRig(t, replies(textReply("works again")))
		r.cfg.RoleTemplate = "nosuch"
		r.start()
		r.expectFailedTurn(r.send("hi"), "nosuch")
		r.requests(0)
		r.writeTemplate("nosuch", "Now here.\n", "tools: [core]\n")
		if res := r.send("hi again"); res.Status != TurnCompleted {
			t.Fatalf("after creating the template: %+v", res)
		}
	})
	t.Run("tool input cut off", func(t *testing.T) {
		cut := apitest.ToolResponse("toolu_cut", "shell", json.RawMessage(`{"command":"touch created-by-cut-call; echo hel`), wire.Usage{})
		cut.StopReason = "max_tokens"
		r := newRig(t, replies(apitest.Reply{Resp: cut}, textReply("recovered")))
		r.start()
		if res := r.send("go"); res.Status != TurnCompleted || res.Answer != "recovered" {
			t.Fatalf("turn: %+v", res)
		}
		trs := toolResults(lastMessage(t, r.requests(2)[1].Req.Messages))
		if len(trs) != 1 || trs[0].ToolUseID != "toolu_cut" || !trs[0].IsError || !strings.Contains(trs[0].Content, "cut off") {
			t.Errorf("tool_result for a cut-off input: %+v", trs)
		}
		if _, err := os.Stat(filepath.Join(r.ws, "created-by-cut-call")); err == nil {
			t.Error("a tool call with cut-off input was run")
		}
		checkBalanced(t, "current.json", r.history())
	})
	t.Run("unknown tool", func(t *testing.T) {
		r := newRig(t, replies(apitest.Reply{Resp: apitest.ToolResponse("toolu_u", "frobnicate", map[string]any{"x": 1}, wire.Usage{})}, textReply("ok then")))
		r.start()
		if res := r.send("go"); res.Status != TurnCompleted || res.Answer != "ok then" {
			t.Fatalf("turn: %+v", res)
		}
		trs := toolResults(lastMessage(t, r.requests(2)[1].Req.Messages))
		if len(trs) != 1 || !trs[0].IsError || !strings.Contains(trs[0].Content, "unknown tool frobnicate") {
			t.Errorf("tool_result for an unknown tool: %+v", trs)
		}
	})
	t.Run("5 MB tool output", func(t *testing.T) {
		r := newRig(t, replies(shellCall("toolu_big", "head -c 5000000 /dev/zero | tr '\\0' x"), textReply("big")))
		r.start()
		if res := r.send("go"); res.Status != TurnCompleted {
			t.Fatalf("turn: %+v", res)
		}
		rs := r.requests(2)
		trs := toolResults(lastMessage(t, rs[1].Req.Messages))
		if len(trs) != 1 {
			t.Fatalf("tool results %+v", trs)
		}
		c := trs[0].Content
		if len(c) > 12000+300 || !strings.Contains(c, "truncated") || !strings.Contains(c, "5000000") {
			t.Errorf("5 MB output gave a %d-byte result ending %q", len(c), clip.Bytes(c[max(0, len(c)-120):], 120))
		}
		if n := len(rs[1].Body); n > 64<<10 {
			t.Errorf("the request after a 5 MB output is %d bytes", n)
		}
		if fi, err := os.Stat(filepath.Join(HistoryDir(r.ws), "current.json")); err != nil || fi.Size() > 64<<10 {
			t.Errorf("current.json after a 5 MB output: %v", fi.Size())
		}
	})
	t.Run("non-JSON error body", func(t *testing.T) {
		html := "<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1>" + strings.Repeat("<p>x</p>", 200) + "</body></html>"
		r := newRig(t, func(n int, _ *apitest.Recorded) apitest.Reply {
			if n < 3 {
				return apitest.Reply{Status: 502, RawBody: html}
			}
			return textReply("back")
		})
		r.start()
		res := r.send("hi")
		r.expectFailedTurn(res, "502")
		if len(res.Error) > 400 {
			t.Errorf("the error is %d bytes, want a short snippet", len(res.Error))
		}
		r.requests(3)
		if cur := mustRead(t, filepath.Join(HistoryDir(r.ws), "current.json")); containsText(cur, "Bad Gateway") {
			t.Error("the error body reached current.json")
		}
		if res := r.send("hi again"); res.Status != TurnCompleted || res.Answer != "back" {
			t.Fatalf("after the failure: %+v", res)
		}
		checkBalanced(t, "request", r.requests(4)[3].Req.Messages)
	})
	t.Run("empty body", func(t *testing.T) {
		r := newRig(t, func(n int, _ *apitest.Recorded) apitest.Reply {
			if n < 3 {
				return apitest.Reply{}
			}
			return textReply("back")
		})
		r.start()
		r.expectFailedTurn(r.send("hi"), "empty")
		r.requests(3)
		if res := r.send("hi again"); res.Status != TurnCompleted {
			t.Fatalf("after the failure: %+v", res)
		}
	})
	t.Run("response without content", func(t *testing.T) {
		r := newRig(t, replies(apitest.Reply{Resp: &wire.Response{StopReason: "end_turn"}}, textReply("back")))
		r.start()
		r.expectFailedTurn(r.send("hi"), "empty")
		if res := r.send("hi again"); res.Status != TurnCompleted || res.Answer != "back" {
			t.Fatalf("after the failure: %+v", res)
		}
	})
	t.Run("no provider", func(t *testing.T) {
		r := newRig(t, replies(textReply("x")))
		env := r.env()
		env.NewProvider = func(string) (Provider, error) {
			return nil, errors.New("the anthropic provider needs ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN in the supervisor's environment")
		}
		a, err := Start(r.cfg, env)
		if err != nil {
			t.Fatal(err)
		}
		r.a = a
		t.Cleanup(a.Close)
		// Known before any turn: the pane is under needs-you from its start.
		if why := a.ProviderProblem(); !strings.Contains(why, "ANTHROPIC_API_KEY") {
			t.Fatalf("the provider problem before the first turn: %q", why)
		}
		r.expectFailedTurn(r.send("hi"), "ANTHROPIC_API_KEY")
		r.requests(0)
	})
	t.Run("unauthorized", func(t *testing.T) {
		r := newRig(t, replies(apitest.Reply{Status: http.StatusUnauthorized, RawBody: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`}))
		r.start()
		res := r.send("hi")
		r.expectFailedTurn(res, "401")
		if strings.Contains(res.Error, "test-key") {
			t.Errorf("the error %q carries the key", res.Error)
		}
		r.requests(1)
	})
}

// ---------------------------------------------------------------------------
// Restart.

func TestRestartInterruptedTurn(t *testing.T) {
	r := newRig(t, replies(textReply("continuing")))
	convID := "11111111-2222-4333-8444-555555555555"
	r.writeHistory(convID, []wire.Message{
		textMsg(wire.RoleUser, "do the thing"),
		{Role: wire.RoleAssistant, Content: []wire.Block{
			wire.Text("on it"),
			{Type: wire.TypeToolUse, ID: "toolu_r", Name: "shell", Input: json.RawMessage(`{"command":"echo x"}`)},
		}},
	})
	if err := writeJSONAtomic(filepath.Join(HistoryDir(r.ws), "reply.json"), Reply{
		TurnID: "t-old", ConversationID: convID, Status: TurnWorking,
		StartedAt: time.Unix(1700000000, 0), UpdatedAt: time.Unix(1700000000, 0), ToolCalls: []ToolCall{},
	}); err != nil {
		t.Fatal(err)
	}
	// A reply.json of an older version (no calls_recorded): the call may
	// have run, so it is not run again; the turn goes on.
	a := r.start()
	pollUntil(t, "the resumed turn ends", func() bool { return a.Status().State == Idle })
	req := r.requests(1)[0].Req
	if len(req.Messages) != 3 {
		t.Fatalf("the resumed turn's request has %d messages, want 3", len(req.Messages))
	}
	if trs := toolResults(req.Messages[2]); len(trs) != 1 || trs[0].ToolUseID != "toolu_r" || !trs[0].IsError || trs[0].Content != InterruptedByRestart {
		t.Errorf("the request's last message: %+v, want the call's result saying a restart interrupted it", req.Messages[2])
	}
	h := r.history()
	if len(h) != 4 || lastText(h[3]) != "continuing" {
		t.Fatalf("history after the resumed turn has %d messages: %+v", len(h), h)
	}
	checkBalanced(t, "current.json", h)
	if rep := r.replyFile(); rep.Status != TurnCompleted || rep.TurnID != "t-old" || rep.Answer != "continuing" {
		t.Errorf("reply.json after the resumed turn: %+v", rep)
	}
	if a.ConversationID() != convID {
		t.Errorf("conversation id %q after restart", a.ConversationID())
	}
}

func TestPureChatTemplateHasNoTools(t *testing.T) {
	r := newRig(t, replies(textReply("chatting")))
	r.writeTemplate("chat", "Just chat.\n", "name: Chat\ntools: []\nmax_tool_rounds: 1\n")
	r.cfg.RoleTemplate = "chat"
	r.start()
	if res := r.send("hi"); res.Status != TurnCompleted || res.Answer != "chatting" {
		t.Fatalf("turn: %+v", res)
	}
	rec := r.requests(1)[0]
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(rec.Body, &raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw["tools"]; ok {
		t.Errorf("a template without tools sends a tools field: %s", raw["tools"])
	}
	if _, ok := raw["tool_choice"]; ok {
		t.Errorf("tool_choice %s without tools", raw["tool_choice"])
	}
	if n := bytes.Count(rec.Body, []byte(`"cache_control"`)); n != 2 {
		t.Errorf("%d cache_control, want 2 (system, history)", n)
	}
	if len(rec.Req.System) != 1 || rec.Req.System[0].Text != "Just chat.\n" {
		t.Errorf("system %+v", rec.Req.System)
	}
}

func TestRestoreCorruptHistory(t *testing.T) {
	r := newRig(t, replies(textReply("fresh start")))
	mustWrite(t, filepath.Join(HistoryDir(r.ws), "current.json"), "{not json")
	a := r.start()
	if s := a.Status(); s.State != Idle || !strings.Contains(s.Reason, "unreadable") {
		t.Errorf("status %+v", s)
	}
	aside, _ := filepath.Glob(filepath.Join(HistoryDir(r.ws), "current.corrupt-*.json"))
	if len(aside) != 1 || string(mustRead(t, aside[0])) != "{not json" {
		t.Errorf("the corrupt file was not kept aside: %v", aside)
	}
	if res := r.send("hi"); res.Status != TurnCompleted {
		t.Fatalf("turn: %+v", res)
	}
	if !uuidV4.MatchString(r.current().ConversationID) {
		t.Errorf("conversation id %q", r.current().ConversationID)
	}
}

func TestRestoreHistoryWithoutConversationID(t *testing.T) {
	// A current.json with messages but no conversation_id (written by
	// hand or by an older version) must not be wiped: the conversation
	// gets a new id and keeps its messages (or is at least kept aside).
	r := newRig(t, replies(textReply("ok")))
	if err := writeJSONAtomic(filepath.Join(HistoryDir(r.ws), "current.json"), map[string]any{
		"agent_id": "w-1",
		"messages": []map[string]any{
			{"id": 1, "role": "user", "content": []wire.Block{wire.Text("remember the blue door")}},
			{"id": 2, "role": "assistant", "content": []wire.Block{wire.Text("noted")}},
		},
	}); err != nil {
		t.Fatal(err)
	}
	a := r.start()
	kept := a.MessageCount()
	aside, _ := filepath.Glob(filepath.Join(HistoryDir(r.ws), "current.*.json"))
	if kept != 2 && len(aside) == 0 {
		t.Errorf("restore (agent.go) wiped a current.json that has no conversation_id: %d messages restored, "+
			"nothing kept aside; it should mint a new conversation id and keep the messages", kept)
	}
	if id := a.ConversationID(); !uuidV4.MatchString(id) {
		t.Errorf("conversation id %q", id)
	}
}
