package responses

import (
	"time"

	"github.com/caddy-air/caddy-air/dialect"
)

// NewStreamEncoder returns an encoder of Responses SSE events. Responses
// streams always end with the usage, in the final event's response.
func (Codec) NewStreamEncoder(*dialect.Request) dialect.StreamEncoder { return &encoder{} }

// encoder writes neutral events as Responses events: the start as
// response.created and response.in_progress; each block as an output
// item (a text block a message with one output_text part, a thinking
// block a reasoning item whose summary is its text and whose
// encrypted_content is its signature, a tool use a function_call whose
// call_id is the tool id), opened by output_item.added, filled by deltas
// and closed by the .done events with the whole text; the stop as
// response.completed, or response.incomplete when output ran out; an
// error as response.failed and an error event. Every event has the next
// sequence_number; items are numbered by output_index in the order their
// blocks start.
type encoder struct {
	h       head
	base    string
	started bool
	ended   bool
	seq     int64
	items   []item
	// slot maps block indexes to output indexes (-1: none).
	slot []int
}

// Encode appends the events of ev.
func (e *encoder) Encode(b []byte, ev *dialect.Event) []byte {
	if e.ended {
		return b
	}
	switch ev.Kind {
	case dialect.EventStart:
		return e.start(b, ev)
	case dialect.EventBlockStart:
		return e.blockStart(b, ev)
	case dialect.EventDelta:
		return e.delta(b, ev)
	case dialect.EventBlockStop:
		if it := e.itemOf(ev.Index); it != nil && !it.done {
			return e.itemDone(b, ev.Index, it)
		}
	case dialect.EventStop:
		e.ended = true
		for i := range e.items {
			e.items[i].done = true
		}
		status, reason := statusOf(ev.StopReason)
		name := "response.completed"
		if status == "incomplete" {
			name = "response.incomplete"
		}
		u := ev.Usage
		up := &u
		if !ev.HasUsage {
			up = nil
		}
		b = e.event(b, name)
		b = append(b, `,"response":`...)
		b = appendResponse(b, &e.h, status, reason, e.items, up, nil)
		return append(b, "}\n\n"...)
	case dialect.EventError:
		e.ended = true
		if e.started {
			b = e.event(b, "response.failed")
			b = append(b, `,"response":`...)
			b = appendResponse(b, &e.h, "failed", "", e.items, nil, ev.Err)
			b = append(b, "}\n\n"...)
		}
		// The error member is what the SDKs read as a stream's error; the
		// top-level code and message are the documented event's.
		_, code := errorType(ev.Err.Kind)
		b = e.event(b, "error")
		b = append(b, `,"code":`...)
		b = dialect.AppendString(b, code)
		b = append(b, `,"message":`...)
		b = dialect.AppendString(b, ev.Err.Message)
		b = append(b, `,"param":null,"error":`...)
		b = appendErrorObject(b, ev.Err)
		return append(b, "}\n\n"...)
	}
	return b
}

// event begins the data of event name: its event line, type and
// sequence_number. The caller appends its members and "}\n\n".
func (e *encoder) event(b []byte, name string) []byte {
	b = append(b, "event: "...)
	b = append(b, name...)
	b = append(b, "\ndata: {\"type\":\""...)
	b = append(b, name...)
	b = append(b, `","sequence_number":`...)
	b = dialect.AppendInt(b, e.seq)
	e.seq++
	return b
}

// start writes response.created and response.in_progress.
func (e *encoder) start(b []byte, ev *dialect.Event) []byte {
	e.started = true
	e.base = idBase(ev.ID)
	e.h = head{id: "resp_" + e.base, model: ev.Model, created: time.Now().Unix()}
	for _, name := range [...]string{"response.created", "response.in_progress"} {
		b = e.event(b, name)
		b = append(b, `,"response":`...)
		b = appendResponse(b, &e.h, "in_progress", "", nil, nil, nil)
		b = append(b, "}\n\n"...)
	}
	return b
}

// itemOf is the item of block index, nil if it has none.
func (e *encoder) itemOf(index int) *item {
	if index < 0 || index >= len(e.slot) || e.slot[index] < 0 {
		return nil
	}
	return &e.items[e.slot[index]]
}

// appendRef appends an event's item_id and output_index.
func appendRef(b []byte, it *item, out int) []byte {
	b = append(b, `,"item_id":`...)
	b = dialect.AppendBytes(b, it.id)
	b = append(b, `,"output_index":`...)
	return dialect.AppendInt(b, int64(out))
}

// blockStart opens the output item of a block: output_item.added, and the
// first content part of a message or summary part of a reasoning item.
func (e *encoder) blockStart(b []byte, ev *dialect.Event) []byte {
	var kind itemKind
	switch ev.Block.Kind {
	case dialect.BlockText:
		kind = itemMessage
	case dialect.BlockThinking, dialect.BlockRedactedThinking:
		kind = itemReasoning
	case dialect.BlockToolUse:
		kind = itemFunctionCall
	default:
		return b
	}
	for len(e.slot) <= ev.Index {
		e.slot = append(e.slot, -1)
	}
	out := len(e.items)
	e.slot[ev.Index] = out
	if out < cap(e.items) {
		e.items = e.items[:out+1]
	} else {
		e.items = append(e.items, item{})
	}
	it := &e.items[out]
	*it = item{kind: kind, id: it.id, text: it.text[:0], enc: it.enc[:0]}
	it.setID(e.base, out)
	switch ev.Block.Kind {
	case dialect.BlockRedactedThinking:
		it.enc = append(append(it.enc, RedactedPrefix...), ev.Block.Data...)
	case dialect.BlockToolUse:
		it.callID, it.name = ev.Block.ToolID, ev.Block.ToolName
	}
	b = e.event(b, "response.output_item.added")
	b = append(b, `,"output_index":`...)
	b = dialect.AppendInt(b, int64(out))
	b = append(b, `,"item":`...)
	b = appendItem(b, it)
	b = append(b, "}\n\n"...)
	switch ev.Block.Kind {
	case dialect.BlockText:
		b = e.event(b, "response.content_part.added")
		b = appendRef(b, it, out)
		b = append(b, `,"content_index":0,"part":`...)
		b = appendTextPart(b, nil)
		b = append(b, "}\n\n"...)
	case dialect.BlockThinking:
		b = e.event(b, "response.reasoning_summary_part.added")
		b = appendRef(b, it, out)
		b = append(b, `,"summary_index":0,"part":`...)
		b = appendSummaryPart(b, nil)
		b = append(b, "}\n\n"...)
	}
	return b
}

// delta writes a block's delta: output_text.delta,
// reasoning_summary_text.delta or function_call_arguments.delta; a
// signature is kept for the item's end.
func (e *encoder) delta(b []byte, ev *dialect.Event) []byte {
	it := e.itemOf(ev.Index)
	if it == nil || it.done {
		return b
	}
	out := e.slot[ev.Index]
	switch {
	case ev.Delta == dialect.DeltaText && it.kind == itemMessage:
		it.text = keep(it.text, ev.Text)
		b = e.event(b, "response.output_text.delta")
		b = appendRef(b, it, out)
		b = append(b, `,"content_index":0,"delta":`...)
		b = dialect.AppendBytes(b, ev.Text)
		return append(b, ",\"logprobs\":[]}\n\n"...)
	case ev.Delta == dialect.DeltaThinking && it.kind == itemReasoning:
		it.text = keep(it.text, ev.Text)
		b = e.event(b, "response.reasoning_summary_text.delta")
		b = appendRef(b, it, out)
		b = append(b, `,"summary_index":0,"delta":`...)
		b = dialect.AppendBytes(b, ev.Text)
		return append(b, "}\n\n"...)
	case ev.Delta == dialect.DeltaSignature && it.kind == itemReasoning:
		it.enc = append(it.enc, ev.Text...)
	case ev.Delta == dialect.DeltaJSON && it.kind == itemFunctionCall:
		it.text = keep(it.text, ev.Text)
		b = e.event(b, "response.function_call_arguments.delta")
		b = appendRef(b, it, out)
		b = append(b, `,"delta":`...)
		b = dialect.AppendBytes(b, ev.Text)
		return append(b, "}\n\n"...)
	}
	return b
}

// itemDone closes the item of block index: the .done events of its text,
// part or arguments, then output_item.done with the whole item.
func (e *encoder) itemDone(b []byte, index int, it *item) []byte {
	out := e.slot[index]
	it.done = true
	switch it.kind {
	case itemMessage:
		b = e.event(b, "response.output_text.done")
		b = appendRef(b, it, out)
		b = append(b, `,"content_index":0,"text":`...)
		b = dialect.AppendBytes(b, it.text)
		b = append(b, ",\"logprobs\":[]}\n\n"...)
		b = e.event(b, "response.content_part.done")
		b = appendRef(b, it, out)
		b = append(b, `,"content_index":0,"part":`...)
		b = appendTextPart(b, it.text)
		b = append(b, "}\n\n"...)
	case itemReasoning:
		if !hasPrefix(it.enc, RedactedPrefix) {
			b = e.event(b, "response.reasoning_summary_text.done")
			b = appendRef(b, it, out)
			b = append(b, `,"summary_index":0,"text":`...)
			b = dialect.AppendBytes(b, it.text)
			b = append(b, "}\n\n"...)
			b = e.event(b, "response.reasoning_summary_part.done")
			b = appendRef(b, it, out)
			b = append(b, `,"summary_index":0,"part":`...)
			b = appendSummaryPart(b, it.text)
			b = append(b, "}\n\n"...)
		}
	case itemFunctionCall:
		b = e.event(b, "response.function_call_arguments.done")
		b = appendRef(b, it, out)
		b = append(b, `,"name":`...)
		b = dialect.AppendString(b, it.name)
		b = append(b, `,"arguments":`...)
		b = dialect.AppendBytes(b, it.arguments())
		b = append(b, "}\n\n"...)
	}
	b = e.event(b, "response.output_item.done")
	b = append(b, `,"output_index":`...)
	b = dialect.AppendInt(b, int64(out))
	b = append(b, `,"item":`...)
	b = appendItem(b, it)
	return append(b, "}\n\n"...)
}

// hasPrefix reports whether b starts with p.
func hasPrefix(b []byte, p string) bool { return len(b) >= len(p) && string(b[:len(p)]) == p }

// keep appends p to an item's kept text, doubling its capacity when it
// is full. The text is kept because the .done events and the final
// response repeat it whole: it is the only memory a Responses stream
// gains per delta (at most 4 bytes per byte kept over the stream,
// growth included, where append's 1.25 growth of long slices costs about
// 6).
func keep(text, p []byte) []byte {
	if cap(text)-len(text) < len(p) {
		grown := make([]byte, len(text), 2*cap(text)+len(p))
		copy(grown, text)
		text = grown
	}
	return append(text, p...)
}
