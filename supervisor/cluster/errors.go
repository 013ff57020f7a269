package cluster

import (
	"encoding/json"
	"net/http"

	"github.com/cicy-ai/cicy-agent/api"
)

// writeErr answers with the API's error document, at its kind's status.

func writeErr(w http.ResponseWriter, e *api.Error) { writeJSON(w, e.Status(), e) }

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
