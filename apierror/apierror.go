// Package apierror writes the JSON error bodies that caddy-air's HTTP API
// answers with: the OpenAI shape ({"error":{"message","type","param","code"}})
// on the OpenAI-compatible endpoints and the Anthropic shape
// ({"type":"error","error":{"type","message"}}) on /v1/messages.
package apierror

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/caddy-air/caddy-air/jsonlimit"
)

// Error types used in the "type" field of an OpenAI-style error. OpenAI
// answers 401 and 404 with invalid_request_error too (codes
// invalid_api_key, model_not_found); the Anthropic shape derives its own
// type from the status (see WriteAnthropic).
const (
	TypeInvalidRequest = "invalid_request_error"
	TypeAuthentication = "authentication_error"
	TypePermission     = "permission_error"
	TypeNotFound       = "not_found_error"
	TypeRateLimit      = "rate_limit_error"
	TypeInsufficient   = "insufficient_quota"
	TypeServer         = "server_error"
	TypeUpstream       = "upstream_error"
)

// Error is an API error with its HTTP status. It implements error so that
// domain packages can return it and handlers can write it unchanged.
type Error struct {
	// Status is the HTTP status code to answer with.
	Status int `json:"-"`
	// Message is a human-readable explanation.
	Message string `json:"message"`
	// Type is the error class, one of the Type* constants.
	Type string `json:"type"`
	// Param names the offending request field, if any.
	Param *string `json:"param"`
	// Code is a stable machine-readable code, if any.
	Code *string `json:"code"`
	// RetryAfter, when positive, is sent as the Retry-After header (seconds).
	RetryAfter int `json:"-"`
}

// Error implements the error interface.
func (e *Error) Error() string { return e.Message }

// New returns an Error with the given status, type, code and message. An
// empty code leaves the code null.
func New(status int, typ, code, message string) *Error {
	e := &Error{Status: status, Type: typ, Message: message}
	if code != "" {
		e.Code = &code
	}
	return e
}

// WithParam returns e with its param field set.
func (e *Error) WithParam(param string) *Error {
	e.Param = &param
	return e
}

// InvalidRequest returns a 400 invalid_request_error about param.
func InvalidRequest(param, message string) *Error {
	e := New(http.StatusBadRequest, TypeInvalidRequest, "invalid_request", message)
	if param != "" {
		e.Param = &param
	}
	return e
}

// InvalidBody returns the 400 invalid_request_error for a request body that
// jsonlimit.Check refused with err: the message of one nested too deep names
// the limit; anything else is not valid JSON.
func InvalidBody(err error) *Error {
	var de *jsonlimit.DepthError
	if errors.As(err, &de) {
		return InvalidRequest("", fmt.Sprintf("the request body nests deeper than the limit of %d levels", de.Limit))
	}
	return InvalidRequest("", "the request body is not valid JSON")
}

// NotFound returns a 404 invalid_request_error with the given code, as
// OpenAI answers an unknown model (code model_not_found).
func NotFound(code, message string) *Error {
	return New(http.StatusNotFound, TypeInvalidRequest, code, message)
}

// Unauthorized returns OpenAI's 401 for a missing or bad API key:
// invalid_request_error with code invalid_api_key.
func Unauthorized(message string) *Error {
	return New(http.StatusUnauthorized, TypeInvalidRequest, "invalid_api_key", message)
}

// Internal returns a 500 server_error that reveals nothing about the cause.
func Internal() *Error {
	return New(http.StatusInternalServerError, TypeServer, "internal_error", "the gateway could not complete the request; it has been logged")
}

// Shape is the error shape of a client protocol: how an error's body and
// a stream's error event are written. A dialect chooses its shape (see
// dialect.Wire); the engines only pass it on.
type Shape uint8

// Error shapes.
const (
	// ShapeOpenAI is {"error":{"message","type","param","code"}}, and a
	// stream's error as a data event holding it: OpenAI's chat
	// completions, Responses and every other OpenAI-shaped endpoint.
	ShapeOpenAI Shape = iota
	// ShapeAnthropic is {"type":"error","error":{"type","message"}}, and
	// a stream's error as an "error" event: Anthropic's Messages.
	ShapeAnthropic
)

// Write answers w with e in the OpenAI error shape.
func (e *Error) Write(w http.ResponseWriter) { writeJSON(w, e, e.OpenAIBody()) }

// WriteAnthropic answers w with e in the Anthropic error shape.
func (e *Error) WriteAnthropic(w http.ResponseWriter) { writeJSON(w, e, e.anthropicBody()) }

// WriteShape answers w with e in shape s.
func (e *Error) WriteShape(w http.ResponseWriter, s Shape) {
	if s == ShapeAnthropic {
		e.WriteAnthropic(w)
		return
	}
	e.Write(w)
}

// OpenAIBody returns e's body in the OpenAI error shape.
func (e *Error) OpenAIBody() []byte {
	body, _ := json.Marshal(struct {
		Error *Error `json:"error"`
	}{e})
	return body
}

// anthropicBody is e in the Anthropic error shape.
func (e *Error) anthropicBody() []byte {
	type inner struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	body, _ := json.Marshal(struct {
		Type  string `json:"type"`
		Error inner  `json:"error"`
	}{Type: "error", Error: inner{Type: anthropicType(e), Message: e.Message}})
	return body
}

func writeJSON(w http.ResponseWriter, e *Error, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	if e.Type == TypeInsufficient {
		// A spent budget stays spent for seconds or months: the official
		// SDKs retry a 429 unless told that retrying cannot help.
		h.Set("X-Should-Retry", "false")
	}
	w.WriteHeader(e.Status)
	_, _ = w.Write(body)
}

// anthropicType maps a status to Anthropic's error types, as its API
// documents them: 400 (and any other 4xx) invalid_request_error, 401
// authentication_error, 403 permission_error, 404 not_found_error, 413
// request_too_large, 429 rate_limit_error, 500 api_error, 529
// overloaded_error. The gateway's own 502, 503 and 504 (no upstream could
// serve the request now; retry) are overloaded_error too.
func anthropicType(e *Error) string {
	switch s := e.Status; {
	case s == http.StatusUnauthorized:
		return "authentication_error"
	case s == http.StatusForbidden:
		return "permission_error"
	case s == http.StatusNotFound:
		return "not_found_error"
	case s == http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case s == http.StatusTooManyRequests:
		return "rate_limit_error"
	case s == http.StatusBadGateway, s == http.StatusServiceUnavailable, s == http.StatusGatewayTimeout, s == 529:
		return "overloaded_error"
	case s >= 400 && s < 500:
		return "invalid_request_error"
	default:
		return "api_error"
	}
}

// Write answers w with err: an *Error as it is, anything else as a 500.
func Write(w http.ResponseWriter, err error) {
	if e, ok := err.(*Error); ok {
		e.Write(w)
		return
	}
	Internal().Write(w)
}

// StreamEvent returns e as the Server-Sent Event that ends a stream in
// error: in ShapeOpenAI a data event holding the error object (the
// official SDKs raise it), in ShapeAnthropic an "error" event.
func (e *Error) StreamEvent(s Shape) []byte {
	if s == ShapeAnthropic {
		return append(append([]byte("event: error\ndata: "), e.anthropicBody()...), "\n\n"...)
	}
	return append(append([]byte("data: "), e.OpenAIBody()...), "\n\n"...)
}
