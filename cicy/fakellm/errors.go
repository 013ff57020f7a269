package fakellm

import "net/http"

// fail answers an HTTP error in the error shape of the API route belongs to:
// OpenAI's for Chat Completions and Responses, Anthropic's otherwise.
func (s *Server) fail(w http.ResponseWriter, route string, code int, msg string) {
	if route == "/chat/completions" || route == "/responses" {
		s.writeJSON(w, code, openAIError(code, msg))
		return
	}
	s.writeJSON(w, code, anthropicError(code, msg))
}

// anthropicError is an Anthropic API error body.
func anthropicError(code int, msg string) obj {
	kind := "api_error"
	switch {
	case code == http.StatusUnauthorized:
		kind = "authentication_error"
	case code == http.StatusForbidden:
		kind = "permission_error"
	case code == http.StatusNotFound:
		kind = "not_found_error"
	case code == http.StatusRequestEntityTooLarge:
		kind = "request_too_large"
	case code == http.StatusTooManyRequests:
		kind = "rate_limit_error"
	case code == 529:
		kind = "overloaded_error"
	case code < 500:
		kind = "invalid_request_error"
	}
	return obj{"type": "error", "error": obj{"type": kind, "message": msg}}
}

// openAIError is an OpenAI API error body.
func openAIError(code int, msg string) obj {
	kind, errCode := "invalid_request_error", any(nil)
	switch {
	case code == http.StatusUnauthorized:
		errCode = "invalid_api_key"
	case code == http.StatusNotFound:
		errCode = "not_found"
	case code == http.StatusTooManyRequests:
		kind, errCode = "requests", "rate_limit_exceeded"
	case code >= 500:
		kind = "server_error"
	}
	return obj{"error": obj{"message": msg, "type": kind, "param": nil, "code": errCode}}
}
