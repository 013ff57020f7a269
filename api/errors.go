package api

import "errors"

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

// ErrNotRunning means no supervisor answers on the home's socket.
var ErrNotRunning = errors.New("no supervisor is running")
