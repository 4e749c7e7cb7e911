// Package telemetry defines caddy-air's spans: a routing span and one span
// per upstream attempt, named and attributed after the OpenTelemetry GenAI
// semantic conventions. It does not import Caddy. The spans are children of
// the span in the request's context, which Caddy's tracing handler puts
// there, and are made by that span's TracerProvider, so no global provider
// is needed; when the context's span does not record (tracing is off, or the
// request is not sampled), no span is made and nothing is allocated.
package telemetry

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// instrumentation names caddy-air's tracer.
const instrumentation = "github.com/caddy-air/caddy-air"

// Attribute keys of caddy-air's spans. The gen_ai.* keys, error.type,
// server.* and http.response.status_code are those of the OpenTelemetry
// semantic conventions; air.* keys are caddy-air's own.
const (
	// OperationName is the endpoint: chat, messages, responses,
	// embeddings, count_tokens, image or video.
	OperationName = attribute.Key("gen_ai.operation.name")
	// ProviderName is the provider's name in the air block.
	ProviderName = attribute.Key("gen_ai.provider.name")
	// RequestModel is the model the client asked for.
	RequestModel = attribute.Key("gen_ai.request.model")
	// ResponseModel is the model the upstream says answered.
	ResponseModel = attribute.Key("gen_ai.response.model")
	// InputTokens is every prompt token, cached ones included.
	InputTokens = attribute.Key("gen_ai.usage.input_tokens")
	// OutputTokens is every generated token, reasoning included.
	OutputTokens = attribute.Key("gen_ai.usage.output_tokens")
	// CacheReadTokens is the prompt tokens read from the provider's cache.
	CacheReadTokens = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	// CacheCreationTokens is the prompt tokens written to the cache.
	CacheCreationTokens = attribute.Key("gen_ai.usage.cache_creation.input_tokens")
	// ReasoningTokens is the part of the output spent on reasoning.
	ReasoningTokens = attribute.Key("gen_ai.usage.reasoning.output_tokens")
	// FinishReasons is why the model stopped, one per choice.
	FinishReasons = attribute.Key("gen_ai.response.finish_reasons")
	// ErrorType is the class of a failure: an HTTP status, or a word such
	// as timeout, unavailable, upstream_cut or model_not_found.
	ErrorType = attribute.Key("error.type")
	// ServerAddress is the host of the attempt's base URL.
	ServerAddress = attribute.Key("server.address")
	// ServerPort is the port of the attempt's base URL.
	ServerPort = attribute.Key("server.port")
	// HTTPStatus is the upstream's HTTP status.
	HTTPStatus = attribute.Key("http.response.status_code")
	// AttemptNumber counts a request's upstream attempts from 1.
	AttemptNumber = attribute.Key("air.attempt")
	// UpstreamModel is the model id sent upstream, when a route renames it.
	UpstreamModel = attribute.Key("air.upstream_model")
	// Outcome is the request's outcome (ok, partial, upstream_error, ...).
	Outcome = attribute.Key("air.outcome")
	// RequestID is the request's ledger record id, or the task id.
	RequestID = attribute.Key("air.request_id")
)

// RouteSpan is the name of the span that resolves a model to a provider.
const RouteSpan = "air.route"

// Recording reports whether ctx carries a span that records, i.e. whether
// the spans below would be made.
func Recording(ctx context.Context) bool { return trace.SpanFromContext(ctx).IsRecording() }

// start starts a child of ctx's span with that span's provider, or, when
// ctx's span does not record, returns ctx and that span: ending it, or
// setting its attributes, does nothing.
func start(ctx context.Context, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, parent
	}
	return parent.TracerProvider().Tracer(instrumentation).Start(ctx, name, trace.WithSpanKind(kind))
}

// Route is a model resolution.
type Route struct {
	// Operation is the endpoint.
	Operation string
	// Model is the model the client asked for.
	Model string
}

// StartRoute starts the routing span of r.
func StartRoute(ctx context.Context, r Route) trace.Span {
	_, span := start(ctx, RouteSpan, trace.SpanKindInternal)
	if span.IsRecording() {
		span.SetAttributes(OperationName.String(r.Operation), RequestModel.String(r.Model))
	}
	return span
}

// EndRoute ends a routing span: with the provider and upstream model it
// resolved to, or with errType when the model could not be routed.
func EndRoute(span trace.Span, provider, upstreamModel, errType string) {
	if !span.IsRecording() {
		return
	}
	if provider != "" {
		span.SetAttributes(ProviderName.String(provider))
	}
	if upstreamModel != "" {
		span.SetAttributes(UpstreamModel.String(upstreamModel))
	}
	if errType != "" {
		span.SetAttributes(ErrorType.String(errType))
		span.SetStatus(codes.Error, errType)
	}
	span.End()
}

// Attempt is one upstream attempt.
type Attempt struct {
	// Operation is the endpoint.
	Operation string
	// Provider is the provider's name.
	Provider string
	// Model is the model the client asked for.
	Model string
	// Number counts the request's attempts from 1.
	Number int
	// BaseURL is where the attempt goes; only its host and port are
	// recorded, never its user info, path or query.
	BaseURL string
	// RequestID identifies the request.
	RequestID string
}

// StartAttempt starts the client span of upstream attempt a, named
// "{operation} {model}" as the GenAI conventions ask. The returned context
// carries it: Inject the context into the attempt's request headers.
func StartAttempt(ctx context.Context, a Attempt) (context.Context, trace.Span) {
	if !Recording(ctx) {
		return ctx, trace.SpanFromContext(ctx)
	}
	ctx, span := start(ctx, a.Operation+" "+a.Model, trace.SpanKindClient)
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs,
		OperationName.String(a.Operation),
		ProviderName.String(a.Provider),
		RequestModel.String(a.Model),
		AttemptNumber.Int(a.Number))
	if a.RequestID != "" {
		attrs = append(attrs, RequestID.String(a.RequestID))
	}
	if host, port := hostPort(a.BaseURL); host != "" {
		attrs = append(attrs, ServerAddress.String(host))
		if port > 0 {
			attrs = append(attrs, ServerPort.Int(port))
		}
	}
	span.SetAttributes(attrs...)
	return ctx, span
}

// hostPort returns the host and port of a base URL, the port defaulting
// to the scheme's.
func hostPort(base string) (string, int) {
	u, err := url.Parse(base)
	if err != nil {
		return "", 0
	}
	port, _ := strconv.Atoi(u.Port())
	if port == 0 {
		switch u.Scheme {
		case "https":
			port = 443
		case "http":
			port = 80
		}
	}
	return u.Hostname(), port
}

// Tokens is the token usage of an answer.
type Tokens struct {
	// Input is every prompt token, cached ones included.
	Input int64
	// Output is every generated token, reasoning included.
	Output int64
	// CacheRead and CacheCreation are the cached parts of Input.
	CacheRead, CacheCreation int64
	// Reasoning is the reasoning part of Output.
	Reasoning int64
}

// Result is what an upstream attempt came to.
type Result struct {
	// Status is the upstream's HTTP status, 0 if none arrived.
	Status int
	// ErrorType classes a failed attempt; empty when it succeeded.
	ErrorType string
	// Err describes the failure, for the span's status.
	Err error
	// Outcome is the request's outcome, for the attempt that answered.
	Outcome string
	// Tokens is the usage, recorded when HasTokens is set.
	Tokens    Tokens
	HasTokens bool
	// ResponseModel is the model the upstream says answered.
	ResponseModel string
	// FinishReasons are the choices' finish (or stop) reasons.
	FinishReasons []string
}

// EndAttempt records r on an attempt's span and ends it.
func EndAttempt(span trace.Span, r Result) {
	if !span.IsRecording() {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 10)
	if r.Status > 0 {
		attrs = append(attrs, HTTPStatus.Int(r.Status))
	}
	if r.Outcome != "" {
		attrs = append(attrs, Outcome.String(r.Outcome))
	}
	if r.ResponseModel != "" {
		attrs = append(attrs, ResponseModel.String(r.ResponseModel))
	}
	if len(r.FinishReasons) > 0 {
		attrs = append(attrs, FinishReasons.StringSlice(r.FinishReasons))
	}
	if r.HasTokens {
		t := r.Tokens
		attrs = append(attrs, InputTokens.Int64(t.Input), OutputTokens.Int64(t.Output))
		if t.CacheRead > 0 {
			attrs = append(attrs, CacheReadTokens.Int64(t.CacheRead))
		}
		if t.CacheCreation > 0 {
			attrs = append(attrs, CacheCreationTokens.Int64(t.CacheCreation))
		}
		if t.Reasoning > 0 {
			attrs = append(attrs, ReasoningTokens.Int64(t.Reasoning))
		}
	}
	if r.ErrorType != "" {
		attrs = append(attrs, ErrorType.String(r.ErrorType))
		desc := r.ErrorType
		if r.Err != nil {
			desc = errorText(r.Err)
		}
		span.SetStatus(codes.Error, desc)
	}
	span.SetAttributes(attrs...)
	span.End()
}

// errorText describes err without the URL a *url.Error names, which could
// carry what a base URL should not show.
func errorText(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Op + ": " + ue.Err.Error()
	}
	return err.Error()
}

// StatusErrorType is the error.type of an upstream HTTP status: the
// status itself when it is an error (400 and up), else empty.
func StatusErrorType(status int) string {
	if status < 400 {
		return ""
	}
	return strconv.Itoa(status)
}

// traceContext is the W3C Trace Context propagator. Only traceparent and
// tracestate go upstream: not baggage, which may carry what the client
// meant for the gateway, to a third party.
var traceContext propagation.TraceContext

// Inject writes the W3C traceparent (and tracestate) of ctx's span into h,
// the headers of an upstream request. Without a valid span context it
// writes nothing and costs a context lookup.
func Inject(ctx context.Context, h http.Header) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	traceContext.Inject(ctx, propagation.HeaderCarrier(h))
}
