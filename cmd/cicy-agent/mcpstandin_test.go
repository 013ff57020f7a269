package main

// A test fixture: a stand-in for the team tools' MCP server, so the tests
// of how a CLI master's config wires an MCP server in do not depend on the
// server itself. The test binary serves it when started as
//
//	cicy-agent.test mcp-standin LOGFILE
//
// (see TestMain), which a test puts in CICY_MCP_COMMAND. It speaks the
// Model Context Protocol over stdio (newline-delimited JSON-RPC):
// initialize, ping, tools/list and tools/call, with one tool, echo; any
// other request is "method not found". It appends every message it gets
// to LOGFILE as one JSON line with the CICY_HOME and CICY_PANE_ID it was
// started with. An echo call answers its text and whether the server
// reached the supervisor of CICY_HOME, as the real server must.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/supervisor"
)

// standinArg is the first argument that makes the test binary the stand-in.
const standinArg = "mcp-standin"

// standinRecord is one line of the stand-in's log.
type standinRecord struct {
	Home   string          `json:"home"`
	Pane   string          `json:"pane"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  any             `json:"result,omitempty"`
	Error   any             `json:"error,omitempty"`
}

// serveMCPStandin serves the stand-in on stdin and stdout until stdin
// ends; it returns the exit status.
func serveMCPStandin(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: mcp-standin LOGFILE")
		return 2
	}
	log, err := os.OpenFile(args[0], os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer log.Close()
	if err := standinLoop(os.Stdin, os.Stdout, log); err != nil {
		fmt.Fprintln(os.Stderr, "mcp-standin:", err)
		return 1
	}
	return 0
}

func standinLoop(in io.Reader, out, log io.Writer) error {
	home, pane := os.Getenv("CICY_HOME"), os.Getenv("CICY_PANE_ID")
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	enc := json.NewEncoder(out)
	for sc.Scan() {
		var m rpcMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			if err := enc.Encode(rpcMessage{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: map[string]any{"code": -32700, "message": "parse error"}}); err != nil {
				return err
			}
			continue
		}
		rec, err := json.Marshal(standinRecord{Home: home, Pane: pane, Method: m.Method, Params: m.Params})
		if err != nil {
			return err
		}
		if _, err := log.Write(append(rec, '\n')); err != nil {
			return err
		}
		if len(m.ID) == 0 || m.Method == "" {
			continue // a notification, or an answer to nothing we asked
		}
		reply := rpcMessage{JSONRPC: "2.0", ID: m.ID}
		reply.Result, reply.Error = standinAnswer(m, home, pane)
		if err := enc.Encode(reply); err != nil {
			return err
		}
	}
	return sc.Err()
}

// standinAnswer is the result or the error of one request.
func standinAnswer(m rpcMessage, home, pane string) (result, rpcErr any) {
	switch m.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(m.Params, &p)
		return map[string]any{
			"protocolVersion": p.ProtocolVersion, // whatever the client asks for
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "cicy-test-standin", "version": "0"},
		}, nil
	case "ping":
		return map[string]any{}, nil
	case "tools/list":
		return map[string]any{"tools": []any{map[string]any{
			"name": "echo", "description": "Test stand-in: answers its text.",
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []string{"text"}},
		}}}, nil
	case "tools/call":
		var p struct {
			Name      string `json:"name"`
			Arguments struct {
				Text string `json:"text"`
			} `json:"arguments"`
		}
		_ = json.Unmarshal(m.Params, &p)
		if p.Name != "echo" {
			return map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": "no tool " + p.Name}}}, nil
		}
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": "standin echo: " + p.Arguments.Text + " (" + standinReach(home, pane) + ")"}}}, nil
	}
	return nil, map[string]any{"code": -32601, "message": "method not found: " + m.Method}
}

// standinReach says whether the supervisor of home answers the server.
func standinReach(home, pane string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := api.NewClient(supervisor.Home{Root: home}).Health(ctx); err != nil {
		return "supervisor not reached: " + err.Error()
	}
	return "supervisor reached by " + pane
}
