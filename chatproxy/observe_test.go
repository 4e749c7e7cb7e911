package chatproxy

import (
	"context"
	"github.com/caddy-air/caddy-air/dialect/anthropic"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/caddy-air/caddy-air/health"
	"github.com/caddy-air/caddy-air/telemetry"
)

// tracedContext returns a context with a recording request span, and the
// recorder of the spans that end under it.
func tracedContext(t *testing.T) (context.Context, *tracetest.SpanRecorder) {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, span := tp.Tracer("test").Start(context.Background(), "handler")
	t.Cleanup(func() { span.End() })
	return ctx, sr
}

// spanAttrs maps a span's attributes by key, as emitted strings.
func spanAttrs(s sdktrace.ReadOnlySpan) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value.Emit()
	}
	return m
}

// traceparent is the W3C header a span's context propagates as.
func traceparent(s sdktrace.ReadOnlySpan) string {
	return "00-" + s.SpanContext().TraceID().String() + "-" + s.SpanContext().SpanID().String() + "-01"
}

// TestServeTracesRetries: a request retried past a dead base URL and a 503
// has one span per attempt, each upstream gets its attempt's traceparent,
// and the provider's tracker counts every attempt.
func TestServeTracesRetries(t *testing.T) {
	fail := newUpstream(t, answer(503, "application/json", `{"error":{"message":"busy"}}`))
	stream := []string{
		chunk(`[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]`, "null"),
		chunk(`[{"index":0,"delta":{},"finish_reason": "length"}]`, "null"),
		chunk(`[]`, `{"prompt_tokens":40,"completion_tokens":9,"total_tokens":49,"prompt_tokens_details":{"cached_tokens":32},"completion_tokens_details":{"reasoning_tokens":3}}`),
		"data: [DONE]\n\n",
	}
	ok := newUpstream(t, sseAnswer(stream))
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`
	ctx, sr := tracedContext(t)
	tr := health.NewTracker(0)
	p := &Proxy{Health: tr}
	res := serveAll(p, httptest.NewRecorder(), clientRequest(ctx, body), chatCall(t, openai.Wire, provider("openai", 0, closedURL(), fail.URL+"/v1", ok.URL+"/v1"), body, ""))
	if res.Outcome != OutcomeOK || res.Attempts != 3 {
		t.Fatalf("result %+v", res)
	}
	spans := sr.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 3", len(spans))
	}
	okHost := strings.TrimPrefix(ok.URL, "http://")
	for i, want := range []map[attribute.Key]string{
		{telemetry.AttemptNumber: "1", telemetry.ErrorType: "unavailable"},
		{telemetry.AttemptNumber: "2", telemetry.ErrorType: "503", telemetry.HTTPStatus: "503"},
		{telemetry.AttemptNumber: "3", telemetry.HTTPStatus: "200", telemetry.Outcome: "ok",
			telemetry.ResponseModel: "qwen3", telemetry.FinishReasons: `["length"]`,
			telemetry.InputTokens: "40", telemetry.OutputTokens: "9", telemetry.CacheReadTokens: "32", telemetry.ReasoningTokens: "3",
			telemetry.ServerAddress: okHost[:strings.LastIndexByte(okHost, ':')]},
	} {
		s := spans[i]
		got := spanAttrs(s)
		if s.Name() != "chat m" || s.SpanKind() != trace.SpanKindClient || got[telemetry.ProviderName] != "prov" || got[telemetry.RequestModel] != "m" {
			t.Errorf("span %d: %q %v %v", i, s.Name(), s.SpanKind(), got)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("span %d: %s = %q, want %q", i, k, got[k], v)
			}
		}
		if _, has := got[telemetry.ErrorType]; has != (i < 2) {
			t.Errorf("span %d: error.type %q", i, got[telemetry.ErrorType])
		}
	}
	if h := fail.headers[0].Get("Traceparent"); h != traceparent(spans[1]) {
		t.Errorf("the failing upstream got traceparent %q, want its attempt's %q", h, traceparent(spans[1]))
	}
	if h := ok.headers[0].Get("Traceparent"); h != traceparent(spans[2]) {
		t.Errorf("the answering upstream got traceparent %q, want its attempt's %q", h, traceparent(spans[2]))
	}
	if st := tr.Stats("prov"); st.Attempts != 3 || st.Failures != 2 {
		t.Errorf("tracker %+v, want 3 attempts, 2 failures", st)
	}
}

// TestServeTracesMessages: an Anthropic answer's model and stop reason,
// streamed or whole, reach the span; a client error does not count
// against the provider; without a span nothing is propagated.
func TestServeTracesMessages(t *testing.T) {
	streamed := newUpstream(t, sseAnswer([]string{
		anthropicEvent("message_start", `{"type":"message_start","message":{"model":"claude-x-1","usage":{"input_tokens":10,"cache_creation_input_tokens":5,"output_tokens":1}}}`),
		anthropicEvent("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}`),
		anthropicEvent("message_stop", `{"type":"message_stop"}`),
	}))
	whole := newUpstream(t, answer(200, "application/json", `{"model":"claude-y","stop_reason":"max_tokens","usage":{"input_tokens":3,"output_tokens":4}}`))
	refused := newUpstream(t, answer(400, "application/json", `{"type":"error","error":{"type":"invalid_request_error","message":"no"}}`))
	for i, tc := range []struct {
		up     *fakeUpstream
		stream bool
		want   map[attribute.Key]string
	}{
		{streamed, true, map[attribute.Key]string{telemetry.OperationName: "messages", telemetry.ResponseModel: "claude-x-1",
			telemetry.FinishReasons: `["end_turn"]`, telemetry.InputTokens: "15", telemetry.OutputTokens: "7", telemetry.CacheCreationTokens: "5"}},
		{whole, false, map[attribute.Key]string{telemetry.ResponseModel: "claude-y", telemetry.FinishReasons: `["max_tokens"]`,
			telemetry.InputTokens: "3", telemetry.OutputTokens: "4"}},
		{refused, false, map[attribute.Key]string{telemetry.ErrorType: "400", telemetry.Outcome: OutcomeUpstreamError}},
	} {
		body := `{"model":"claude","max_tokens":10,"messages":[{"role":"user","content":"x"}]}`
		if tc.stream {
			body = `{"model":"claude","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"x"}]}`
		}
		ctx, sr := tracedContext(t)
		tr := health.NewTracker(0)
		serveAll(&Proxy{Health: tr}, httptest.NewRecorder(), clientRequest(ctx, body), chatCall(t, anthropic.Wire, provider("anthropic", 0, tc.up.URL), body, ""))
		spans := sr.Ended()
		if len(spans) != 1 {
			t.Fatalf("Test %d: %d spans", i, len(spans))
		}
		got := spanAttrs(spans[0])
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("Test %d: %s = %q, want %q", i, k, got[k], v)
			}
		}
		if st := tr.Stats("prov"); st.Attempts != 1 || st.Failures != 0 {
			t.Errorf("Test %d: tracker %+v, want 1 attempt and no failure", i, st)
		}
	}
	serveAll(&Proxy{}, httptest.NewRecorder(), clientRequest(context.Background(), `{"model":"claude","max_tokens":10,"messages":[{"role":"user","content":"x"}]}`),
		chatCall(t, anthropic.Wire, provider("anthropic", 0, whole.URL), `{"model":"claude","max_tokens":10,"messages":[{"role":"user","content":"x"}]}`, ""))
	if h := whole.headers[len(whole.headers)-1].Get("Traceparent"); h != "" {
		t.Errorf("traceparent %q sent without tracing", h)
	}
}
