package apierror

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestWriteAnthropic(t *testing.T) {
	for i, tc := range []struct {
		err  *Error
		want string
	}{
		{InvalidRequest("messages", "empty"), "invalid_request_error"},
		{Unauthorized("invalid API key"), "authentication_error"},
		{New(http.StatusForbidden, TypePermission, "", "no"), "permission_error"},
		{NotFound("model_not_found", "no such model"), "not_found_error"},
		{New(http.StatusMethodNotAllowed, TypeInvalidRequest, "method_not_allowed", "no"), "invalid_request_error"},
		{New(http.StatusUnsupportedMediaType, TypeInvalidRequest, "", "json"), "invalid_request_error"},
		{New(http.StatusRequestEntityTooLarge, TypeInvalidRequest, "request_too_large", "big"), "request_too_large"},
		{New(http.StatusTooManyRequests, TypeRateLimit, "rate_limit_exceeded", "slow"), "rate_limit_error"},
		{New(http.StatusTooManyRequests, TypeInsufficient, "insufficient_quota", "spent"), "rate_limit_error"},
		{Internal(), "api_error"},
		{New(http.StatusBadGateway, TypeUpstream, "", "down"), "overloaded_error"},
		{New(http.StatusServiceUnavailable, TypeServer, "", "busy"), "overloaded_error"},
		{New(http.StatusGatewayTimeout, TypeUpstream, "", "slow"), "overloaded_error"},
		{New(529, TypeServer, "", "overloaded"), "overloaded_error"},
	} {
		rec := httptest.NewRecorder()
		tc.err.WriteAnthropic(rec)
		var body struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("Test %d: %v", i, err)
		}
		if rec.Code != tc.err.Status || body.Type != "error" || body.Error.Type != tc.want || body.Error.Message != tc.err.Message {
			t.Errorf("Test %d: %d %s, want status %d and type %s", i, rec.Code, rec.Body, tc.err.Status, tc.want)
		}
	}
}

func TestOpenAIShape(t *testing.T) {
	for i, tc := range []struct {
		err        *Error
		typ, code  string
		status     int
		retryAfter string
	}{
		{Unauthorized("invalid API key"), "invalid_request_error", "invalid_api_key", 401, ""},
		{NotFound("model_not_found", "no such model").WithParam("model"), "invalid_request_error", "model_not_found", 404, ""},
		{&Error{Status: 503, Type: TypeServer, Message: "busy", RetryAfter: 2}, "server_error", "", 503, "2"},
	} {
		rec := httptest.NewRecorder()
		tc.err.Write(rec)
		var body struct {
			Error struct {
				Type string  `json:"type"`
				Code *string `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("Test %d: %v", i, err)
		}
		code := ""
		if body.Error.Code != nil {
			code = *body.Error.Code
		}
		if rec.Code != tc.status || body.Error.Type != tc.typ || code != tc.code || rec.Header().Get("Retry-After") != tc.retryAfter {
			t.Errorf("Test %d: %d %v %s", i, rec.Code, rec.Header(), rec.Body)
		}
	}
}

// TestNoRetryOnSpentBudget: the official SDKs retry a 429 twice unless
// told not to; an insufficient_quota answer tells them, in both shapes,
// and a rate limit (which passes) does not.
func TestNoRetryOnSpentBudget(t *testing.T) {
	for i, tc := range []struct {
		err  *Error
		want string
	}{
		{New(429, TypeInsufficient, "insufficient_quota", "the key's monthly limit is spent"), "false"},
		{&Error{Status: 429, Type: TypeRateLimit, Message: "slow down", RetryAfter: 3}, ""},
	} {
		for _, anthropic := range []bool{false, true} {
			rec := httptest.NewRecorder()
			if anthropic {
				tc.err.WriteAnthropic(rec)
			} else {
				tc.err.Write(rec)
			}
			if got := rec.Header().Get("X-Should-Retry"); got != tc.want {
				t.Errorf("Test %d (anthropic %v): X-Should-Retry %q, want %q", i, anthropic, got, tc.want)
			}
		}
	}
}
