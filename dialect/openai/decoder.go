package openai

import (
	"bytes"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect"
)

// NewStreamDecoder returns a decoder of a chat.completion.chunk stream.
func (Codec) NewStreamDecoder() dialect.StreamDecoder {
	return &decoder{cur: -1}
}

// decoder turns chunks into neutral events. Reasoning, text and each tool
// call (by its index) become blocks of their own, numbered in the order
// they start; a tool call's argument deltas go to its own block, so that
// parallel calls are never merged. The message stops at data: [DONE],
// with the finish reason and the usage of the chunks before it.
type decoder struct {
	sse     dialect.SSEReader
	scratch []byte
	queue   []dialect.Event
	qi      int
	started bool
	done    bool
	// cur is the open text or thinking block, -1 if none; curKind its kind.
	cur     int
	curKind dialect.BlockKind
	// tools maps the chunks' tool_calls indexes to open blocks.
	tools  []toolSlot
	blocks int
	finish string
	usage  billing.Usage
	hasUse bool
}

// toolSlot is an open tool call: its index in the chunks, its block.
type toolSlot struct{ index, block int }

// Feed adds stream bytes.
func (d *decoder) Feed(p []byte) { d.sse.Feed(p) }

// Next yields the next event.
func (d *decoder) Next(ev *dialect.Event) bool {
	for {
		if d.qi < len(d.queue) {
			*ev = d.queue[d.qi]
			d.qi++
			return true
		}
		d.queue, d.qi = d.queue[:0], 0
		if d.done {
			return false
		}
		_, data, ok := d.sse.Next()
		if !ok {
			return false
		}
		d.chunk(data)
	}
}

// End reports a stream that ended before data: [DONE].
func (d *decoder) End(ev *dialect.Event) bool {
	if d.done {
		return false
	}
	d.done = true
	*ev = dialect.Event{Kind: dialect.EventError, Err: &dialect.Error{Status: 502, Kind: dialect.ErrCut,
		Message: "the upstream provider broke off the stream"}}
	return true
}

// push queues an event.
func (d *decoder) push(ev dialect.Event) { d.queue = append(d.queue, ev) }

// chunk queues the events of one data: payload.
func (d *decoder) chunk(data []byte) {
	if bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]")) {
		if !d.started {
			d.started = true
			d.push(dialect.Event{Kind: dialect.EventStart})
		}
		d.stopAll()
		d.push(dialect.Event{Kind: dialect.EventStop, StopReason: stopReason(d.finish), Usage: d.usage, HasUsage: d.hasUse})
		d.done = true
		return
	}
	s := dialect.Str(data)
	if !gjson.Valid(s) {
		d.fail("the upstream provider sent a malformed stream event")
		return
	}
	if e := gjson.Get(s, "error"); e.IsObject() {
		err := Codec{}.DecodeError(500, nil, data)
		if c := e.Get("code"); c.Type == gjson.Number {
			err.Status = int(c.Int())
			err.Kind = dialect.KindOf(err.Status)
		}
		d.push(dialect.Event{Kind: dialect.EventError, Err: err})
		d.done = true
		return
	}
	if cap(d.scratch) < len(data) {
		d.scratch = make([]byte, 0, 2*len(data))
	}
	d.scratch = d.scratch[:0]
	// Azure's first chunk, the prompt's content filter results, names
	// neither the answer nor its model: the answer starts with the first
	// chunk that has an id or a choice.
	if !d.started && (gjson.Get(s, "id").Str != "" || gjson.Get(s, "choices.0").Exists()) {
		d.started = true
		d.push(dialect.Event{Kind: dialect.EventStart, ID: strings.Clone(gjson.Get(s, "id").Str), Model: strings.Clone(gjson.Get(s, "model").Str)})
	}
	ch := gjson.Get(s, "choices.0")
	if ch.Exists() {
		delta := ch.Get("delta")
		if rc := delta.Get("reasoning_content"); rc.Type == gjson.String && len(rc.Raw) > 2 {
			d.text(data, rc, dialect.BlockThinking, dialect.DeltaThinking)
		}
		if c := delta.Get("content"); c.Type == gjson.String && len(c.Raw) > 2 {
			d.text(data, c, dialect.BlockText, dialect.DeltaText)
		}
		if tc := delta.Get("tool_calls"); tc.IsArray() {
			tc.ForEach(func(_, call gjson.Result) bool {
				d.toolCall(data, call)
				return true
			})
		}
		if f := ch.Get("finish_reason"); f.Type == gjson.String {
			d.finish = strings.Clone(f.Str) // f.Str aliases the stream buffer
		}
	}
	if u := gjson.Get(s, "usage"); u.IsObject() {
		if n, err := NormalizeUsage([]byte(u.Raw)); err == nil {
			d.usage, d.hasUse = n, true
		}
	}
}

// fail ends the stream with a malformed event.
func (d *decoder) fail(msg string) {
	d.push(dialect.Event{Kind: dialect.EventError, Err: &dialect.Error{Status: 502, Kind: dialect.ErrServer, Message: msg}})
	d.done = true
}

// text queues a text or reasoning delta, starting its block if needed.
func (d *decoder) text(data []byte, v gjson.Result, kind dialect.BlockKind, dk dialect.DeltaKind) {
	if d.cur < 0 || d.curKind != kind {
		d.stopCur()
		d.cur, d.curKind = d.blocks, kind
		d.blocks++
		d.push(dialect.Event{Kind: dialect.EventBlockStart, Index: d.cur, Block: dialect.Block{Kind: kind}})
	}
	var text []byte
	text, d.scratch = dialect.StringBytes(data, v, d.scratch)
	d.push(dialect.Event{Kind: dialect.EventDelta, Index: d.cur, Delta: dk, Text: text})
}

// toolCall queues the events of one tool_calls entry.
func (d *decoder) toolCall(data []byte, call gjson.Result) {
	idx := int(call.Get("index").Int())
	slot := -1
	for i := range d.tools {
		if d.tools[i].index == idx {
			slot = d.tools[i].block
			break
		}
	}
	if slot < 0 {
		d.stopCur()
		slot = d.blocks
		d.blocks++
		d.tools = append(d.tools, toolSlot{index: idx, block: slot})
		d.push(dialect.Event{Kind: dialect.EventBlockStart, Index: slot, Block: dialect.Block{Kind: dialect.BlockToolUse,
			ToolID: strings.Clone(call.Get("id").Str), ToolName: strings.Clone(call.Get("function.name").Str)}})
	}
	args := call.Get("function.arguments")
	if args.Type != gjson.String || len(args.Raw) <= 2 {
		return
	}
	var text []byte
	text, d.scratch = dialect.StringBytes(data, args, d.scratch)
	d.push(dialect.Event{Kind: dialect.EventDelta, Index: slot, Delta: dialect.DeltaJSON, Text: text})
}

// stopCur stops the open text or thinking block.
func (d *decoder) stopCur() {
	if d.cur >= 0 {
		d.push(dialect.Event{Kind: dialect.EventBlockStop, Index: d.cur})
		d.cur = -1
	}
}

// stopAll stops every open block.
func (d *decoder) stopAll() {
	d.stopCur()
	for _, t := range d.tools {
		d.push(dialect.Event{Kind: dialect.EventBlockStop, Index: t.block})
	}
	d.tools = d.tools[:0]
}
