package responses

import (
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/openai"
)

// EncodeError returns e's status and its body in OpenAI's error shape,
// which Responses shares with Chat Completions.
func (Codec) EncodeError(e *dialect.Error) (int, []byte) {
	return openai.Codec{}.EncodeError(e)
}

// errorType is the error type and code of a kind, as a stream's error
// event and a failed Response's error name them.
func errorType(k dialect.ErrorKind) (typ, code string) {
	switch k {
	case dialect.ErrInvalidRequest:
		return "invalid_request_error", "invalid_request_error"
	case dialect.ErrAuthentication:
		return "authentication_error", "invalid_api_key"
	case dialect.ErrPermission:
		return "permission_error", "permission_denied"
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
		return "server_error", "server_error"
	}
}

// appendErrorObject appends e as {"type","code","message","param"}.
func appendErrorObject(b []byte, e *dialect.Error) []byte {
	typ, code := errorType(e.Kind)
	b = append(b, `{"type":`...)
	b = dialect.AppendString(b, typ)
	b = append(b, `,"code":`...)
	b = dialect.AppendString(b, code)
	b = append(b, `,"message":`...)
	b = dialect.AppendString(b, e.Message)
	b = append(b, `,"param":`...)
	if e.Param != "" {
		b = dialect.AppendString(b, e.Param)
	} else {
		b = append(b, "null"...)
	}
	return append(b, '}')
}
