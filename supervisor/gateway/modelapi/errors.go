package modelapi

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

// WriteError answers HTTP status code with msg in the error shape of api
// (APIAnthropic, APIChat, APIResponses or APIGemini): Anthropic's
// {"type":"error","error":{"type":…,"message":…}}, OpenAI's
// {"error":{"message":…,"type":…,"param":null,"code":…}} or Google's
// {"error":{"code":…,"message":…,"status":…}}, with the error type, code
// or status the real APIs give that status.
func WriteError(w http.ResponseWriter, api string, code int, msg string) {
	writeJSON(w, code, errorBody(api, apiError{code: code, msg: msg}))
}

// fail answers e in the error shape of the API route belongs to, with a
// request id, and a Retry-After when e has one.
func (h *Handler) fail(w http.ResponseWriter, route string, e apiError) {
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.FormatFloat(math.Ceil(e.retryAfter), 'f', -1, 64))
	}
	h.writeJSON(w, e.code, errorBody(apiOf(route), e))
}

// apiOf is the API whose error shape suits route: OpenAI's for Chat
// Completions and Responses, Gemini's for its methods, Anthropic's
// otherwise.
func apiOf(route string) string {
	if api, ok := modelAPIs[route]; ok {
		return api.name
	}
	if IsGeminiRoute(route) {
		return APIGemini
	}
	return APIAnthropic
}

// errorBody is e in the error shape of api: OpenAI's for Chat Completions
// and Responses, Google's for Gemini, Anthropic's otherwise.
func errorBody(api string, e apiError) obj {
	switch api {
	case APIChat, APIResponses:
		return openAIError(e)
	case APIGemini:
		return geminiError(e)
	}
	return anthropicError(e)
}

// anthropicError is an Anthropic API error body.
func anthropicError(e apiError) obj {
	kind := e.kind
	if kind == "" {
		kind = anthropicKind(e.code)
	}
	return obj{"type": "error", "error": obj{"type": kind, "message": e.msg}}
}

// anthropicKinds are Anthropic's error types for HTTP statuses, as its
// API documents them; anthropicKind gives the rest.
var anthropicKinds = map[int]string{
	http.StatusUnauthorized:          "authentication_error",
	http.StatusPaymentRequired:       "billing_error",
	http.StatusForbidden:             "permission_error",
	http.StatusNotFound:              "not_found_error",
	http.StatusRequestEntityTooLarge: "request_too_large",
	http.StatusTooManyRequests:       "rate_limit_error",
	529:                              "overloaded_error",
}

// anthropicKind is Anthropic's error type for an HTTP status.
func anthropicKind(code int) string {
	return statusName(anthropicKinds, code, "invalid_request_error", "api_error")
}

// statusName is an API's name for an HTTP status: the one its table
// gives, else client for a status under 500 and server for the others.
func statusName(table map[int]string, code int, client, server string) string {
	if name, ok := table[code]; ok {
		return name
	}
	if code < 500 {
		return client
	}
	return server
}

// openAIError is an OpenAI API error body: type invalid_request_error
// (code invalid_api_key for a 401), requests with code
// rate_limit_exceeded for a 429, server_error from 500 on.
func openAIError(e apiError) obj {
	kind, errCode := "invalid_request_error", any(nil)
	switch {
	case e.code == http.StatusUnauthorized:
		errCode = "invalid_api_key"
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
