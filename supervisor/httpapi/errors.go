package httpapi

import (
	"errors"

	"github.com/cicy-ai/cicy-agent/api"
)

// asAPIError turns any error into an *Error, keeping the kind of an *Error
// found in its chain and treating anything else as a failure.
func asAPIError(err error) *api.Error {
	var e *api.Error
	if errors.As(err, &e) {
		return e
	}
	return &api.Error{Kind: api.KindFailed, Message: err.Error()}
}
