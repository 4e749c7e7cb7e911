package telemetry

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// recorded returns a context with a recording server span, and the
// recorder of every span that ends under it.
func recorded(t *testing.T) (context.Context, *tracetest.SpanRecorder) {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, span := tp.Tracer("test").Start(context.Background(), "server")
	t.Cleanup(func() { span.End() })
	return ctx, sr
}

// attrs maps a span's attributes by key.
func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

func TestAttemptSpan(t *testing.T) {
	ctx, sr := recorded(t)
	actx, span := StartAttempt(ctx, Attempt{
		Operation: "chat", Provider: "openai", Model: "gpt-x", Number: 2,
		BaseURL: "https://user:secret@api.example.com:8443/v1?key=sk-123", RequestID: "req_1",
	})
	h := http.Header{}
	Inject(actx, h)
	EndAttempt(span, Result{
		Status: 200, Outcome: "ok", ResponseModel: "gpt-x-2025", FinishReasons: []string{"stop", "length"},
		HasTokens: true, Tokens: Tokens{Input: 30, Output: 7, CacheRead: 10, Reasoning: 2},
	})
	spans := sr.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans ended, want 1", len(spans))
	}
	s := spans[0]
	if s.Name() != "chat gpt-x" || s.SpanKind() != trace.SpanKindClient {
		t.Errorf("span %q kind %v, want %q client", s.Name(), s.SpanKind(), "chat gpt-x")
	}
	a := attrs(s)
	for _, tc := range []struct {
		key  attribute.Key
		want string
	}{
		{OperationName, "chat"}, {ProviderName, "openai"}, {RequestModel, "gpt-x"},
		{AttemptNumber, "2"}, {ServerAddress, "api.example.com"}, {ServerPort, "8443"},
		{HTTPStatus, "200"}, {ResponseModel, "gpt-x-2025"}, {FinishReasons, `["stop","length"]`},
		{InputTokens, "30"}, {OutputTokens, "7"}, {CacheReadTokens, "10"}, {ReasoningTokens, "2"},
		{RequestID, "req_1"}, {Outcome, "ok"},
	} {
		if got := a[tc.key].Emit(); got != tc.want {
			t.Errorf("%s = %q, want %q", tc.key, got, tc.want)
		}
	}
	if _, ok := a[CacheCreationTokens]; ok {
		t.Error("a zero cache creation count is recorded")
	}
	for k, v := range a {
		if strings.Contains(v.Emit(), "secret") || strings.Contains(v.Emit(), "sk-123") {
			t.Errorf("%s leaks a credential: %s", k, v.Emit())
		}
	}
	tp := h.Get("Traceparent")
	want := "00-" + s.SpanContext().TraceID().String() + "-" + s.SpanContext().SpanID().String() + "-01"
	if tp != want {
		t.Errorf("traceparent %q, want %q (the attempt's span)", tp, want)
	}
	if s.Parent().SpanID() != trace.SpanContextFromContext(ctx).SpanID() {
		t.Error("the attempt span is not a child of the request's span")
	}
}

func TestAttemptErrors(t *testing.T) {
	for i, tc := range []struct {
		res      Result
		wantType string
		wantDesc string
	}{
		{Result{Status: 503, ErrorType: StatusErrorType(503)}, "503", "503"},
		{Result{ErrorType: "unavailable", Err: &url.Error{Op: "Post", URL: "https://k:secret@h/v1", Err: errors.New("connection refused")}},
			"unavailable", "Post: connection refused"},
		{Result{ErrorType: "timeout", Err: errors.New("upstream timed out")}, "timeout", "upstream timed out"},
	} {
		ctx, sr := recorded(t)
		_, span := StartAttempt(ctx, Attempt{Operation: "chat", Provider: "p", Model: "m", Number: 1})
		EndAttempt(span, tc.res)
		s := sr.Ended()[0]
		if got := attrs(s)[ErrorType].AsString(); got != tc.wantType {
			t.Errorf("Test %d: error.type %q, want %q", i, got, tc.wantType)
		}
		if s.Status().Code != codes.Error || s.Status().Description != tc.wantDesc {
			t.Errorf("Test %d: status %v %q, want error %q", i, s.Status().Code, s.Status().Description, tc.wantDesc)
		}
	}
}

func TestRouteSpan(t *testing.T) {
	ctx, sr := recorded(t)
	EndRoute(StartRoute(ctx, Route{Operation: "messages", Model: "claude"}), "anthropic", "claude-3", "")
	EndRoute(StartRoute(ctx, Route{Operation: "chat", Model: "nope"}), "", "", "model_not_found")
	spans := sr.Ended()
	if len(spans) != 2 || spans[0].Name() != RouteSpan {
		t.Fatalf("spans %v", spans)
	}
	ok, bad := attrs(spans[0]), attrs(spans[1])
	if ok[ProviderName].AsString() != "anthropic" || ok[UpstreamModel].AsString() != "claude-3" || ok[OperationName].AsString() != "messages" {
		t.Errorf("resolved route attributes %v", ok)
	}
	if bad[ErrorType].AsString() != "model_not_found" || spans[1].Status().Code != codes.Error {
		t.Errorf("failed route: %v, status %v", bad, spans[1].Status())
	}
}

// TestOff: without a recording span nothing is made, injected or
// allocated.
func TestOff(t *testing.T) {
	ctx := context.Background()
	h := http.Header{}
	allocs := testing.AllocsPerRun(100, func() {
		actx, span := StartAttempt(ctx, Attempt{Operation: "chat", Provider: "p", Model: "m", Number: 1, BaseURL: "http://h"})
		Inject(actx, h)
		EndAttempt(span, Result{Status: 200, HasTokens: true, FinishReasons: nil})
		EndRoute(StartRoute(ctx, Route{Operation: "chat", Model: "m"}), "p", "", "")
	})
	if allocs != 0 {
		t.Errorf("%v allocations per request with tracing off, want 0", allocs)
	}
	if len(h) != 0 {
		t.Errorf("headers injected without a span: %v", h)
	}
}

// BenchmarkAttemptOff is the cost of an attempt's span calls with tracing
// off: go test -bench AttemptOff -benchmem ./telemetry/
func BenchmarkAttemptOff(b *testing.B) {
	ctx := context.Background()
	h := http.Header{}
	b.ReportAllocs()
	for b.Loop() {
		actx, span := StartAttempt(ctx, Attempt{Operation: "chat", Provider: "p", Model: "m", Number: 1, BaseURL: "http://h"})
		Inject(actx, h)
		EndAttempt(span, Result{Status: 200, HasTokens: true})
	}
}
