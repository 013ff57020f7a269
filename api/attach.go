package api

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
)

// The attach stream. After an HTTP upgrade the server sends the pane's
// output as raw bytes (first a repaint of the current screen) and the
// client sends frames: one type byte, a big-endian uint16 length, the
// payload.
const (
	FrameInput    = 'i' // payload: bytes to type into the pane
	FrameResize   = 'r' // payload: rows, cols as two big-endian uint16
	AttachUpgrade = "cicy-attach"
)

// maxFrame is the largest payload one frame carries.
const maxFrame = 0xffff

func writeFrame(w io.Writer, typ byte, payload []byte) error {
	if len(payload) > maxFrame {
		return fmt.Errorf("frame of %d bytes is over %d", len(payload), maxFrame)
	}
	_, err := w.Write(append([]byte{typ, byte(len(payload) >> 8), byte(len(payload))}, payload...))
	return err
}

// ReadFrame reads one frame of the attach stream.
func ReadFrame(r io.Reader) (typ byte, payload []byte, err error) {
	var hdr [3]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	payload = make([]byte, int(hdr[1])<<8|int(hdr[2]))
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, nil, err
	}
	return hdr[0], payload, nil
}

func resizePayload(rows, cols uint16) []byte {
	b := make([]byte, 4)
	binary.BigEndian.PutUint16(b, rows)
	binary.BigEndian.PutUint16(b[2:], cols)
	return b
}

// Attachment is an open attach stream.
type Attachment struct {
	conn net.Conn
	r    *bufio.Reader
}

// Read reads the pane's output.
func (a *Attachment) Read(p []byte) (int, error) { return a.r.Read(p) }

// Input types bytes into the pane.
func (a *Attachment) Input(b []byte) error {
	for len(b) > 0 {
		n := min(len(b), maxFrame)
		if err := writeFrame(a.conn, FrameInput, b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// Resize tells the pane the viewer's terminal size.
func (a *Attachment) Resize(rows, cols uint16) error {
	return writeFrame(a.conn, FrameResize, resizePayload(rows, cols))
}

// Close detaches.
func (a *Attachment) Close() error { return a.conn.Close() }

// Attach opens an attach stream; rows and cols are the viewer's size.
func (c *Client) Attach(ctx context.Context, id string, rows, cols uint16) (*Attachment, error) {
	if h, remote := c.home.(remoteHome); remote {
		return nil, &Error{Kind: KindUsage, Message: fmt.Sprintf("attach runs on the pane's own node, not through the cluster API at %s", h.addr)}
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.home.Socket())
	if err != nil {
		return nil, fmt.Errorf("%w for %s", ErrNotRunning, c.home.Dir())
	}
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://cicy/api/panes/%s/attach?rows=%d&cols=%d", seg(id), rows, cols), nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", AttachUpgrade)
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("attach: %w", err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("attach: %w", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer conn.Close()
		return nil, decodeErr(resp)
	}
	return &Attachment{conn: conn, r: br}, nil
}
