package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lineTransport is MCP's stdio transport: one JSON-RPC message per line.
// Unlike the SDK's own, which ends the session at the first line that is
// not JSON-RPC, it answers such a line with a parse error (-32700, no id,
// as JSON-RPC says) and reads on: one garbled line from a client does not
// take a master's team tools away for the rest of its session.
type lineTransport struct {
	in  io.Reader
	out io.Writer
}

// maxMCPLine bounds one message (a tool call's input is a task's text).
const maxMCPLine = 16 << 20

func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{out: t.out, lines: make(chan lineOrErr), closed: make(chan struct{})}
	go c.readLines(t.in)
	return c, nil
}

// parseErrorReply answers a line that is not JSON-RPC: no id can be
// known, so it is null.
type parseErrorReply struct {
	JSONRPC string        `json:"jsonrpc"`
	ID      *int          `json:"id"`
	Error   jsonrpc.Error `json:"error"`
}

type lineOrErr struct {
	line []byte
	err  error
}

// lineConn is a session on a lineTransport. Its reader goroutine hands
// lines to Read and stops at the end of the input or once the connection
// is closed (a read of stdin cannot be interrupted: it stops at the next
// line or the end of the input).
type lineConn struct {
	mu     sync.Mutex // serializes writes
	out    io.Writer
	lines  chan lineOrErr
	closed chan struct{}
	once   sync.Once
}

func (c *lineConn) readLines(in io.Reader) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), maxMCPLine)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		select {
		case c.lines <- lineOrErr{line: bytes.Clone(line)}:
		case <-c.closed:
			return
		}
	}
	err := sc.Err()
	if err == nil {
		err = io.EOF
	}
	select {
	case c.lines <- lineOrErr{err: err}:
	case <-c.closed:
	}
}

// Read returns the next message; a line that is not one is answered
// with a parse error and skipped.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		var l lineOrErr
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case l = <-c.lines:
		}
		if l.err != nil {
			return nil, l.err
		}
		msg, err := jsonrpc.DecodeMessage(l.line)
		if err == nil {
			return msg, nil
		}
		reply, merr := json.Marshal(parseErrorReply{JSONRPC: "2.0", Error: jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "parse error: " + err.Error()}})
		if merr != nil {
			return nil, fmt.Errorf("encode a parse error: %w", merr)
		}
		if err := c.writeLine(reply); err != nil {
			return nil, err
		}
	}
}

func (c *lineConn) Write(_ context.Context, msg jsonrpc.Message) error {
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encode an MCP message: %w", err)
	}
	return c.writeLine(b)
}

func (c *lineConn) writeLine(b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.out.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write an MCP message: %w", err)
	}
	return nil
}

func (c *lineConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (c *lineConn) SessionID() string { return "" }
