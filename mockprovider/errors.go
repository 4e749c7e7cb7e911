package mockprovider

import (
	"net/http"
	"strconv"

	"github.com/caddy-air/caddy-air/apierror"
)

// writeOpenAIError answers with an OpenAI-shaped error. Empty code and param
// are written as null. A 429 carries Retry-After: 1 unless w has one set.
func writeOpenAIError(w http.ResponseWriter, status int, typ, code, param, msg string) {
	e := apierror.New(status, typ, code, msg)
	if param != "" {
		e = e.WithParam(param)
	}
	if status == http.StatusTooManyRequests && w.Header().Get("Retry-After") == "" {
		e.RetryAfter = 1
	}
	e.Write(w)
}

// writeAnthropicError answers with an Anthropic-shaped error:
// {"type":"error","error":{"type":…,"message":…}}. A 429 carries
// Retry-After: 1 unless w has one set.
func writeAnthropicError(w http.ResponseWriter, status int, typ, msg string) {
	b := getBuf()
	defer putBuf(b)
	body := append(*b, `{"type":"error","error":{"type":`...)
	body = appendString(body, typ)
	body = append(body, `,"message":`...)
	body = appendString(body, msg)
	body = append(body, `}}`...)
	*b = body
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if status == http.StatusTooManyRequests && h.Get("Retry-After") == "" {
		h.Set("Retry-After", "1")
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// openAIStatusError returns the OpenAI error type and code for an error
// status that a request forced with mock_status.
func openAIStatusError(status int) (typ, code string) {
	switch {
	case status == http.StatusUnauthorized:
		return apierror.TypeInvalidRequest, "invalid_api_key"
	case status == http.StatusForbidden:
		return apierror.TypePermission, "unsupported_country_region_territory"
	case status == http.StatusNotFound:
		return apierror.TypeInvalidRequest, "model_not_found"
	case status == http.StatusTooManyRequests:
		return "requests", "rate_limit_exceeded"
	case status >= 500:
		return apierror.TypeServer, ""
	default:
		return apierror.TypeInvalidRequest, ""
	}
}

// anthropicStatusError returns Anthropic's error type for a status.
func anthropicStatusError(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	default:
		if status >= 400 && status < 500 {
			return "invalid_request_error"
		}
		return "api_error"
	}
}

// forcedStatus validates a mock_status value: an HTTP error status from
// 400 to 599, or 0 when absent or out of range.
func forcedStatus(v int64) int {
	if v < 400 || v > 599 {
		return 0
	}
	return int(v)
}
