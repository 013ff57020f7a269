package supervisor

import (
	"errors"
	"fmt"
	"net/http"
)

// The API's errors (api.Error) as the handlers build them, and the HTTP
// status of each kind.

func usageErr(format string, a ...any) *Error {
	return &Error{Kind: KindUsage, Message: fmt.Sprintf(format, a...)}
}

func notFoundErr(id string) *Error {
	return &Error{Kind: KindNotFound, Message: fmt.Sprintf("no pane %s (see 'cicy-agent ls')", id)}
}

func failedErr(format string, a ...any) *Error {
	return &Error{Kind: KindFailed, Message: fmt.Sprintf(format, a...)}
}

func httpStatus(kind string) int {
	switch kind {
	case KindUsage:
		return http.StatusBadRequest
	case KindNotFound:
		return http.StatusNotFound
	default:
		return http.StatusConflict
	}
}

// asAPIError turns any error into an *Error, keeping the kind of an *Error
// found in its chain and treating anything else as a failure.
func asAPIError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Kind: KindFailed, Message: err.Error()}
}
