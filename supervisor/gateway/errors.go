package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// writeError answers code with msg in the error shape of api: Anthropic's
// {"type":"error","error":{…}} or OpenAI's {"error":{…}}.
func writeError(w http.ResponseWriter, api API, code int, msg string) {
	var v any
	if api == Anthropic {
		v = map[string]any{"type": "error", "error": map[string]any{"type": anthropicErrorType(code), "message": msg}}
	} else {
		errCode := any(nil)
		if code == http.StatusUnauthorized {
			errCode = "invalid_api_key"
		}
		kind := "invalid_request_error"
		if code >= 500 {
			kind = "server_error"
		}
		v = map[string]any{"error": map[string]any{"message": msg, "type": kind, "param": nil, "code": errCode}}
	}
	data, _ := json.Marshal(v) // maps of strings always marshal
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(code)
	_, _ = w.Write(data) // a client already gone needs no answer
}

// anthropicErrorType is Anthropic's error type for an HTTP status.
func anthropicErrorType(code int) string {
	switch {
	case code == http.StatusUnauthorized:
		return "authentication_error"
	case code == http.StatusPaymentRequired:
		return "billing_error"
	case code == http.StatusNotFound:
		return "not_found_error"
	case code >= 500:
		return "api_error"
	default:
		return "invalid_request_error"
	}
}
