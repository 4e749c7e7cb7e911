package routing

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestLogAttempt: each attempt of a request that fell back to its
// fallback model is one line at info level naming its deployment, number,
// status and result; a request served by its first attempt logs it at
// debug level only; no line holds a key.
func TestLogAttempt(t *testing.T) {
	f := newFixture(t, "", [2]int{1, 1}, Options{}, true)
	core, logs := observer.New(zapcore.DebugLevel)
	l := zap.New(core)

	tg := next(t, f.r.Plan(Request{Route: f.route}))
	f.clock.Advance(250 * time.Millisecond)
	tg.Done(Outcome{Status: 200})
	tg.LogAttempt(l, AttemptLog{RequestID: "req_1", Operation: "chat", Model: "m", Status: 200, Result: AttemptOK, Delivered: true})

	p := f.r.Plan(Request{Route: f.route})
	var n int
	for i := range 4 {
		tg := next(t, p)
		n = tg.Number
		if i < 3 {
			tg.Done(Outcome{Status: 500})
			tg.LogAttempt(l, AttemptLog{RequestID: "req_2", Operation: "chat", Model: "m", Status: 500, Result: AttemptStatus5xx,
				Err: errors.New("upstream answered 500")})
			continue
		}
		if !tg.Fallback {
			t.Fatalf("fourth attempt on %s, want the fallback", tg.Deployment())
		}
		tg.Done(Outcome{Status: 200})
		tg.LogAttempt(l, AttemptLog{RequestID: "req_2", Operation: "chat", Model: "m", Status: 200, Result: AttemptOK, Delivered: true})
	}

	all := logs.All()
	if len(all) != 5 || n != 4 {
		t.Fatalf("%d lines for 5 attempts (last number %d)", len(all), n)
	}
	for i, want := range []struct {
		level    zapcore.Level
		attempt  int64
		status   int64
		result   string
		fallback bool
	}{
		{zapcore.DebugLevel, 1, 200, AttemptOK, false},
		{zapcore.InfoLevel, 1, 500, AttemptStatus5xx, false},
		{zapcore.InfoLevel, 2, 500, AttemptStatus5xx, false},
		{zapcore.InfoLevel, 3, 500, AttemptStatus5xx, false},
		{zapcore.InfoLevel, 4, 200, AttemptOK, true},
	} {
		e := all[i]
		m := e.ContextMap()
		if e.Message != AttemptLogMessage || e.Level != want.level || m["attempt"] != want.attempt || m["status"] != want.status ||
			m["result"] != want.result || m["fallback"] != want.fallback {
			t.Errorf("Test %d: %s %q %v, want %s attempt %d status %d result %s fallback %v", i, e.Level, e.Message, m,
				want.level, want.attempt, want.status, want.result, want.fallback)
		}
		if dep, _ := m["deployment"].(string); dep == "" || m["upstream"] == "" || m["provider"] == "" {
			t.Errorf("Test %d: no deployment, provider or upstream: %v", i, m)
		}
		for _, v := range m {
			if s, ok := v.(string); ok && (strings.Contains(s, "ka0") || strings.Contains(s, "ka1") || strings.Contains(s, "kb")) {
				t.Errorf("Test %d: a key in the log line: %v", i, m)
			}
		}
	}
	if d := all[0].ContextMap()["duration"]; d != 0.25 {
		t.Errorf("duration %v, want 0.25 (seconds on the router's clock)", d)
	}
	if all[4].ContextMap()["served_model"] != "f" {
		t.Errorf("fallback attempt: served_model %v, want f", all[4].ContextMap()["served_model"])
	}
}
