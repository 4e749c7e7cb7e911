package anthropic

import (
	"net/http"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/internal/tapcore"
	"github.com/caddy-air/caddy-air/jsonlimit"
)

// Wire is the Messages protocol (/v1/messages) as the pass-through engine
// forwards it: its streams are message_start, content_block_* and
// message_delta events ended by message_stop, its errors in Anthropic's
// shape.
var Wire dialect.Wire = wire{}

// wire is Wire.
type wire struct{}

// Auth implements dialect.Wire.
func (wire) Auth() string { return "anthropic" }

// Operation implements dialect.Wire.
func (wire) Operation() string { return "messages" }

// ErrorShape implements dialect.Wire.
func (wire) ErrorShape() apierror.Shape { return apierror.ShapeAnthropic }

// StreamUsage implements dialect.Wire: a Messages stream always reports
// its usage.
func (wire) StreamUsage() bool { return false }

// NewTap implements dialect.Wire.
func (wire) NewTap(cfg dialect.TapConfig) dialect.Tap {
	t := taps.Get().(*tap)
	t.Reset(cfg)
	return t
}

// taps pools the taps.
var taps = sync.Pool{New: func() any { return new(tap) }}

// tap is the usage tap of a Messages answer (dialect.Tap).
type tap struct {
	tapcore.Core
}

// Release implements dialect.Tap.
func (t *tap) Release() { taps.Put(t) }

// Event implements dialect.Tap.
func (t *tap) Event(ev []byte) []byte {
	was := t.UpstreamErr
	t.read(ev)
	if !was && t.UpstreamErr {
		return scrubEvent(ev)
	}
	return ev
}

// read processes one whole SSE event.
func (t *tap) read(ev []byte) {
	payload, _, _, ok := t.Payload(ev)
	if !ok || len(payload) == 0 || payload[0] != '{' {
		return // not JSON
	}
	if n, ok := deltaBytes(payload, t.Depth()); ok {
		t.OutBytes += int64(n)
		return
	}
	if jsonlimit.Check(payload, t.Depth()) != nil {
		t.OutBytes += int64(len(payload))
		return
	}
	t.event(gjson.Parse(tapcore.Str(payload)))
}

// event collects usage and output size from a Messages event.
func (t *tap) event(root gjson.Result) {
	switch root.Get("type").Str {
	case "message_start":
		if t.Meta != nil {
			t.Meta.SetModel(root.Get("message.model").Str)
		}
		t.container(root.Get("message.container"))
		if u := tapcore.UsageMember(root.Get("message"), "usage"); u.IsObject() {
			t.serviceTier(u)
			if nu, err := NormalizeUsage(tapcore.RawBytes(u)); err == nil {
				t.Usage, t.Started = nu, true
			}
		}
	case "message_delta":
		if t.Meta != nil {
			t.Meta.AddFinish(root.Get("delta.stop_reason").Str)
		}
		t.container(root.Get("delta.container"))
		if u := tapcore.UsageMember(root, "usage"); u.IsObject() {
			t.serviceTier(u)
			t.mergeDelta(u)
		}
	case "content_block_start", "content_block_delta":
		t.OutBytes += int64(deltaTextBytes(root))
	case "message_stop":
		t.Term = true
	case "error":
		t.UpstreamErr = true
	}
}

// mergeDelta applies a message_delta usage: output_tokens is cumulative and
// replaces the previous count; the prompt fields, which newer APIs repeat
// there, replace the message_start ones when present.
func (t *tap) mergeDelta(u gjson.Result) {
	d, err := NormalizeUsage(tapcore.RawBytes(u))
	if err != nil {
		return
	}
	if tapcore.Present(u, "output_tokens") {
		t.Usage.Output = d.Output
		t.Reported = true
	}
	if tapcore.Present(u, "output_tokens_details") {
		t.Usage.Reasoning = d.Reasoning
	}
	if tapcore.Present(u, "input_tokens") {
		t.Usage.Input = d.Input
	}
	if tapcore.Present(u, "cache_read_input_tokens") {
		t.Usage.CacheRead = d.CacheRead
	}
	if tapcore.Present(u, "cache_creation_input_tokens") || u.Get("cache_creation").IsObject() {
		t.Usage.CacheCreation, t.Usage.CacheCreation1h = d.CacheCreation, d.CacheCreation1h
	}
	if u.Get("server_tool_use").IsObject() {
		// Cumulative too: the last count is the answer's.
		t.Usage.WebSearches, t.Usage.WebFetches, t.Usage.CodeSessions = d.WebSearches, d.WebFetches, d.CodeSessions
	}
}

// container records the code execution container a message reports,
// {"id": …, "expires_at": …}: the answer used one code session.
func (t *tap) container(c gjson.Result) {
	if c.IsObject() && c.Get("id").Str != "" {
		t.Container = true
	}
}

// serviceTier records the service_tier of a usage object, when it has
// one.
func (t *tap) serviceTier(u gjson.Result) {
	if st := u.Get("service_tier"); st.Type == gjson.String {
		t.ServiceTier = st.Str
	}
}

// Body implements dialect.Tap. A complete body that is not valid JSON, or
// nests deeper than the tap's limit, counts whole as output.
func (t *tap) Body(b []byte, complete bool) {
	if complete && jsonlimit.Check(b, t.Depth()) != nil {
		t.OutBytes = int64(len(b))
		return
	}
	root := gjson.Parse(tapcore.Str(b))
	t.UsageFrom(tapcore.UsageMember(root, "usage"), NormalizeUsage)
	t.serviceTier(root.Get("usage"))
	t.container(root.Get("container"))
	if t.Meta != nil {
		t.Meta.SetModel(root.Get("model").Str)
		t.Meta.AddFinish(root.Get("stop_reason").Str)
	}
	switch {
	case t.Reported:
		// The output size only matters for an estimate.
	case !complete:
		t.OutBytes = int64(len(b))
	default:
		t.OutBytes = int64(outputBytes(root))
	}
}

// Tail implements dialect.Tap.
func (t *tap) Tail(tail []byte) { t.TailUsage(tail, NormalizeUsage) }

// scrubEvent returns an upstream's error event, ev, with its data rebuilt
// the way an error status's body is (apierror.UpstreamBody): only the
// error's type and message, and the request_id, scrubbed of account ids
// and credentials. The event's other lines (event:, id:) are kept.
func scrubEvent(ev []byte) []byte {
	payload := tapcore.JoinData(nil, ev)
	root := gjson.ParseBytes(payload)
	if tapcore.Clean(root, "type", "error", "request_id") && tapcore.Clean(root.Get("error"), "type", "message") {
		return ev
	}
	return tapcore.ReplaceData(ev, apierror.UpstreamBody(http.StatusInternalServerError, payload, apierror.ShapeAnthropic))
}

// Interface guard.
var _ dialect.Tap = (*tap)(nil)
