package httpapi

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
)

// attach upgrades the connection to the attach stream (see package api):
// the pane's output down, the viewer's frames up.
func (a *handler) attach(w http.ResponseWriter, r *http.Request) {
	p, err := a.sup.PTY(r.PathValue("id"))
	if err != nil {
		WriteErr(w, err)
		return
	}
	rows, _ := strconv.ParseUint(r.URL.Query().Get("rows"), 10, 16)
	cols, _ := strconv.ParseUint(r.URL.Query().Get("cols"), 10, 16)
	if rows > 0 && cols > 0 {
		_ = p.Resize(uint16(rows), uint16(cols))
	}
	repaint, out, detach, err := p.Attach()
	if err != nil {
		WriteErr(w, api.Failedf("pane %s has exited; 'cicy-agent restart %s' starts it again", r.PathValue("id"), r.PathValue("id")))
		return
	}
	defer detach()
	hj, ok := w.(http.Hijacker)
	if !ok {
		WriteErr(w, api.Failedf("this connection cannot be upgraded for attach"))
		return
	}
	conn, brw, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: %s\r\nConnection: Upgrade\r\n\r\n", api.AttachUpgrade)
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
func (a *handler) attachInput(r *bufio.Reader, p interface {
	SendKeys([]byte) error
	Resize(rows, cols uint16) error
}, detach func()) {
	defer detach()
	for {
		typ, payload, err := api.ReadFrame(r)
		if err != nil {
			return
		}
		switch typ {
		case api.FrameInput:
			if p.SendKeys(payload) != nil {
				return
			}
		case api.FrameResize:
			if len(payload) == 4 {
				_ = p.Resize(binary.BigEndian.Uint16(payload), binary.BigEndian.Uint16(payload[2:]))
			}
		}
	}
}
