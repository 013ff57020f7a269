package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/cicy-ai/cicy-agent/supervisor"
)

// mcpRules: a 🔔 gets "ok", a task "done <id>".
const mcpRules = `rules:
  - match: {aux: '*'}
    reply: {text: ok}
  - match: {last_user: '🔔'}
    reply: {text: ok}
  - match: {last_user: 'task (\d+): '}
    reply: {text: 'done {{1}}'}
`

// mcpTeam starts a supervisor with two masters, boss (w-1) and other
// (w-2), a shell worker sh (w-3) of boss and a cicy worker ow (w-4) of
// other, and returns the environment of commands run for it (no
// CICY_PANE_ID).
func mcpTeam(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	rules := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rules, []byte(mcpRules), 0o644); err != nil {
		t.Fatal(err)
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "CICY_") })
	env = append(env, "CICY_HOME="+home, "HOME="+dir, "CICY_SCRIPT="+rules, "CICY_PROVIDER=script")
	t.Cleanup(func() { stopHome(home, env) })
	for i, args := range [][]string{
		{"create", "boss", "--role", "master"},
		{"create", "other", "--role", "master"},
		{"create", "sh", "--type", "shell", "--backend", "pty", "--master", "w-1", "--", "bash", "--norc", "--noprofile"},
		{"create", "ow", "--master", "w-2"},
	} {
		if id := strings.TrimSpace(runCicy(t, env, args...)); id != "w-"+string(rune('1'+i)) {
			t.Fatalf("%v made %q", args, id)
		}
	}
	waitPaneState(t, env, "w-3", "idle", 30*time.Second)
	return env
}

// mcpClient starts `cicy-agent mcp` for pane (none: "") with env and
// returns an MCP client to it, not yet initialized; its stderr goes to
// stderr if given.
func mcpClient(t *testing.T, env []string, pane string, stderr io.Writer) *mcpclient.Client {
	t.Helper()
	if pane != "" {
		env = append(slices.Clip(env), "CICY_PANE_ID="+pane)
	}
	spawn := func(ctx context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
		cmd := exec.CommandContext(ctx, command, args...)
		cmd.Env = env
		return cmd, nil
	}
	opts := []transport.StdioOption{transport.WithCommandFunc(spawn)}
	if stderr != nil {
		opts = append(opts, transport.WithCommandStderrWriter(stderr))
	}
	c, err := mcpclient.NewStdioMCPClientWithOptions(filepath.Join(binDir, "cicy-agent"), nil, []string{"mcp"}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func mcpInit(t *testing.T, c *mcpclient.Client, version string) *mcp.InitializeResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = version
	req.Params.ClientInfo = mcp.Implementation{Name: "cicy-test", Version: "1"}
	res, err := c.Initialize(ctx, req)
	if err != nil {
		t.Fatalf("initialize %s: %v", version, err)
	}
	return res
}

// call calls a tool; its result's text, whether it is an error, and a
// protocol error.
func call(t *testing.T, c *mcpclient.Client, tool string, args any) (string, bool, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return "", false, err
	}
	var text strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	return text.String(), res.IsError, nil
}

func mustCall(t *testing.T, c *mcpclient.Client, tool string, args any) (string, bool) {
	t.Helper()
	text, isErr, err := call(t, c, tool, args)
	if err != nil {
		t.Fatalf("%s %v: %v", tool, args, err)
	}
	return text, isErr
}

// TestMCPServer drives `cicy-agent mcp` with an MCP client as a CLI
// master's agent would: the protocol versions the pinned CLIs ask for,
// the four tools and their schemas, a dispatch to a shell worker and a
// wait that returns it done, refusals as tool errors, and an unknown tool
// or bad input as protocol errors after which it still answers.
func TestMCPServer(t *testing.T) {
	t.Parallel()
	env := mcpTeam(t)

	// Claude Code asks for 2026-07-28 (server/discover) and falls back to
	// 2025-11-25, opencode asks for 2025-11-25, Codex for 2025-06-18;
	// older clients for 2025-03-26 or 2024-11-05. Each gets its version
	// and its tool calls answered.
	for _, v := range []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"} {
		c := mcpClient(t, env, "w-1", nil)
		if got := mcpInit(t, c, v).ProtocolVersion; got != v {
			t.Errorf("asked for %s, negotiated %s", v, got)
		}
		if text, isErr := mustCall(t, c, "workers", nil); isErr || !strings.HasPrefix(text, `w-3 "sh" shell `) {
			t.Errorf("workers over %s: %q (error %v)", v, text, isErr)
		}
		if err := c.Close(); err != nil {
			t.Errorf("close after %s: %v", v, err)
		}
	}

	var stderr strings.Builder
	c := mcpClient(t, env, "w-1", &stderr)
	mcpInit(t, c, "2025-06-18")
	tools, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if slices.Sort(names); !slices.Equal(names, []string{"diff", "dispatch", "merge", "task_status", "wait", "workers"}) {
		t.Errorf("tools/list: %v", names)
	}

	text, isErr := mustCall(t, c, "dispatch", map[string]any{"worker": "sh", "task": "echo mcp-$((6*7))"})
	m := regexp.MustCompile(`^task (\d+) queued for w-3 \(sh\); its result will come back to you as a 🔔 message$`).FindStringSubmatch(text)
	if isErr || m == nil {
		t.Fatalf("dispatch: %q (error %v)", text, isErr)
	}
	if text, _ := mustCall(t, c, "workers", nil); !strings.HasPrefix(text, `w-3 "sh" shell `) || strings.Contains(text, "w-4") {
		t.Errorf("workers: %q", text)
	}
	text, isErr = mustCall(t, c, "wait", map[string]any{"task_ids": []int{atoi(m[1])}, "timeout": 60})
	if isErr || !regexp.MustCompile(`^task `+m[1]+` → w-3: done: .*mcp-42`).MatchString(text) {
		t.Fatalf("wait: %q (error %v)", text, isErr)
	}
	if text, isErr := mustCall(t, c, "task_status", map[string]any{"task_id": atoi(m[1])}); isErr || !strings.HasPrefix(text, "task "+m[1]+" → w-3: done: ") {
		t.Errorf("task_status: %q (error %v)", text, isErr)
	}

	// Refusals are tool errors carrying the cicy master's sentence.
	for _, tc := range []struct {
		tool string
		args any
		want string
	}{
		{"dispatch", map[string]any{"worker": "other", "task": "x"}, "error: w-2 is a master; tasks go to workers"},
		{"dispatch", map[string]any{"worker": "ow", "task": "x"}, "error: w-4 reports to w-2, not to you (w-1)"},
		{"wait", map[string]any{"task_ids": []int{99}}, "error: you dispatched no task 99"},
	} {
		if text, isErr := mustCall(t, c, tc.tool, tc.args); !isErr || !strings.HasPrefix(text, tc.want) {
			t.Errorf("%s %v: %q (error %v), want a tool error %q", tc.tool, tc.args, text, isErr, tc.want)
		}
	}

	// An unknown tool and bad input are protocol errors; the server still
	// answers afterwards.
	for _, tc := range []struct {
		tool string
		args any
	}{
		{"nope", map[string]any{}},
		{"dispatch", map[string]any{"worker": 5, "task": "x"}},
		{"dispatch", map[string]any{"task": "x"}},
		{"wait", map[string]any{"task_ids": "1"}},
		{"wait", map[string]any{"task_ids": []int{}}},
		{"task_status", map[string]any{"task_id": 1.5}},
		{"workers", []int{1}},
	} {
		if _, _, err := call(t, c, tc.tool, tc.args); !errors.Is(err, mcp.ErrInvalidParams) {
			t.Errorf("%s %v: %v, want an invalid-params error", tc.tool, tc.args, err)
		}
	}
	if text, isErr := mustCall(t, c, "workers", map[string]any{}); isErr || !strings.HasPrefix(text, `w-3 "sh"`) {
		t.Errorf("workers after the errors: %q (error %v)", text, isErr)
	}

	// A pane that is not a master is refused, as a tool error.
	w := mcpClient(t, env, "w-3", nil)
	mcpInit(t, w, "2025-11-25")
	if text, isErr := mustCall(t, w, "workers", nil); !isErr || !strings.Contains(text, `w-3 is not a master (role "worker")`) {
		t.Errorf("workers of a worker: %q (error %v)", text, isErr)
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr: %s", stderr.String())
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// rawMCP is `cicy-agent mcp` spoken to line by line.
type rawMCP struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
}

func startRawMCP(t *testing.T, env []string) *rawMCP {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "cicy-agent"), "mcp")
	cmd.Env = env
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &rawMCP{t: t, cmd: cmd, in: in, lines: make(chan string, 16)}
	go func() {
		defer close(r.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = in.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return r
}

func (r *rawMCP) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		r.t.Fatal(err)
	}
}

// recv is the next line on stdout, decoded; it must be JSON.
func (r *rawMCP) recv() map[string]any {
	r.t.Helper()
	select {
	case line, ok := <-r.lines:
		if !ok {
			r.t.Fatal("stdout closed")
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			r.t.Fatalf("stdout line %q is not JSON: %v", line, err)
		}
		return m
	case <-time.After(30 * time.Second):
		r.t.Fatal("no answer within 30 s")
	}
	return nil
}

// TestMCPServerRaw: lines that are not JSON-RPC get an error and the
// server goes on; Claude Code's server/discover probe finds 2026-07-28;
// a call with no supervisor running is a tool error saying so; the
// server stops at the end of its input; and without a pane it refuses to
// start, with nothing on stdout.
func TestMCPServerRaw(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "home")
	env := append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "CICY_") }), "CICY_HOME="+home, "CICY_PANE_ID=w-1")
	// Claude Code's probe: a session of its own (a client that finds
	// 2026-07-28 goes on without initialize).
	probe := startRawMCP(t, env)
	probe.send(`{"jsonrpc":"2.0","id":"probe","method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"claude-code","version":"2"},"io.modelcontextprotocol/clientCapabilities":{}}}}`)
	if m := probe.recv(); m["id"] != "probe" || !strings.Contains(jsonText(m["result"]), `"2026-07-28"`) {
		t.Fatalf("server/discover: %v", m)
	}
	r := startRawMCP(t, env)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := r.recv(); jsonText(m["result"]) == "" || m["result"].(map[string]any)["protocolVersion"] != "2025-11-25" {
		t.Fatalf("initialize: %v", m)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r.send(`{"jsonrpc":"2.0","id":"list","method":"tools/list"}`)
	var list struct {
		Result struct {
			Tools []listedTool `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(jsonText(r.recv())), &list); err != nil {
		t.Fatal(err)
	}
	defs := supervisor.TeamToolDefs()
	if len(list.Result.Tools) != len(defs) {
		t.Fatalf("tools/list: %+v, want %d tools", list, len(defs))
	}
	for _, d := range defs {
		i := slices.IndexFunc(list.Result.Tools, func(tl listedTool) bool { return tl.Name == d.Name })
		if i < 0 {
			t.Errorf("tools/list has no %s", d.Name)
			continue
		}
		var got, want any
		_ = json.Unmarshal(list.Result.Tools[i].InputSchema, &got)
		_ = json.Unmarshal(d.InputSchema, &want)
		if list.Result.Tools[i].Description != d.Description || !reflect.DeepEqual(got, want) {
			t.Errorf("tools/list: %s %q %s, want %q %s", d.Name, list.Result.Tools[i].Description, list.Result.Tools[i].InputSchema, d.Description, d.InputSchema)
		}
	}
	r.send(`this is not JSON`)
	if m := r.recv(); jsonText(m["error"]) == "" || !strings.Contains(jsonText(m["error"]), "-32700") {
		t.Fatalf("a line that is not JSON: %v", m)
	}
	r.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"workers"}}`)
	m := r.recv()
	if m["id"] != float64(2) || !strings.Contains(jsonText(m["result"]), `"isError":true`) || !strings.Contains(jsonText(m["result"]), "no supervisor is running for "+home) {
		t.Fatalf("workers with no supervisor: %v", m)
	}
	r.send(`{"jsonrpc":"2.0","id":3,"method":"no/such/method"}`)
	if m := r.recv(); m["id"] != float64(3) || !strings.Contains(jsonText(m["error"]), "-32601") {
		t.Fatalf("unknown method: %v", m)
	}
	if _, err := os.Stat(home); err == nil {
		t.Errorf("%s was created: the server must not start a supervisor", home)
	}
	_ = r.in.Close()
	exited := make(chan error, 1)
	go func() { exited <- r.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("exit at EOF: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("still running 30 s after its input ended")
	}

	cmd := exec.Command(filepath.Join(binDir, "cicy-agent"), "mcp")
	cmd.Env = env[:len(env)-1]
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "no pane: run inside a cicy-agent master pane (CICY_PANE_ID) or pass --pane") {
		t.Errorf("without a pane: %v, stdout %q, stderr %q", err, stdout.String(), stderr.String())
	}
}

// TestMCPServerLongLine: a line longer than 16 MiB (here a dispatch
// whose task is 17 MiB) is answered with a parse error, id null, like
// any other line that is not a message, and the server reads on (it used
// to exit 1).
func TestMCPServerLongLine(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "home")
	env := append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "CICY_") }), "CICY_HOME="+home, "CICY_PANE_ID=w-1")
	r := startRawMCP(t, env)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := r.recv(); jsonText(m["result"]) == "" {
		t.Fatalf("initialize: %v", m)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	big := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"dispatch","arguments":{"worker":"w-2","task":"` +
		strings.Repeat("x", 17<<20) + `"}}}`
	r.send(big)
	m := r.recv()
	if id, ok := m["id"]; !ok || id != nil || !strings.Contains(jsonText(m["error"]), "-32700") || !strings.Contains(jsonText(m["error"]), "longer than 16 MiB") {
		t.Fatalf("a line of 17 MiB: %v", m)
	}
	r.send(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if m := r.recv(); m["id"] != float64(3) || !strings.Contains(jsonText(m["result"]), `"dispatch"`) {
		t.Fatalf("after the long line: %v", m)
	}
}

// listedTool is a tool as tools/list puts it on the wire.
type listedTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

func jsonText(v any) string {
	if v == nil {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}
