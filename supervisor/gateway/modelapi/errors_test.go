package modelapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// One table serves the gateway and the fake: each status gets the error
// type (and OpenAI code) the real APIs give it, byte for byte.
func TestWriteError(t *testing.T) {
	for _, c := range []struct {
		api  string
		code int
		want string
	}{
		{APIAnthropic, 400, `{"error":{"message":"m","type":"invalid_request_error"},"type":"error"}`},
		{APIAnthropic, 401, `{"error":{"message":"m","type":"authentication_error"},"type":"error"}`},
		{APIAnthropic, 402, `{"error":{"message":"m","type":"billing_error"},"type":"error"}`},
		{APIAnthropic, 403, `{"error":{"message":"m","type":"permission_error"},"type":"error"}`},
		{APIAnthropic, 404, `{"error":{"message":"m","type":"not_found_error"},"type":"error"}`},
		{APIAnthropic, 405, `{"error":{"message":"m","type":"invalid_request_error"},"type":"error"}`},
		{APIAnthropic, 413, `{"error":{"message":"m","type":"request_too_large"},"type":"error"}`},
		{APIAnthropic, 429, `{"error":{"message":"m","type":"rate_limit_error"},"type":"error"}`},
		{APIAnthropic, 502, `{"error":{"message":"m","type":"api_error"},"type":"error"}`},
		{APIAnthropic, 529, `{"error":{"message":"m","type":"overloaded_error"},"type":"error"}`},
		{APIChat, 400, `{"error":{"code":null,"message":"m","param":null,"type":"invalid_request_error"}}`},
		{APIChat, 401, `{"error":{"code":"invalid_api_key","message":"m","param":null,"type":"invalid_request_error"}}`},
		{APIChat, 404, `{"error":{"code":null,"message":"m","param":null,"type":"invalid_request_error"}}`},
		{APIResponses, 429, `{"error":{"code":"rate_limit_exceeded","message":"m","param":null,"type":"requests"}}`},
		{APIResponses, 502, `{"error":{"code":null,"message":"m","param":null,"type":"server_error"}}`},
		{APIGemini, 400, `{"error":{"code":400,"message":"m","status":"INVALID_ARGUMENT"}}`},
		{APIGemini, 401, `{"error":{"code":401,"message":"m","status":"UNAUTHENTICATED"}}`},
		{APIGemini, 403, `{"error":{"code":403,"message":"m","status":"PERMISSION_DENIED"}}`},
		{APIGemini, 404, `{"error":{"code":404,"message":"m","status":"NOT_FOUND"}}`},
		{APIGemini, 429, `{"error":{"code":429,"message":"m","status":"RESOURCE_EXHAUSTED"}}`},
		{APIGemini, 500, `{"error":{"code":500,"message":"m","status":"INTERNAL"}}`},
		{APIGemini, 503, `{"error":{"code":503,"message":"m","status":"UNAVAILABLE"}}`},
		{APIGemini, 504, `{"error":{"code":504,"message":"m","status":"DEADLINE_EXCEEDED"}}`},
	} {
		rec := httptest.NewRecorder()
		WriteError(rec, c.api, c.code, "m")
		if got := rec.Body.String(); rec.Code != c.code || got != c.want {
			t.Errorf("%s %d: got %d %s, want %s", c.api, c.code, rec.Code, got, c.want)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %d: Content-Type %q", c.api, c.code, ct)
		}
	}
}

// A model's own error type wins over the status's usual one, and its
// retry-after is sent as a whole number of seconds.
func TestFailKeepsTypeAndRetryAfter(t *testing.T) {
	h := NewHandler("test", nil)
	rec := httptest.NewRecorder()
	h.fail(rec, "/chat/completions", apiError{code: http.StatusServiceUnavailable, kind: "overloaded", msg: "m", retryAfter: 1.2})
	if got, want := rec.Body.String(), `{"error":{"code":null,"message":"m","param":null,"type":"overloaded"}}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if ra := rec.Header().Get("Retry-After"); ra != "2" {
		t.Errorf("Retry-After %q", ra)
	}
	if rec.Header().Get("request-id") == "" {
		t.Error("no request-id")
	}
}

// A Gemini route's own errors come in Google's shape, a model's status
// name kept when it is spelled as one.
func TestFailGeminiShape(t *testing.T) {
	h := NewHandler("test", nil)
	rec := httptest.NewRecorder()
	h.fail(rec, Route("/v1beta/models/g:streamGenerateContent"), apiError{code: http.StatusServiceUnavailable, kind: "overloaded_error", msg: "m"})
	if got, want := rec.Body.String(), `{"error":{"code":503,"message":"m","status":"UNAVAILABLE"}}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	rec = httptest.NewRecorder()
	h.fail(rec, Route("/v1beta/models/g:countTokens"), apiError{code: http.StatusTooManyRequests, kind: "RESOURCE_EXHAUSTED", msg: "quota"})
	if got, want := rec.Body.String(), `{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED"}}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
