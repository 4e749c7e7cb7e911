package chatproxy

import (
	"bytes"
	"context"
	"strings"

	"github.com/tidwall/gjson"
	"go.opentelemetry.io/otel/trace"

	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/telemetry"
)

// Each upstream attempt gets a span (see package telemetry) when the
// request's span records, and its result is counted in the provider's
// health (Proxy.Health). With tracing off, the span is the request's
// non-recording one, and no response metadata is collected.

// Operation names the endpoint of a protocol in spans: chat or messages.
func Operation(p Protocol) string {
	switch p {
	case Anthropic:
		return "messages"
	case Responses:
		return "responses"
	}
	return "chat"
}

// Error types of attempts that got no usable answer; one with an error
// status has the status as its type.
const (
	errTypeUnavailable = "unavailable"
	errTypeTimeout     = "timeout"
	errTypeCanceled    = "canceled"
	errTypeCut         = "upstream_cut"
	errTypeStreamError = "upstream_error"
)

// startAttempt starts the span of attempt i (from 0) of c to a.
func startAttempt(ctx context.Context, c *Call, a providers.Attempt, i int) (context.Context, trace.Span) {
	return telemetry.StartAttempt(ctx, telemetry.Attempt{
		Operation: Operation(c.Protocol), Provider: c.Provider.Name, Model: c.Inspected.Model,
		Number: i + 1, BaseURL: a.BaseURL, RequestID: c.RequestID,
	})
}

// attemptFailed ends the span of an attempt that got no usable answer:
// status is its error status, or 0 when none arrived. An attempt the
// client cancelled does not count against the provider.
func (p *Proxy) attemptFailed(span trace.Span, c *Call, status int, errType string, err error) {
	if errType != errTypeCanceled {
		p.Health.Record(c.Provider.Name, false)
	}
	telemetry.EndAttempt(span, telemetry.Result{Status: status, ErrorType: errType, Err: err})
}

// attemptDelivered ends the span of the attempt whose answer went to the
// client, with what res and meta say of it.
func (p *Proxy) attemptDelivered(span trace.Span, c *Call, res *Result, meta *respMeta) {
	var errType string
	switch res.Outcome {
	case OutcomeOK:
	case OutcomePartial, OutcomeCanceled:
		errType = errTypeCanceled
	case OutcomeTimeout:
		errType = errTypeTimeout
	default:
		switch {
		case res.Status >= 400:
			errType = telemetry.StatusErrorType(res.Status)
		case res.Err == nil:
			errType = errTypeStreamError // an error event in the stream
		default:
			errType = errTypeCut
		}
	}
	if errType != errTypeCanceled {
		p.Health.Record(c.Provider.Name, !providerFault(res.Status, errType))
	}
	if !span.IsRecording() {
		return
	}
	r := telemetry.Result{Status: res.Status, Outcome: res.Outcome, ErrorType: errType, Err: res.Err}
	if res.Status >= 200 && res.Status < 300 {
		u := res.Usage
		r.HasTokens = true
		r.Tokens = telemetry.Tokens{Input: u.PromptTotal(), Output: u.Output,
			CacheRead: u.CacheRead, CacheCreation: u.CacheCreation, Reasoning: u.Reasoning}
	}
	if meta != nil {
		r.ResponseModel, r.FinishReasons = meta.model, meta.finish
	}
	telemetry.EndAttempt(span, r)
}

// providerFault reports whether an attempt that ended with status and
// errType counts as a failure of the provider: any failure but an error
// status that blames the client's request (a 4xx other than 429).
func providerFault(status int, errType string) bool {
	switch {
	case errType == "":
		return false
	case errType == telemetry.StatusErrorType(status):
		return retryable(status)
	}
	return true
}

// respMeta is what a traced attempt's answer says of itself: the model
// that answered and why it stopped. Its strings are copies: the answer's
// bytes are reused.
type respMeta struct {
	model  string
	finish []string
}

// setModel records the answering model, once.
func (m *respMeta) setModel(s string) {
	if m.model == "" && s != "" {
		m.model = strings.Clone(s)
	}
}

// addFinish records a finish reason.
func (m *respMeta) addFinish(s string) {
	if s != "" {
		m.finish = append(m.finish, strings.Clone(s))
	}
}

// finishKey marks an OpenAI chunk that may carry a finish reason.
var finishKey = []byte(`"finish_reason"`)

// openAIChunk reads the model of a stream's first chunk and the finish
// reasons of its choices. Only a chunk whose finish_reason is a string is
// parsed: most chunks have null there.
func (m *respMeta) openAIChunk(payload []byte) {
	if m.model == "" {
		m.setModel(gjson.GetBytes(payload, "model").Str)
	}
	if i := bytes.Index(payload, finishKey); i < 0 || !stringFollows(payload[i+len(finishKey):]) {
		return
	}
	for _, r := range gjson.GetBytes(payload, "choices.#.finish_reason").Array() {
		m.addFinish(r.Str)
	}
}

// stringFollows reports whether b, after a colon and spaces, begins a
// string.
func stringFollows(b []byte) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != ':' {
		return false
	}
	i = skipSpace(b, i+1)
	return i < len(b) && b[i] == '"'
}

// body reads a whole JSON answer's model and finish reasons.
func (m *respMeta) body(root gjson.Result, p Protocol) {
	m.setModel(root.Get("model").Str)
	if p == Responses {
		m.addFinish(root.Get("status").Str)
		return
	}
	if p == Anthropic {
		m.addFinish(root.Get("stop_reason").Str)
		return
	}
	for _, r := range root.Get("choices.#.finish_reason").Array() {
		m.addFinish(r.Str)
	}
}
