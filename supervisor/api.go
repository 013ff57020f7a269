package supervisor

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/cicy-ai/cicy-agent/api"
)

// The API's errors (api.Error) as the handlers build them, and the HTTP
// status of each kind.

func usageErr(format string, a ...any) *api.Error {
	return &api.Error{Kind: api.KindUsage, Message: fmt.Sprintf(format, a...)}
}

func notFoundErr(id string) *api.Error {
	return &api.Error{Kind: api.KindNotFound, Message: fmt.Sprintf("no pane %s (see 'cicy-agent ls')", id)}
}

func failedErr(format string, a ...any) *api.Error {
	return &api.Error{Kind: api.KindFailed, Message: fmt.Sprintf(format, a...)}
}

func httpStatus(kind string) int {
	switch kind {
	case api.KindUsage:
		return http.StatusBadRequest
	case api.KindNotFound:
		return http.StatusNotFound
	default:
		return http.StatusConflict
	}
}

// asAPIError turns any error into an *Error, keeping the kind of an *Error
// found in its chain and treating anything else as a failure.
func asAPIError(err error) *api.Error {
	var e *api.Error
	if errors.As(err, &e) {
		return e
	}
	return &api.Error{Kind: api.KindFailed, Message: err.Error()}
}
