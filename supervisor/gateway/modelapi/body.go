package modelapi

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// maxBodyBytes bounds a request body, far above any real agent request.
const maxBodyBytes = 64 << 20

// errUnsupportedEncoding marks a request body in a Content-Encoding the
// handler cannot undo.
var errUnsupportedEncoding = errors.New("unsupported Content-Encoding")

// ReadBody reads the whole request body (at most 64 MiB) and undoes its
// gzip or deflate Content-Encoding. On an error it returns what it read,
// still encoded; [Handler.ServeBody] answers the error.
func ReadBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		return raw, fmt.Errorf("read body: %w", err)
	}
	enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
	if len(raw) == 0 || enc == "" || enc == "identity" {
		return raw, nil
	}
	out, err := decode(enc, raw)
	if err != nil {
		return raw, fmt.Errorf("decode %s body: %w", enc, err)
	}
	return out, nil
}

// decode undoes one Content-Encoding.
func decode(enc string, raw []byte) ([]byte, error) {
	var rd io.ReadCloser
	var err error
	switch enc {
	case "gzip", "x-gzip":
		rd, err = gzip.NewReader(bytes.NewReader(raw))
	case "deflate":
		// RFC 9110 deflate is zlib-wrapped, but some clients send raw
		// DEFLATE; accept both.
		rd, err = zlib.NewReader(bytes.NewReader(raw))
		if err != nil {
			rd, err = flate.NewReader(bytes.NewReader(raw)), nil
		}
	default:
		return nil, fmt.Errorf("%w %q", errUnsupportedEncoding, enc)
	}
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	out, err := io.ReadAll(io.LimitReader(rd, maxBodyBytes))
	if err != nil {
		return nil, err
	}
	return out, nil
}
