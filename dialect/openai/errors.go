package openai

import (
	"net/http"
	"strconv"
	"time"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/dialect"
)

// ErrorType is the Chat Completions error type and code of a kind; the
// code is empty where Chat Completions gives none.
func ErrorType(k dialect.ErrorKind) (typ, code string) {
	switch k {
	case dialect.ErrInvalidRequest:
		return "invalid_request_error", ""
	case dialect.ErrAuthentication:
		return "authentication_error", "invalid_api_key"
	case dialect.ErrPermission:
		return "permission_error", ""
	case dialect.ErrNotFound:
		return "not_found_error", "model_not_found"
	case dialect.ErrTooLarge:
		return "invalid_request_error", "request_too_large"
	case dialect.ErrRateLimit:
		return "rate_limit_error", "rate_limit_exceeded"
	case dialect.ErrOverloaded:
		return "server_error", "overloaded"
	case dialect.ErrTimeout:
		return "upstream_error", "upstream_timeout"
	case dialect.ErrCut:
		return "upstream_error", "upstream_cut"
	default:
		return "server_error", ""
	}
}

// EncodeError returns e's status and its body in the Chat Completions
// error shape.
func (Codec) EncodeError(e *dialect.Error) (int, []byte) {
	return e.Status, AppendError(nil, e)
}

// AppendError appends e's error object, {"error":{…}}.
func AppendError(b []byte, e *dialect.Error) []byte {
	typ, code := ErrorType(e.Kind)
	b = append(b, `{"error":{"message":`...)
	b = dialect.AppendString(b, e.Message)
	b = append(b, `,"type":`...)
	b = dialect.AppendString(b, typ)
	b = append(b, `,"param":`...)
	if e.Param != "" {
		b = dialect.AppendString(b, e.Param)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"code":`...)
	if code != "" {
		b = dialect.AppendString(b, code)
	} else {
		b = append(b, "null"...)
	}
	return append(b, `}}`...)
}

// DecodeError reads a failed answer: {"error":{"message","type","param",
// "code"}}, its kind from the status.
func (Codec) DecodeError(status int, h http.Header, body []byte) *dialect.Error {
	e := &dialect.Error{Status: status, Kind: dialect.KindOf(status)}
	obj := gjson.GetBytes(body, "error")
	e.Message = obj.Get("message").Str
	if e.Message == "" {
		e.Message = http.StatusText(status)
	}
	e.Param = obj.Get("param").Str
	if obj.Get("code").Str == "rate_limit_exceeded" || obj.Get("type").Str == "rate_limit_error" {
		e.Kind = dialect.ErrRateLimit
	}
	e.RetryAfter = retryAfter(h)
	return e
}

// retryAfter reads a Retry-After header in seconds, zero if absent.
func retryAfter(h http.Header) time.Duration {
	if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}
