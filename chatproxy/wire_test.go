package chatproxy

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect"
)

// tallyWire is a wire protocol the engine has never heard of: its streams
// are "data: +N" events, each N output tokens, ended by "data: end"; its
// bodies are a bare number of output tokens; its errors are in Anthropic's
// shape and its upstreams take Anthropic's key header. It lives only in
// this test: plugging it needs no change to the engine.
type tallyWire struct{}

func (tallyWire) Auth() string               { return "anthropic" }
func (tallyWire) Operation() string          { return "tally" }
func (tallyWire) ErrorShape() apierror.Shape { return apierror.ShapeAnthropic }
func (tallyWire) StreamUsage() bool          { return false }
func (tallyWire) NewTap(cfg dialect.TapConfig) dialect.Tap {
	return &tallyTap{meta: cfg.Meta}
}

// tallyTap is tallyWire's tap.
type tallyTap struct {
	out      int64
	terminal bool
	reported bool
	meta     *dialect.Meta
}

func (t *tallyTap) Event(ev []byte) []byte {
	data := bytes.TrimSpace(bytes.TrimPrefix(ev, []byte("data:")))
	if string(data) == "end" {
		t.terminal = true
		return ev
	}
	if n, err := strconv.ParseInt(string(bytes.TrimPrefix(data, []byte("+"))), 10, 64); err == nil {
		t.out, t.reported = t.out+n, true
	}
	return ev
}
func (t *tallyTap) Piece([]byte)       {}
func (t *tallyTap) Large([]byte, bool) {}
func (t *tallyTap) Tail([]byte)        {}
func (t *tallyTap) SetOutBytes(int64)  {}
func (t *tallyTap) Body(b []byte, complete bool) {
	if n, err := strconv.ParseInt(string(b), 10, 64); err == nil && complete {
		t.out, t.reported = n, true
	}
}
func (t *tallyTap) Terminal() bool      { return t.terminal }
func (t *tallyTap) UpstreamError() bool { return false }
func (t *tallyTap) Result(promptBytes int, cut, gone bool) dialect.TapResult {
	src := billing.SourceReported
	if !t.reported || cut {
		src = billing.SourcePartial
	}
	return dialect.TapResult{Usage: billing.Usage{Input: 1, Output: t.out}, Source: src, ServiceTier: "tally"}
}
func (t *tallyTap) Release() {}

// TestServeAnyWire drives Serve end to end with tallyWire: the engine
// authenticates as the wire says, forwards its stream byte for byte,
// holds its final event, bills the usage its tap read, tells a cut stream
// by the tap's Terminal, and answers errors in its shape.
func TestServeAnyWire(t *testing.T) {
	stream := []string{"data: +3\n\n", "data: +4\n\n", "data: end\n\n"}
	for i, tc := range []struct {
		name    string
		handler func(http.ResponseWriter, *http.Request)
		body    string
		status  int
		outcome string
		usage   billing.Usage
		source  billing.Source
	}{
		{"stream", sseAnswer(stream), "data: +3\n\ndata: +4\n\ndata: end\n\n", 200, OutcomeOK, billing.Usage{Input: 1, Output: 7}, billing.SourceReported},
		{"cut stream", sseAnswer(stream[:2]), "", 200, OutcomeUpstreamError, billing.Usage{Input: 1, Output: 7}, billing.SourcePartial},
		{"body", answer(200, "application/json", "12"), "12", 200, OutcomeOK, billing.Usage{Input: 1, Output: 12}, billing.SourceReported},
		{"error", answer(400, "application/json", `{"error":{"message":"bad tally"}}`), `{"type":"error","error":{"type":"invalid_request_error","message":"bad tally"}}`,
			400, OutcomeUpstreamError, billing.Usage{}, billing.SourceReported},
	} {
		up := newUpstream(t, tc.handler)
		c := &Call{Wire: tallyWire{}, Provider: provider("anthropic", 0, up.URL), Path: "/tally", Body: []byte(`{}`),
			ClientHeader: http.Header{}, RequestID: "r"}
		rec := httptest.NewRecorder()
		res := serveAll(&Proxy{}, rec, clientRequest(context.Background(), "{}"), c)
		if got := up.headers[0].Get("X-Api-Key"); got != "sk-up-a" || up.headers[0].Get("Authorization") != "" {
			t.Errorf("Test %d (%s): upstream key headers %v, want the wire's (x-api-key)", i, tc.name, up.headers[0])
		}
		if rec.Code != tc.status || res.Outcome != tc.outcome || res.Usage != tc.usage || res.Source != tc.source {
			t.Errorf("Test %d (%s): status %d, outcome %s, usage %+v %s; want %d, %s, %+v %s", i, tc.name,
				rec.Code, res.Outcome, res.Usage, res.Source, tc.status, tc.outcome, tc.usage, tc.source)
		}
		if tc.body != "" && rec.Body.String() != tc.body {
			t.Errorf("Test %d (%s): client got %q, want %q", i, tc.name, rec.Body.String(), tc.body)
		}
		if tc.name == "cut stream" && !bytes.Contains(rec.Body.Bytes(), []byte("event: error\ndata: {\"type\":\"error\"")) {
			t.Errorf("Test %d (%s): the cut stream does not end with an error event in the wire's shape: %q", i, tc.name, rec.Body.String())
		}
		if tc.outcome == OutcomeOK && res.ServiceTier != "tally" {
			t.Errorf("Test %d (%s): service tier %q, want the tap's", i, tc.name, res.ServiceTier)
		}
	}
}
