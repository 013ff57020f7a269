package cluster

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/cicy-ai/cicy-agent/api"
)

// The API's errors (api.Error) as the cluster's handlers write them, with
// the HTTP status the supervisor's handlers give each kind.

func usageErr(format string, a ...any) *api.Error {
	return &api.Error{Kind: api.KindUsage, Message: fmt.Sprintf(format, a...)}
}

func failedErr(format string, a ...any) *api.Error {
	return &api.Error{Kind: api.KindFailed, Message: fmt.Sprintf(format, a...)}
}

func writeErr(w http.ResponseWriter, e *api.Error) {
	code := http.StatusConflict
	switch e.Kind {
	case api.KindUsage:
		code = http.StatusBadRequest
	case api.KindNotFound:
		code = http.StatusNotFound
	}
	writeJSON(w, code, e)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
