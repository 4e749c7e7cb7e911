package responses

import (
	"net/http"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/internal/tapcore"
	"github.com/caddy-air/caddy-air/jsonlimit"
)

// Wire is OpenAI's Responses API (/v1/responses) as the pass-through
// engine forwards it, spoken by providers of the OpenAI protocol: its
// streams are response.* events ended by a terminal one
// (response.completed, incomplete, failed, or error), its usage in the
// final response, its priced tool calls in its output items.
var Wire dialect.Wire = wire{}

// wire is Wire.
type wire struct{}

// Auth implements dialect.Wire.
func (wire) Auth() string { return "openai" }

// Operation implements dialect.Wire.
func (wire) Operation() string { return "responses" }

// ErrorShape implements dialect.Wire.
func (wire) ErrorShape() apierror.Shape { return apierror.ShapeOpenAI }

// StreamUsage implements dialect.Wire: a Responses stream always reports
// its usage.
func (wire) StreamUsage() bool { return false }

// NewTap implements dialect.Wire.
func (wire) NewTap(cfg dialect.TapConfig) dialect.Tap {
	t := taps.Get().(*tap)
	t.Reset(cfg)
	t.calls, t.scan, t.big = ToolCalls{}, toolScan{}, bigEventState{}
	return t
}

// taps pools the taps.
var taps = sync.Pool{New: func() any { return new(tap) }}

// tap is the usage tap of a Responses answer (dialect.Tap).
type tap struct {
	tapcore.Core
	// calls counts the answer's priced tool calls from its output items;
	// scan counts them instead in the bytes of an answer too large to
	// hold.
	calls ToolCalls
	scan  toolScan
	// big follows a stream event too large to parse.
	big bigEventState
}

// Release implements dialect.Tap.
func (t *tap) Release() { taps.Put(t) }

// Responses stream events the tap reads.
const (
	evCompleted  = "response.completed"
	evIncomplete = "response.incomplete"
	evFailed     = "response.failed"
	evError      = "error"
)

// Event implements dialect.Tap.
func (t *tap) Event(ev []byte) []byte {
	was := t.UpstreamErr
	if payload, _, _, ok := t.Payload(ev); ok && len(payload) > 0 && payload[0] == '{' {
		t.event(payload)
	}
	if !was && t.UpstreamErr {
		return scrubEvent(ev)
	}
	return ev
}

// event collects usage, output size, tool calls and the response's id and
// status from a Responses stream event.
func (t *tap) event(payload []byte) {
	if jsonlimit.Check(payload, t.Depth()) != nil {
		t.OutBytes += int64(len(payload))
		return
	}
	root := gjson.Parse(tapcore.Str(payload))
	typ := root.Get("type").Str
	switch typ {
	case "response.output_text.delta", "response.reasoning_summary_text.delta", "response.reasoning_text.delta",
		"response.function_call_arguments.delta", "response.refusal.delta":
		t.OutBytes += int64(dialect.TextLen(root.Get("delta")))
	case "response.created", "response.queued", "response.in_progress":
		t.responseObject(root.Get("response"))
	case "response.output_item.done":
		t.calls.Item(root.Get("output_index").Int(), tapcore.RawBytes(root.Get("item")))
	case "response.web_search_call.completed", "response.file_search_call.completed",
		"response.image_generation_call.completed", "response.code_interpreter_call.completed":
		kind := strings.TrimSuffix(strings.TrimPrefix(typ, "response."), ".completed")
		t.calls.Completed(kind, root.Get("output_index").Int(), root.Get("item_id").Str)
	case evCompleted, evIncomplete, evFailed:
		resp := root.Get("response")
		t.responseObject(resp)
		t.UsageFrom(tapcore.UsageMember(resp, "usage"), NormalizeUsage)
		t.calls.Output(tapcore.RawBytes(resp.Get("output")))
		t.Term = true
		t.UpstreamErr = t.UpstreamErr || typ == evFailed
	case evError:
		t.Term, t.UpstreamErr = true, true
	}
}

// responseObject records a response object's id, status and model.
func (t *tap) responseObject(resp gjson.Result) {
	if !resp.IsObject() {
		return
	}
	if id := resp.Get("id").Str; t.RespID == "" && id != "" {
		t.RespID = strings.Clone(id)
	}
	if s := resp.Get("status").Str; s != "" && s != t.RespStatus {
		t.RespStatus = strings.Clone(s)
	}
	if t.Meta != nil {
		t.Meta.SetModel(resp.Get("model").Str)
	}
}

// Piece implements dialect.Tap: the piece counts as output, and a
// terminal event too large to parse still ends the stream (bigEvent).
func (t *tap) Piece(p []byte) {
	t.OutBytes += int64(len(p))
	t.bigEvent(p)
}

// Large implements dialect.Tap: the tool calls of a body too large to
// hold are counted from its bytes (toolScan).
func (t *tap) Large(p []byte, final bool) { t.scan.feed(p, final) }

// Body implements dialect.Tap. A complete body that is not valid JSON, or
// nests deeper than the tap's limit, counts whole as output.
func (t *tap) Body(b []byte, complete bool) {
	if complete && jsonlimit.Check(b, t.Depth()) != nil {
		t.OutBytes = int64(len(b))
		return
	}
	root := gjson.Parse(tapcore.Str(b))
	t.UsageFrom(tapcore.UsageMember(root, "usage"), NormalizeUsage)
	if st := root.Get("service_tier"); st.Type == gjson.String {
		t.ServiceTier = st.Str
	}
	t.responseObject(root)
	t.calls.Output(tapcore.RawBytes(root.Get("output")))
	if t.Meta != nil {
		t.Meta.SetModel(root.Get("model").Str)
		t.Meta.AddFinish(root.Get("status").Str)
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

// Result implements dialect.Tap: the usage with the answer's priced tool
// calls.
func (t *tap) Result(promptBytes int, cut, gone bool) dialect.TapResult {
	u, src := t.Tokens(promptBytes, cut, gone)
	if t.scan.used {
		u = t.scan.apply(u)
	} else {
		u = t.calls.Apply(u)
	}
	return t.Finish(u, src)
}

// outputBytes sizes the text of a whole response: its output items'
// text, refusals, reasoning summaries and function call arguments.
func outputBytes(resp gjson.Result) int {
	n := 0
	resp.Get("output").ForEach(func(_, item gjson.Result) bool {
		n += dialect.TextLen(item.Get("arguments"))
		item.Get("content").ForEach(func(_, c gjson.Result) bool {
			n += dialect.TextLen(c.Get("text")) + dialect.TextLen(c.Get("refusal"))
			return true
		})
		item.Get("summary").ForEach(func(_, c gjson.Result) bool {
			n += dialect.TextLen(c.Get("text"))
			return true
		})
		return true
	})
	return n
}

// scrubEvent returns an upstream's error event, ev, rebuilt the way an
// error status's body is (apierror.UpstreamBody): an "error" event keeps
// its type, code, message, param and sequence_number, a "response.failed"
// its response with response.error's code and message scrubbed. The
// event's other lines (event:, id:) are kept.
func scrubEvent(ev []byte) []byte {
	payload := tapcore.JoinData(nil, ev)
	root := gjson.ParseBytes(payload)
	if root.Get("type").Str == evFailed {
		if e := root.Get("response.error"); e.Type == gjson.Null || tapcore.Clean(e, "code", "message") {
			return ev
		}
	} else if tapcore.Clean(root, "type", "code", "message", "param", "sequence_number") {
		return ev
	}
	return tapcore.ReplaceData(ev, scrubError(payload))
}

// scrubError scrubs a Responses stream's error or
// response.failed event.
func scrubError(payload []byte) []byte {
	root := gjson.ParseBytes(payload)
	if root.Get("type").Str == evFailed {
		out := payload
		for _, path := range []string{"response.error.message", "response.error.code"} {
			if v := root.Get(path); v.Type == gjson.String {
				out, _ = sjson.SetBytes(out, path, apierror.Scrub(v.Str))
			}
		}
		return out
	}
	f := apierror.ReadUpstream(http.StatusInternalServerError, payload)
	out := []byte(`{"type":"error"}`)
	for _, kv := range [][2]string{{"code", f.Code}, {"message", f.Message}, {"param", f.Param}} {
		if kv[1] != "" {
			out, _ = sjson.SetBytes(out, kv[0], kv[1])
		} else {
			out, _ = sjson.SetRawBytes(out, kv[0], []byte("null"))
		}
	}
	if n := root.Get("sequence_number"); n.Type == gjson.Number {
		out, _ = sjson.SetRawBytes(out, "sequence_number", []byte(n.Raw))
	}
	return out
}

// Interface guard.
var _ dialect.Tap = (*tap)(nil)
