package teammcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transport is MCP's stdio transport: one JSON-RPC message per line.
// Unlike the SDK's own, which ends the session at the first line that is
// not JSON-RPC, it answers such a line with a parse error (-32700, no id,
// as JSON-RPC says) and reads on: one garbled line from a client does not
// take a master's team tools away for the rest of its session. A line
// longer than MaxLine is such a line: read to its end without being
// kept, and answered so.
type Transport struct {
	In  io.Reader
	Out io.Writer
}

// MaxLine bounds one message (a tool call's input is a task's text).
const MaxLine = 16 << 20

func (t *Transport) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{out: t.Out, lines: make(chan lineOrErr), closed: make(chan struct{})}
	go c.readLines(t.In)
	return c, nil
}

// parseErrorReply answers a line that is not JSON-RPC: no id can be
// known, so it is null.
type parseErrorReply struct {
	JSONRPC string        `json:"jsonrpc"`
	ID      *int          `json:"id"`
	Error   jsonrpc.Error `json:"error"`
}

// lineOrErr is what the reader hands Read: a line, a line it could not
// take (bad says why), or the end of the input.
type lineOrErr struct {
	line []byte
	bad  string
	err  error
}

// lineConn is a session on a Transport. Its reader goroutine hands
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
	err := eachLine(in, MaxLine, func(l lineOrErr) bool {
		select {
		case c.lines <- l:
			return true
		case <-c.closed:
			return false
		}
	})
	if err == nil {
		err = io.EOF
	}
	select {
	case c.lines <- lineOrErr{err: err}:
	case <-c.closed:
	}
}

// eachLine hands each non-blank line of in, trimmed, to take, until take
// says stop or the input ends (nil) or fails. A line longer than limit
// is not kept: it is read to its end and handed over as bad. A last line
// without a newline counts.
func eachLine(in io.Reader, limit int, take func(lineOrErr) bool) error {
	br := bufio.NewReaderSize(in, 64<<10)
	var line []byte
	tooLong := false
	for {
		frag, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(bytes.TrimRight(frag, "\r\n")) > limit {
				tooLong, line = true, nil
			} else {
				line = append(line, frag...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		var l lineOrErr
		if tooLong {
			l.bad = "the line is longer than " + sizeText(limit) + ", the most a message may be"
		} else if t := bytes.TrimSpace(line); len(t) > 0 {
			l.line = t
		}
		if (l.bad != "" || l.line != nil) && !take(l) {
			return nil
		}
		line, tooLong = nil, false
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		}
	}
}

// sizeText is n bytes for a person: in MiB when whole.
func sizeText(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
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
		why := l.bad
		if why == "" {
			msg, err := jsonrpc.DecodeMessage(l.line)
			if err == nil {
				return msg, nil
			}
			why = err.Error()
		}
		reply, merr := json.Marshal(parseErrorReply{JSONRPC: "2.0", Error: jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "parse error: " + why}})
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
