package modelapi

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// sseStream writes a server-sent event stream, flushing after each event.
// After the first write error (the client went away) it writes nothing more.
type sseStream struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	err error
}

// startSSE sends the 200 header of an event stream. The body goes out with
// chunked transfer encoding, as there is no Content-Length.
func (h *Handler) startSSE(w http.ResponseWriter) *sseStream {
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream; charset=utf-8")
	hd.Set("Cache-Control", "no-cache")
	hd.Set(requestIDHdr, h.newID("req"))
	hd.Set(xRequestIDHdr, h.newID("req"))
	w.WriteHeader(http.StatusOK)
	st := &sseStream{w: w, rc: http.NewResponseController(w)}
	st.flush()
	return st
}

// event sends one event whose data is v as JSON; an empty name sends a
// data-only event (Chat Completions).
func (st *sseStream) event(name string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		st.fail(err)
		return
	}
	st.send(name, data)
}

// done sends the Chat Completions end marker "data: [DONE]".
func (st *sseStream) done() {
	st.send("", []byte("[DONE]"))
}

func (st *sseStream) send(name string, data []byte) {
	if st.err != nil {
		return
	}
	var buf bytes.Buffer
	if name != "" {
		buf.WriteString("event: " + name + "\n")
	}
	buf.WriteString("data: ")
	buf.Write(data)
	buf.WriteString("\n\n")
	if _, err := st.w.Write(buf.Bytes()); err != nil {
		st.fail(err)
		return
	}
	st.flush()
}

func (st *sseStream) flush() {
	if st.err == nil {
		if err := st.rc.Flush(); err != nil {
			st.fail(err)
		}
	}
}

func (st *sseStream) fail(err error) {
	if st.err == nil {
		st.err = err
	}
}
