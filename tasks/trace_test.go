package tasks

import (
	"context"
	"errors"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/caddy-air/caddy-air/health"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/telemetry"
)

// TestSubmitDone checks how a submission attempt's result is classed: its
// span's error type, and whether it counts against the provider.
func TestSubmitDone(t *testing.T) {
	for i, tc := range []struct {
		status    int
		err       error
		wantType  string
		wantFault bool
	}{
		{status: 200, wantType: ""},
		{err: &upstreamError{name: errTimeout, msg: "late"}, wantType: "timeout", wantFault: true},
		{err: &upstreamError{name: errUpstream, msg: "refused", cause: errors.New("dial")}, wantType: "unavailable", wantFault: true},
		{status: 500, err: &upstreamError{status: 500, name: errUpstream}, wantType: "500", wantFault: true},
		{status: 429, err: &upstreamError{status: 429, name: errRateLimited}, wantType: "429", wantFault: true},
		{status: 400, err: &upstreamError{status: 400, name: errContentPolicy, permanent: true}, wantType: "400"},
		{status: 200, err: badAnswer("no id"), wantType: "bad_answer", wantFault: true},
	} {
		sr := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
		ctx, parent := tp.Tracer("test").Start(context.Background(), "handler")
		tr := health.NewTracker(0)
		s := &Service{health: tr}
		p := &providers.Provider{Name: "p"}
		task := &Task{ID: "task_1", Type: providers.KindImage, Model: "img"}
		_, span := startSubmit(ctx, task, p, providers.Attempt{BaseURL: "https://up.example/v1"}, 0)
		var out *outcome
		if tc.err == nil {
			out = &outcome{state: StatusSucceeded}
		}
		s.submitDone(span, p, &call{status: tc.status}, out, tc.err)
		parent.End()
		var got string
		for _, kv := range sr.Ended()[0].Attributes() {
			if kv.Key == telemetry.ErrorType {
				got = kv.Value.AsString()
			}
		}
		if got != tc.wantType {
			t.Errorf("Test %d: error.type %q, want %q", i, got, tc.wantType)
		}
		if st := tr.Stats("p"); st.Attempts != 1 || (st.Failures == 1) != tc.wantFault {
			t.Errorf("Test %d: tracker %+v, want a fault: %v", i, st, tc.wantFault)
		}
		_ = tp.Shutdown(context.Background())
	}
}
