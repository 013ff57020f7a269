package api

import (
	"errors"
	"fmt"
	"net/http"
)

// Error kinds, carried in the API's error document. The CLI maps usage and
// not_found to exit status 2, failed to 1.
const (
	KindUsage    = "usage"
	KindNotFound = "not_found"
	KindFailed   = "failed"
)

// Error is an API error: one sentence for the user and its kind.
type Error struct {
	Kind    string `json:"kind"`
	Message string `json:"error"`
}

func (e *Error) Error() string { return e.Message }

// Usagef is an error of a bad request: the caller can fix it (400).
func Usagef(format string, a ...any) *Error {
	return &Error{Kind: KindUsage, Message: fmt.Sprintf(format, a...)}
}

// Failedf is a refusal or a failure of a well-formed request (409).
func Failedf(format string, a ...any) *Error {
	return &Error{Kind: KindFailed, Message: fmt.Sprintf(format, a...)}
}

// PaneNotFound is the error for a pane that is not there (any more) (404).
func PaneNotFound(id string) *Error {
	return &Error{Kind: KindNotFound, Message: fmt.Sprintf("no pane %s (see 'cicy-agent ls')", id)}
}

// Status is the HTTP status an error of its kind is answered with: 400
// for usage, 404 for not found, 409 for the rest.
func (e *Error) Status() int {
	switch e.Kind {
	case KindUsage:
		return http.StatusBadRequest
	case KindNotFound:
		return http.StatusNotFound
	default:
		return http.StatusConflict
	}
}

// ErrNotRunning means no supervisor answers on the home's socket.
var ErrNotRunning = errors.New("no supervisor is running")
