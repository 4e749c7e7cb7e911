package integration

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an in-process OTLP/HTTP trace receiver: it decodes the
// protobuf export requests posted to /v1/traces and keeps their spans.
type otlpReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
}

// newOTLPReceiver starts a receiver.
func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	rc := &otlpReceiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" {
			http.NotFound(w, r)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		data, err := io.ReadAll(body)
		var req coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(data, &req)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				rc.spans = append(rc.spans, ss.Spans...)
			}
		}
		rc.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(rc.Close)
	return rc
}

// named returns the received spans called name.
func (rc *otlpReceiver) named(name string) []*tracepb.Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range rc.spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// waitSpans polls until n spans called name arrived, or fails after a
// deadline.
func (rc *otlpReceiver) waitSpans(t *testing.T, name string, n int) []*tracepb.Span {
	t.Helper()
	var got []*tracepb.Span
	eventually(t, 20*time.Second, fmt.Sprintf("%d spans named %q", n, name), func() bool {
		got = rc.named(name)
		return len(got) >= n
	})
	return got
}

// attr returns a span attribute as a string ("" if absent); arrays read
// as their elements joined by commas.
func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key != key {
			continue
		}
		v := kv.Value
		switch {
		case v.GetArrayValue() != nil:
			var parts []string
			for _, e := range v.GetArrayValue().Values {
				parts = append(parts, e.GetStringValue())
			}
			return strings.Join(parts, ",")
		case v.GetStringValue() != "":
			return v.GetStringValue()
		default:
			return fmt.Sprint(v.GetIntValue())
		}
	}
	return ""
}

// startTracedGateway sets the OTLP environment Caddy's tracing handler
// reads, to export to rc quickly, and starts a gateway with o and the
// tracing directive on.
func startTracedGateway(t *testing.T, rc *otlpReceiver, o gatewayOptions) *gateway {
	t.Helper()
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", rc.URL+"/v1/traces")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	o.Site = "tracing {\n\t\tspan air_request\n\t}\n" + o.Site
	return startGateway(t, o)
}

// TestTracesPerAttempt runs, with Caddy's tracing directive on, a chat
// request that the upstream answers 503 then 200, a messages request and
// an image task, and checks the spans the OTLP receiver gets: one per
// upstream attempt with its number, status and error type, the usage of
// the ledger, the response model and finish reason, the routing span, and
// a traceparent at the upstream naming each attempt's span.
func TestTracesPerAttempt(t *testing.T) {
	rc := newOTLPReceiver(t)
	var chatHits atomic.Int32
	chatUp := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if chatHits.Add(1) == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"error":{"message":"overloaded","type":"server_error"}}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"trace-upstream-2025","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":57,"completion_tokens":11,"total_tokens":68,"prompt_tokens_details":{"cached_tokens":17}}}`)
	})
	msgUp := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"m1","type":"message","role":"assistant","model":"claude-trace-1","content":[{"type":"text","text":"hi"}],`+
			`"stop_reason":"end_turn","usage":{"input_tokens":9,"output_tokens":4}}`)
	})
	startTracedGateway(t, rc, gatewayOptions{
		Providers: providerBlock("traced", "openai", "", chatUp) + "\n\t\t" + providerBlock("traced-claude", "anthropic", "", msgUp),
		Models:    "model trace-model traced trace-upstream\n\t\tmodel trace-claude traced-claude",
	})
	key, _ := createKey(t, "tracer")

	if code, _, b := postChat(t, key, `{"model":"trace-model","messages":[{"role":"user","content":"hi"}]}`); code != 200 {
		t.Fatalf("chat: %d %s", code, b)
	}
	if code, _, b := call(t, http.MethodPost, "/v1/messages", key, `{"model":"trace-claude","max_tokens":20,"messages":[{"role":"user","content":"hi"}]}`,
		"Anthropic-Version", "2023-06-01"); code != 200 {
		t.Fatalf("messages: %d %s", code, b)
	}
	if code, _, b := call(t, http.MethodPost, "/v1/tasks", key, `{"model":"mock-image","prompt":"a fox","size":"256x256"}`); code != 202 {
		t.Fatalf("task: %d %s", code, b)
	}
	recs := waitLedger(t, "tracer", 3)

	attempts := rc.waitSpans(t, "chat trace-model", 2)
	if len(attempts) != 2 {
		t.Fatalf("%d chat attempt spans, want 2", len(attempts))
	}
	if attr(attempts[0], "air.attempt") != "1" {
		attempts[0], attempts[1] = attempts[1], attempts[0]
	}
	first, second := attempts[0], attempts[1]
	for _, tc := range []struct {
		span      *tracepb.Span
		key, want string
	}{
		{first, "air.attempt", "1"}, {first, "http.response.status_code", "503"}, {first, "error.type", "503"},
		{second, "air.attempt", "2"}, {second, "http.response.status_code", "200"}, {second, "error.type", ""},
		{second, "gen_ai.operation.name", "chat"}, {second, "gen_ai.provider.name", "traced"},
		{second, "gen_ai.request.model", "trace-model"}, {second, "gen_ai.response.model", "trace-upstream-2025"},
		{second, "gen_ai.response.finish_reasons", "stop"}, {second, "air.outcome", "ok"},
		{second, "gen_ai.usage.input_tokens", "57"}, {second, "gen_ai.usage.output_tokens", "11"},
		{second, "gen_ai.usage.cache_read.input_tokens", "17"}, {second, "server.address", "127.0.0.1"},
	} {
		if got := attr(tc.span, tc.key); got != tc.want {
			t.Errorf("attempt %s: %s = %q, want %q", attr(tc.span, "air.attempt"), tc.key, got, tc.want)
		}
	}
	if first.Kind != tracepb.Span_SPAN_KIND_CLIENT || first.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("first attempt: kind %v status %v", first.Kind, first.Status)
	}
	// Token counts are the ledger's.
	for _, r := range recs {
		if r.Endpoint != "chat" {
			continue
		}
		if in := r.Usage.Input + r.Usage.CacheRead + r.Usage.CacheCreation; fmt.Sprint(in) != attr(second, "gen_ai.usage.input_tokens") ||
			fmt.Sprint(r.Usage.Output) != attr(second, "gen_ai.usage.output_tokens") || r.ID != attr(second, "air.request_id") {
			t.Errorf("span tokens %s/%s for %s, ledger %+v", attr(second, "gen_ai.usage.input_tokens"), attr(second, "gen_ai.usage.output_tokens"), attr(second, "air.request_id"), r)
		}
	}
	// Each upstream request carried its attempt's span as traceparent.
	chatUp.mu.Lock()
	headers := append([]http.Header(nil), chatUp.headers...)
	chatUp.mu.Unlock()
	for i, s := range []*tracepb.Span{first, second} {
		want := "00-" + hex.EncodeToString(s.TraceId) + "-" + hex.EncodeToString(s.SpanId) + "-01"
		if got := headers[i].Get("Traceparent"); got != want {
			t.Errorf("upstream request %d: traceparent %q, want %q", i+1, got, want)
		}
	}
	// Both attempts and the routing span belong to the request's trace.
	routes := rc.waitSpans(t, "air.route", 3)
	var route *tracepb.Span
	for _, s := range routes {
		if attr(s, "gen_ai.request.model") == "trace-model" {
			route = s
		}
	}
	if route == nil || attr(route, "gen_ai.provider.name") != "traced" || attr(route, "air.upstream_model") != "trace-upstream" ||
		string(route.TraceId) != string(first.TraceId) || string(second.TraceId) != string(first.TraceId) {
		t.Errorf("routing span %v, attempts in traces %x %x", route, first.TraceId, second.TraceId)
	}
	if server := rc.named("air_request"); !hasSpan(server, first.TraceId, first.ParentSpanId) {
		t.Errorf("the attempts' parent is not the request's server span")
	}

	msg := rc.waitSpans(t, "messages trace-claude", 1)[0]
	for k, want := range map[string]string{"gen_ai.operation.name": "messages", "gen_ai.provider.name": "traced-claude",
		"gen_ai.response.model": "claude-trace-1", "gen_ai.response.finish_reasons": "end_turn",
		"gen_ai.usage.input_tokens": "9", "gen_ai.usage.output_tokens": "4"} {
		if got := attr(msg, k); got != want {
			t.Errorf("messages span: %s = %q, want %q", k, got, want)
		}
	}
	if got := msgUp.lastHeader().Get("Traceparent"); !strings.Contains(got, hex.EncodeToString(msg.SpanId)) {
		t.Errorf("messages upstream traceparent %q, want span %x", got, msg.SpanId)
	}

	task := rc.waitSpans(t, "image mock-image", 1)[0]
	if attr(task, "gen_ai.provider.name") != "mock" || attr(task, "air.attempt") != "1" || attr(task, "http.response.status_code") != "200" ||
		attr(task, "air.outcome") != "succeeded" || !strings.HasPrefix(attr(task, "air.request_id"), "task_") {
		t.Errorf("task span attributes %v", task.Attributes)
	}
}

// hasSpan reports whether spans hold the span id of trace.
func hasSpan(spans []*tracepb.Span, trace, id []byte) bool {
	for _, s := range spans {
		if string(s.TraceId) == string(trace) && string(s.SpanId) == string(id) {
			return true
		}
	}
	return false
}
