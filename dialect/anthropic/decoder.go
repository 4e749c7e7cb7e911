package anthropic

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/internal/jsonview"
)

// NewStreamDecoder returns a decoder of a Messages event stream.
func (Codec) NewStreamDecoder() dialect.StreamDecoder { return &decoder{} }

// decoder turns Messages events into neutral events, which follow them
// one for one (pings left out): the message stops at message_stop, with
// the stop reason and the cumulative usage of the message_delta before it.
type decoder struct {
	sse     dialect.SSEReader
	scratch []byte
	done    bool
	usage   billing.Usage
	hasUse  bool
	stop    dialect.StopReason
	stopSeq string
}

// Feed adds stream bytes.
func (d *decoder) Feed(p []byte) { d.sse.Feed(p) }

// End reports a stream that ended before message_stop.
func (d *decoder) End(ev *dialect.Event) bool {
	if d.done {
		return false
	}
	d.done = true
	*ev = dialect.Event{Kind: dialect.EventError, Err: &dialect.Error{Status: 502, Kind: dialect.ErrCut,
		Message: "the upstream provider broke off the stream"}}
	return true
}

// Next yields the next event.
func (d *decoder) Next(ev *dialect.Event) bool {
	for !d.done {
		_, data, ok := d.sse.Next()
		if !ok {
			return false
		}
		if d.event(ev, data) {
			return true
		}
	}
	return false
}

// event reads one event's data into ev, reporting false for one that
// yields nothing.
func (d *decoder) event(ev *dialect.Event, data []byte) bool {
	s := dialect.Str(data)
	if !gjson.Valid(s) {
		d.done = true
		*ev = dialect.Event{Kind: dialect.EventError, Err: &dialect.Error{Status: 502, Kind: dialect.ErrServer,
			Message: "the upstream provider sent a malformed stream event"}}
		return true
	}
	if cap(d.scratch) < len(data) {
		d.scratch = make([]byte, 0, 2*len(data))
	}
	d.scratch = d.scratch[:0]
	typ := gjson.Get(s, "type")
	switch typ.Str {
	case "content_block_delta":
		delta := gjson.Get(s, "delta")
		var field string
		*ev = dialect.Event{Kind: dialect.EventDelta, Index: int(gjson.Get(s, "index").Int())}
		switch delta.Get("type").Str {
		case "text_delta":
			ev.Delta, field = dialect.DeltaText, "text"
		case "thinking_delta":
			ev.Delta, field = dialect.DeltaThinking, "thinking"
		case "signature_delta":
			ev.Delta, field = dialect.DeltaSignature, "signature"
		case "input_json_delta":
			ev.Delta, field = dialect.DeltaJSON, "partial_json"
		default:
			return false
		}
		// The raw token, unescaped into scratch only if it has escapes
		// (as a tool's arguments always do): a gjson lookup of the
		// string would allocate its unescaped copy.
		raw, _ := jsonview.Member(delta.Raw, field)
		ev.Text, d.scratch = jsonview.Text(d.scratch, raw)
		return len(ev.Text) > 0
	case "content_block_start":
		cb := gjson.Get(s, "content_block")
		*ev = dialect.Event{Kind: dialect.EventBlockStart, Index: int(gjson.Get(s, "index").Int())}
		switch cb.Get("type").Str {
		case "text":
			ev.Block.Kind = dialect.BlockText
		case "thinking":
			ev.Block.Kind = dialect.BlockThinking
		case "redacted_thinking":
			ev.Block.Kind, ev.Block.Data = dialect.BlockRedactedThinking, strings.Clone(cb.Get("data").Str)
		case "tool_use":
			ev.Block.Kind, ev.Block.ToolID, ev.Block.ToolName = dialect.BlockToolUse, strings.Clone(cb.Get("id").Str), strings.Clone(cb.Get("name").Str)
		default:
			ev.Block.Kind = dialect.BlockText // server tool blocks: shown as empty text
		}
		return true
	case "content_block_stop":
		*ev = dialect.Event{Kind: dialect.EventBlockStop, Index: int(gjson.Get(s, "index").Int())}
		return true
	case "message_start":
		m := gjson.Get(s, "message")
		*ev = dialect.Event{Kind: dialect.EventStart, ID: strings.Clone(m.Get("id").Str), Model: strings.Clone(m.Get("model").Str)}
		if u := m.Get("usage"); u.IsObject() {
			if n, err := NormalizeUsage([]byte(u.Raw)); err == nil {
				d.usage, d.hasUse = n, true
			}
		}
		ev.Usage, ev.HasUsage = d.usage, d.hasUse
		return true
	case "message_delta":
		d.stop = stopReason(gjson.Get(s, "delta.stop_reason").Str)
		d.stopSeq = strings.Clone(gjson.Get(s, "delta.stop_sequence").Str)
		if u := gjson.Get(s, "usage"); u.IsObject() {
			d.mergeUsage(u)
		}
		return false
	case "message_stop":
		d.done = true
		*ev = dialect.Event{Kind: dialect.EventStop, StopReason: d.stop, StopSequence: d.stopSeq, Usage: d.usage, HasUsage: d.hasUse}
		return true
	case "error":
		d.done = true
		e := gjson.Get(s, "error")
		status := 500
		switch e.Get("type").Str {
		case "overloaded_error":
			status = 529
		case "rate_limit_error":
			status = 429
		case "invalid_request_error":
			status = 400
		}
		*ev = dialect.Event{Kind: dialect.EventError, Err: &dialect.Error{Status: status, Kind: kindOf(e.Get("type").Str, status),
			Message: strings.Clone(e.Get("message").Str)}}
		return true
	}
	return false // ping, and events this gateway does not know
}

// mergeUsage takes a message_delta's usage, cumulative: its output, and
// its prompt counts where it reports them.
func (d *decoder) mergeUsage(u gjson.Result) {
	n, err := NormalizeUsage([]byte(u.Raw))
	if err != nil {
		return
	}
	d.usage.Output, d.hasUse = n.Output, true
	if u.Get("output_tokens_details").Exists() {
		d.usage.Reasoning = n.Reasoning
	}
	if u.Get("input_tokens").Exists() {
		d.usage.Input = n.Input
	}
	if u.Get("cache_read_input_tokens").Exists() {
		d.usage.CacheRead = n.CacheRead
	}
	if u.Get("cache_creation_input_tokens").Exists() {
		d.usage.CacheCreation, d.usage.CacheCreation1h = n.CacheCreation, n.CacheCreation1h
	}
}
