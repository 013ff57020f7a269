package supervisor

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cicy-ai/cicy-agent/pane"
)

// The attach stream. After an HTTP upgrade the server sends the pane's
// output as raw bytes (first a repaint of the current screen) and the
// client sends frames: one type byte, a big-endian uint16 length, the
// payload.
const (
	frameInput  = 'i' // payload: bytes to type into the pane
	frameResize = 'r' // payload: rows, cols as two big-endian uint16
	upgradeName = "cicy-attach"
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

func readFrame(r io.Reader) (typ byte, payload []byte, err error) {
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

func (a *api) attach(w http.ResponseWriter, r *http.Request) {
	p, err := a.sup.ptyOf(r.PathValue("id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	rows, _ := strconv.ParseUint(r.URL.Query().Get("rows"), 10, 16)
	cols, _ := strconv.ParseUint(r.URL.Query().Get("cols"), 10, 16)
	if rows > 0 && cols > 0 {
		_ = p.Resize(uint16(rows), uint16(cols))
	}
	repaint, out, detach, err := p.Attach()
	if err != nil {
		writeErr(w, failedErr("pane %s has exited; 'cicy-agent restart %s' starts it again", r.PathValue("id"), r.PathValue("id")))
		return
	}
	defer detach()
	hj, ok := w.(http.Hijacker)
	if !ok {
		writeErr(w, failedErr("this connection cannot be upgraded for attach"))
		return
	}
	conn, brw, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: %s\r\nConnection: Upgrade\r\n\r\n", upgradeName)
	if err := brw.Flush(); err != nil {
		return
	}
	go a.attachInput(brw.Reader, p, detach)
	if !writeAll(conn, repaint) {
		return
	}
	for chunk := range out {
		if !writeAll(conn, chunk) {
			return
		}
	}
}

type deadlineWriter interface {
	io.Writer
	SetWriteDeadline(time.Time) error
}

// writeAll writes to the viewer, giving up on one that stops reading.
func writeAll(c deadlineWriter, b []byte) bool {
	_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := c.Write(b)
	return err == nil
}

// attachInput reads the viewer's frames until it goes away, then detaches
// it, which ends the output side too.
func (a *api) attachInput(r *bufio.Reader, p interface {
	SendKeys([]byte) error
	Resize(rows, cols uint16) error
}, detach func()) {
	defer detach()
	for {
		typ, payload, err := readFrame(r)
		if err != nil {
			return
		}
		switch typ {
		case frameInput:
			if p.SendKeys(payload) != nil {
				return
			}
		case frameResize:
			if len(payload) == 4 {
				_ = p.Resize(binary.BigEndian.Uint16(payload), binary.BigEndian.Uint16(payload[2:]))
			}
		}
	}
}

// attachable is a pane whose program may run on a PTY of ours.
type attachable interface{ attachable() (*pane.PTY, bool) }

// ptyOf is the PTY a viewer attaches to, or why there is none.
func (s *Supervisor) ptyOf(id string) (*pane.PTY, error) {
	e, err := s.get(id)
	if err != nil {
		return nil, err
	}
	k := e.kind()
	t, ok := k.(attachable)
	if !ok {
		if st := k.Status(); !st.Running() {
			return nil, failedErr("pane %s is not running (%s); 'cicy-agent restart %s' starts it again", e.cfg.ID, st.Reason, e.cfg.ID)
		}
		return nil, usageErr("pane %s is a %s pane: it has no terminal; follow it with 'cicy-agent screen %s'", e.cfg.ID, e.cfg.Type, e.cfg.ID)
	}
	p, ok := t.attachable()
	if !ok {
		return nil, usageErr("pane %s runs in tmux: attach with %s", e.cfg.ID, strings.Join(s.tmux.AttachCommand(e.cfg.ID), " "))
	}
	return p, nil
}
