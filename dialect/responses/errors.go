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
// event and a failed Response's error name them: Chat Completions' (see
// openai.ErrorType), with a code always, the type's where Chat Completions
// gives none.
func errorType(k dialect.ErrorKind) (typ, code string) {
	typ, code = openai.ErrorType(k)
	switch {
	case code != "":
	case k == dialect.ErrPermission:
		code = "permission_denied"
	default:
		code = typ
	}
	return typ, code
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
