package llmserve

import (
	"math"
	"net/http"
	"strconv"
)

// apiError is an error answer: its HTTP status, its error type ("" for the
// status's usual one), its message, and a retry-after in seconds (0: none).
type apiError struct {
	code       int
	kind       string
	msg        string
	retryAfter float64
}

// fail answers e in the error shape of the API route belongs to: OpenAI's
// for Chat Completions and Responses, Anthropic's otherwise.
func (h *Handler) fail(w http.ResponseWriter, route string, e apiError) {
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.FormatFloat(math.Ceil(e.retryAfter), 'f', -1, 64))
	}
	if route == "/chat/completions" || route == "/responses" {
		h.writeJSON(w, e.code, openAIError(e))
		return
	}
	h.writeJSON(w, e.code, anthropicError(e))
}

// anthropicError is an Anthropic API error body.
func anthropicError(e apiError) obj {
	kind := e.kind
	if kind == "" {
		kind = anthropicKind(e.code)
	}
	return obj{"type": "error", "error": obj{"type": kind, "message": e.msg}}
}

// anthropicKind is Anthropic's error type for an HTTP status.
func anthropicKind(code int) string {
	switch {
	case code == http.StatusUnauthorized:
		return "authentication_error"
	case code == http.StatusForbidden:
		return "permission_error"
	case code == http.StatusNotFound:
		return "not_found_error"
	case code == http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case code == http.StatusTooManyRequests:
		return "rate_limit_error"
	case code == 529:
		return "overloaded_error"
	case code < 500:
		return "invalid_request_error"
	}
	return "api_error"
}

// openAIError is an OpenAI API error body.
func openAIError(e apiError) obj {
	kind, errCode := "invalid_request_error", any(nil)
	switch {
	case e.code == http.StatusUnauthorized:
		errCode = "invalid_api_key"
	case e.code == http.StatusNotFound:
		errCode = "not_found"
	case e.code == http.StatusTooManyRequests:
		kind, errCode = "requests", "rate_limit_exceeded"
	case e.code >= 500:
		kind = "server_error"
	}
	if e.kind != "" {
		kind = e.kind
	}
	return obj{"error": obj{"message": e.msg, "type": kind, "param": nil, "code": errCode}}
}
