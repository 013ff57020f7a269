package gateway

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"

	"github.com/cicy-ai/cicy-agent/cicy/provider"
)

const (
	readChunk = 8 << 10
	// maxEvent bounds one buffered stream event; a longer one is passed
	// on unread and ends metering for the stream.
	maxEvent = 8 << 20
	// maxPlain bounds a plain body kept whole (scrubbed at its end, read
	// for its usage).
	maxPlain = 32 << 20
)

// relay sends the upstream's answer to the client, unchanged but for the
// hop-by-hop headers, the real credentials (an error, streamed or not,
// may echo the key the gateway sent) and, when inject is set, the
// usage-only chunk, and meters it.
func (x *exchange) relay(resp *http.Response, inject bool) {
	h := x.w.Header()
	copyEndToEnd(h, resp.Header)
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	sse := mt == "text/event-stream"
	if sse {
		h.Del("Content-Length") // a chunk may be dropped, an event scrubbed
	}
	if !sse && resp.StatusCode/100 != 2 {
		x.relayError(resp)
		return
	}
	x.w.WriteHeader(resp.StatusCode)
	m := &meter{api: x.route.api, drop: inject}
	scrub := x.scrubber()
	if sse {
		// Events are sent whole (or, past maxEvent, as they come): each
		// goes through the scrubber, as do the last bytes of a stream
		// that ended mid-event.
		x.pipe(resp.Body, func(pending []byte, send func([]byte) bool) int {
			return m.frames(pending, func(b []byte) bool { return send(scrub.Bytes(b)) })
		}, scrub)
	} else {
		x.pipe(resp.Body, m.whole(scrub), scrub)
		if resp.StatusCode/100 == 2 {
			m.body()
		}
	}
	m.fill(&x.call)
	m.answer(&x.ans, sse)
	x.complete = m.complete
	if resp.StatusCode/100 != 2 && x.ans.Error == "" {
		x.ans.Error = upstreamError(resp.StatusCode, m.errMsg)
	}
	x.ans.Error, x.ans.Text = scrub.String(x.ans.Error), scrub.String(x.ans.Text)
}

// scrubber removes the real credentials (what Config.Credential gives)
// from what an upstream sent.
func (x *exchange) scrubber() *provider.Scrubber {
	return provider.NewScrubber(x.g.cfg.Credential)
}

// relayError sends an upstream's error answer with the real credentials
// taken out: some upstreams and proxies echo the key they were sent, and
// the client must never see it.
func (x *exchange) relayError(resp *http.Response) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPlain))
	if err != nil {
		x.endErr(err)
	}
	body = x.scrubber().Bytes(body)
	x.ans.Error = upstreamError(resp.StatusCode, errorBody(body))
	x.w.Header().Del("Content-Length")
	x.w.WriteHeader(resp.StatusCode)
	if _, err := x.w.Write(body); err != nil {
		x.call.Err = "client went away mid-answer"
	}
}

// pipe copies body to the client, flushing after each read. Each read's
// bytes, appended to what was left over, go through filter, which returns
// what to send now and what to keep for the next read. What is left at
// the body's end goes through last, if set.
func (x *exchange) pipe(body io.Reader, filter func(pending []byte, send func([]byte) bool) (kept int), last *provider.Scrubber) {
	rc := http.NewResponseController(x.w)
	buf := make([]byte, readChunk)
	var pending []byte
	clientGone := false
	send := func(b []byte) bool {
		if len(b) == 0 || clientGone {
			return !clientGone
		}
		if _, err := x.w.Write(b); err != nil {
			clientGone = true
		}
		return !clientGone
	}
	for {
		n, err := body.Read(buf)
		if n > 0 {
			pending = append(pending, buf[:n]...)
			kept := filter(pending, send)
			pending = append(pending[:0], pending[len(pending)-kept:]...)
			if !clientGone && rc.Flush() != nil {
				clientGone = true
			}
		}
		if clientGone {
			x.call.Err = "client went away mid-answer"
			return
		}
		if err != nil {
			send(last.Bytes(pending))
			_ = rc.Flush() // the last bytes; a client gone now has had the answer
			x.endErr(err)
			return
		}
	}
}

// endErr notes why a body ended, unless it ended normally.
func (x *exchange) endErr(err error) {
	switch {
	case errors.Is(err, io.EOF):
	case x.r.Context().Err() != nil:
		x.call.Err = "client went away mid-answer"
	default:
		x.call.Err = "upstream broke off: " + plainErr(err)
	}
}

// eventEnd is the length of the first event in b through the blank line
// that ends it, or -1 if b holds no whole event. Lines end in \n, \r\n
// or \r.
func eventEnd(b []byte) int {
	i := 0
	for i < len(b) {
		j := bytes.IndexAny(b[i:], "\r\n")
		if j < 0 {
			return -1
		}
		k := i + j
		if b[k] == '\r' {
			if k+1 == len(b) {
				return -1 // maybe \r\n split across reads
			}
			if b[k+1] == '\n' {
				k++
			}
		}
		k++
		if j == 0 {
			return k
		}
		i = k
	}
	return -1
}

// eventFields are an event's name and its data lines joined by \n.
func eventFields(ev []byte) (name, data []byte) {
	for len(ev) > 0 {
		j := bytes.IndexAny(ev, "\r\n")
		if j < 0 {
			j = len(ev)
		}
		line := ev[:j]
		ev = ev[min(j+1, len(ev)):]
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			name = value
		case "data":
			if data != nil {
				data = append(append(append([]byte{}, data...), '\n'), value...)
			} else {
				data = value
			}
		}
	}
	return name, data
}
