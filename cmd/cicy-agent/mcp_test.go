package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// mcpSession is `cicy-agent mcp` run as a CLI agent runs it, spoken to in
// raw JSON-RPC lines.
type mcpSession struct {
	t    *testing.T
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	next int
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func startMCP(t *testing.T, env []string) *mcpSession {
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
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &mcpSession{t: t, cmd: cmd, in: in, out: bufio.NewScanner(out)}
	s.out.Buffer(nil, 16<<20)
	t.Cleanup(func() { s.in.Close(); _ = s.cmd.Wait() })
	return s
}

// call sends a request and returns its result or error; every line the
// server writes must be JSON-RPC.
func (s *mcpSession) call(method string, params any) (json.RawMessage, *rpcError) {
	s.t.Helper()
	s.next++
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": s.next, "method": method, "params": params})
	if _, err := s.in.Write(append(req, '\n')); err != nil {
		s.t.Fatalf("%s: %v", method, err)
	}
	for s.out.Scan() {
		var msg struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      *int            `json:"id"`
			Result  json.RawMessage `json:"result"`
			Error   *rpcError       `json:"error"`
		}
		if err := json.Unmarshal(s.out.Bytes(), &msg); err != nil || msg.JSONRPC != "2.0" {
			s.t.Fatalf("the server wrote a line that is not JSON-RPC: %q", s.out.Text())
		}
		if msg.ID != nil && *msg.ID == s.next {
			return msg.Result, msg.Error
		}
	}
	s.t.Fatalf("%s: the server's stdout ended: %v", method, s.out.Err())
	return nil, nil
}

func (s *mcpSession) notify(method string) {
	s.t.Helper()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method})
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		s.t.Fatal(err)
	}
}

func (s *mcpSession) initialize(version string) string {
	s.t.Helper()
	res, rerr := s.call("initialize", map[string]any{"protocolVersion": version, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "test", "version": "1"}})
	if rerr != nil {
		s.t.Fatalf("initialize %s: %+v", version, rerr)
	}
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(res, &r)
	s.notify("notifications/initialized")
	return r.ProtocolVersion
}

// toolText calls a tool and returns its text and isError.
func (s *mcpSession) toolText(name, args string) (string, bool, *rpcError) {
	s.t.Helper()
	res, rerr := s.call("tools/call", map[string]any{"name": name, "arguments": json.RawMessage(args)})
	if rerr != nil {
		return "", false, rerr
	}
	var r struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil || len(r.Content) != 1 {
		s.t.Fatalf("tools/call %s: %s", name, res)
	}
	return r.Content[0].Text, r.IsError, nil
}

// TestMCPServer: cicy-agent mcp, started as a CLI master's agent starts
// it, answers initialize in each protocol version the pinned CLIs ask
// for, lists the four team tools with their schemas, and runs them as the
// pane: a dispatch to a shell worker and a wait that returns it done; a
// refused dispatch is a tool error; an unknown tool and input that is not
// the tool's are protocol errors, and the server answers on after them.
func TestMCPServer(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	env := append(os.Environ(), "CICY_HOME="+home, "HOME="+t.TempDir())
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(binDir, "cicy-agent"), args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("cicy-agent %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	t.Cleanup(func() { _ = exec.Command(filepath.Join(binDir, "cicy-agent"), "--home", home, "shutdown").Run() })
	lead := run("create", "lead", "--type", "shell", "--role", "master", "--", "bash", "--norc", "--noprofile")
	box := run("create", "box", "--type", "shell", "--master", lead, "--", "bash", "--norc", "--noprofile")
	asLead := append(env, "CICY_PANE_ID="+lead)

	for _, v := range []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"} {
		if got := startMCP(t, asLead).initialize(v); got != v {
			t.Errorf("initialize asking for %s: the server answered %s", v, got)
		}
	}

	s := startMCP(t, asLead)
	s.initialize("2025-06-18")
	res, rerr := s.call("tools/list", map[string]any{})
	if rerr != nil {
		t.Fatal(rerr)
	}
	var list struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(res, &list)
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
		if !strings.Contains(string(tl.InputSchema), `"type":"object"`) {
			t.Errorf("tool %s's schema: %s", tl.Name, tl.InputSchema)
		}
	}
	if strings.Join(names, ",") != "dispatch,task_status,wait,workers" {
		t.Errorf("tools: %v", names)
	}

	text, isErr, _ := s.toolText("dispatch", `{"worker":"box","task":"echo mcp-marker"}`)
	if isErr || !strings.Contains(text, "task 1 queued for "+box) {
		t.Fatalf("dispatch: %q %v", text, isErr)
	}
	text, isErr, _ = s.toolText("wait", `{"task_ids":[1],"timeout":60}`)
	if isErr || !strings.Contains(text, "task 1 → "+box+": done: ") || !strings.Contains(text, "mcp-marker") {
		t.Fatalf("wait: %q %v", text, isErr)
	}
	if text, isErr, _ = s.toolText("workers", `{}`); isErr || !strings.Contains(text, box) {
		t.Errorf("workers: %q %v", text, isErr)
	}
	if text, isErr, _ = s.toolText("dispatch", `{"worker":"`+lead+`","task":"x"}`); !isErr || !strings.Contains(text, "is a master") {
		t.Errorf("a dispatch to a master: %q %v; want a tool error", text, isErr)
	}
	if _, _, rerr := s.toolText("fly", `{}`); rerr == nil {
		t.Error("an unknown tool was not a protocol error")
	}
	if _, _, rerr := s.toolText("dispatch", `{"worker":1}`); rerr == nil || rerr.Code != -32602 {
		t.Errorf("bad input: %+v; want invalid params (-32602)", rerr)
	}
	if text, _, _ := s.toolText("task_status", `{}`); !strings.Contains(text, "task 1 → "+box+": done") {
		t.Errorf("task_status after the errors: %q", text)
	}
}
