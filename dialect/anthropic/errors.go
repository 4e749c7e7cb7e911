package anthropic

import (
	"net/http"
	"strconv"
	"time"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/dialect"
)

// errorType is the Messages error type of a kind.
func errorType(k dialect.ErrorKind) string {
	switch k {
	case dialect.ErrInvalidRequest:
		return "invalid_request_error"
	case dialect.ErrAuthentication:
		return "authentication_error"
	case dialect.ErrPermission:
		return "permission_error"
	case dialect.ErrNotFound:
		return "not_found_error"
	case dialect.ErrTooLarge:
		return "request_too_large"
	case dialect.ErrRateLimit:
		return "rate_limit_error"
	case dialect.ErrOverloaded, dialect.ErrTimeout, dialect.ErrCut:
		return "overloaded_error"
	default:
		return "api_error"
	}
}

// kindOf reads a Messages error type.
func kindOf(typ string, status int) dialect.ErrorKind {
	switch typ {
	case "rate_limit_error":
		return dialect.ErrRateLimit
	case "overloaded_error":
		return dialect.ErrOverloaded
	case "api_error":
		return dialect.ErrServer
	case "authentication_error":
		return dialect.ErrAuthentication
	case "permission_error":
		return dialect.ErrPermission
	case "not_found_error":
		return dialect.ErrNotFound
	case "request_too_large":
		return dialect.ErrTooLarge
	case "invalid_request_error":
		return dialect.ErrInvalidRequest
	}
	return dialect.KindOf(status)
}

// EncodeError returns e's status and its body in the Messages error shape.
func (Codec) EncodeError(e *dialect.Error) (int, []byte) {
	return e.Status, AppendError(nil, e)
}

// AppendError appends e's error object, {"type":"error","error":{…}}.
func AppendError(b []byte, e *dialect.Error) []byte {
	b = append(b, `{"type":"error","error":{"type":`...)
	b = dialect.AppendString(b, errorType(e.Kind))
	b = append(b, `,"message":`...)
	b = dialect.AppendString(b, e.Message)
	return append(b, `}}`...)
}

// DecodeError reads a failed answer: {"type":"error","error":{"type",
// "message"}}.
func (Codec) DecodeError(status int, h http.Header, body []byte) *dialect.Error {
	obj := gjson.GetBytes(body, "error")
	e := &dialect.Error{Status: status, Kind: kindOf(obj.Get("type").Str, status), Message: obj.Get("message").Str}
	if e.Message == "" {
		e.Message = http.StatusText(status)
	}
	if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil && s > 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}
