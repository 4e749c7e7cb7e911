package tasks

import (
	"context"
	"errors"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/caddy-air/caddy-air/health"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/routing"
	"github.com/caddy-air/caddy-air/telemetry"
	"github.com/caddy-air/caddy-air/upstream"
)

// oneEnd is an attempter whose every attempt ends as it says.
type oneEnd upstream.End

func (oneEnd) Prepare(*routing.Target) error { return nil }

func (e oneEnd) Attempt(context.Context, *routing.Target, func() bool) upstream.End {
	return upstream.End(e)
}

// TestSubmitDone checks how a submission attempt's result is classed: its
// span's error type, its metric result, and whether it counts against the
// provider.
func TestSubmitDone(t *testing.T) {
	for i, tc := range []struct {
		status     int
		err        error
		wantType   string
		wantResult string
		wantFault  bool
	}{
		{status: 200, wantType: "", wantResult: routing.AttemptOK},
		{err: &upstreamError{name: errTimeout, msg: "late"}, wantType: "timeout", wantResult: routing.AttemptTimeout, wantFault: true},
		{err: &upstreamError{name: errUpstream, msg: "refused", cause: errors.New("dial")}, wantType: "unavailable", wantResult: routing.AttemptConnectError, wantFault: true},
		{status: 500, err: &upstreamError{status: 500, name: errUpstream}, wantType: "500", wantResult: routing.AttemptStatus5xx, wantFault: true},
		{status: 429, err: &upstreamError{status: 429, name: errRateLimited}, wantType: "429", wantResult: routing.AttemptStatus429, wantFault: true},
		{status: 400, err: &upstreamError{status: 400, name: errContentPolicy, permanent: true}, wantType: "400", wantResult: routing.AttemptStatus4xx},
		{status: 200, err: badAnswer("no id"), wantType: "bad_answer", wantResult: routing.AttemptOK, wantFault: true},
	} {
		sr := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
		ctx, parent := tp.Tracer("test").Start(context.Background(), "handler")
		tr := health.NewTracker(0)
		p := &providers.Provider{Name: "p", Protocol: providers.ProtocolOpenAI, BaseURLs: []string{"https://up.example/v1"}}
		rt := routing.ForProvider(p)
		plan := rt.Plan(routing.Request{Route: rt.Table().Routes()[0]})
		task := &Task{ID: "task_1", Type: providers.KindImage, Model: "img"}
		var out *outcome
		if tc.err == nil {
			out = &outcome{state: StatusSucceeded}
		}
		e := submitEnd(&call{status: tc.status}, out, tc.err, 0)
		if e.Result != tc.wantResult {
			t.Errorf("Test %d: result %q, want %q", i, e.Result, tc.wantResult)
		}
		run := upstream.Runner{Health: tr}
		if err := run.Run(ctx, plan, &upstream.Spec{Operation: task.Type, Model: task.Model, RequestID: task.ID, Client: "alice"}, oneEnd(e)); err != nil {
			t.Fatal(err)
		}
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
		// The router learns too: a 429 cools the upstream down, other
		// attempts count towards its breaker.
		st := rt.Status()[0]
		switch {
		case tc.status == 429 && st.Reason != "cooldown":
			t.Errorf("Test %d: upstream not cooling down after a 429: %+v", i, st)
		case tc.status != 429 && (st.Attempts != 1 || (st.Failures == 1) != tc.wantFault):
			t.Errorf("Test %d: router saw %+v, want a fault: %v", i, st, tc.wantFault)
		}
		_ = tp.Shutdown(context.Background())
	}
}
