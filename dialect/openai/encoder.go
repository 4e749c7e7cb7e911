package openai

import (
	"time"

	"github.com/caddy-air/caddy-air/dialect"
)

// NewStreamEncoder returns an encoder of chat.completion.chunk events for
// the client's request r: the usage chunk comes only when r asked for it.
func (Codec) NewStreamEncoder(r *dialect.Request) dialect.StreamEncoder {
	return &encoder{usage: r.StreamUsage}
}

// encoder writes neutral events as chunks. Tool use blocks are numbered
// as tool_calls indexes in the order they start; a thinking block's
// signature is sent with its whole text in thinking_blocks when it stops,
// for the client to send back on its next turn.
type encoder struct {
	usage bool
	head  []byte // `data: {"id":…,"model":…,"choices":[`
	// tool maps block indexes to tool_calls indexes (-1: not a tool).
	tool  []int
	calls int
	// thinking accumulates the open thinking block's text and signature.
	thinking, signature []byte
	inThinking          bool
}

// Encode appends the chunks of ev.
func (e *encoder) Encode(b []byte, ev *dialect.Event) []byte {
	switch ev.Kind {
	case dialect.EventStart:
		e.head = append(e.head[:0], `data: {"id":`...)
		e.head = dialect.AppendString(e.head, ev.ID)
		e.head = append(e.head, `,"object":"chat.completion.chunk","created":`...)
		e.head = dialect.AppendInt(e.head, time.Now().Unix())
		e.head = append(e.head, `,"model":`...)
		e.head = dialect.AppendString(e.head, ev.Model)
		e.head = append(e.head, `,"choices":[`...)
		b = e.open(b)
		b = append(b, `{"role":"assistant","content":""}`...)
		return e.close(b, "")
	case dialect.EventBlockStart:
		for len(e.tool) <= ev.Index {
			e.tool = append(e.tool, -1)
		}
		switch ev.Block.Kind {
		case dialect.BlockToolUse:
			e.tool[ev.Index] = e.calls
			b = e.open(b)
			b = append(b, `{"tool_calls":[{"index":`...)
			b = dialect.AppendInt(b, int64(e.calls))
			e.calls++
			b = append(b, `,"id":`...)
			b = dialect.AppendString(b, ev.Block.ToolID)
			b = append(b, `,"type":"function","function":{"name":`...)
			b = dialect.AppendString(b, ev.Block.ToolName)
			b = append(b, `,"arguments":""}}]}`...)
			return e.close(b, "")
		case dialect.BlockThinking:
			e.inThinking = true
			e.thinking, e.signature = e.thinking[:0], e.signature[:0]
		case dialect.BlockRedactedThinking:
			b = e.open(b)
			b = append(b, `{"thinking_blocks":[`...)
			b = appendThinkingBlock(b, dialect.BlockRedactedThinking, "", "", ev.Block.Data)
			b = append(b, `]}`...)
			return e.close(b, "")
		}
		return b
	case dialect.EventDelta:
		switch ev.Delta {
		case dialect.DeltaText:
			b = e.open(b)
			b = append(b, `{"content":`...)
		case dialect.DeltaThinking:
			e.thinking = append(e.thinking, ev.Text...)
			b = e.open(b)
			b = append(b, `{"reasoning_content":`...)
		case dialect.DeltaSignature:
			e.signature = append(e.signature, ev.Text...)
			return b
		case dialect.DeltaJSON:
			if ev.Index >= len(e.tool) || e.tool[ev.Index] < 0 {
				return b
			}
			b = e.open(b)
			b = append(b, `{"tool_calls":[{"index":`...)
			b = dialect.AppendInt(b, int64(e.tool[ev.Index]))
			b = append(b, `,"function":{"arguments":`...)
			b = dialect.AppendBytes(b, ev.Text)
			b = append(b, `}}]}`...)
			return e.close(b, "")
		default:
			return b
		}
		b = dialect.AppendBytes(b, ev.Text)
		b = append(b, '}')
		return e.close(b, "")
	case dialect.EventBlockStop:
		if !e.inThinking || (ev.Index < len(e.tool) && e.tool[ev.Index] >= 0) {
			return b
		}
		e.inThinking = false
		if len(e.signature) == 0 {
			return b // unsigned reasoning: reasoning_content says it all
		}
		b = e.open(b)
		b = append(b, `{"thinking_blocks":[{"type":"thinking","thinking":`...)
		b = dialect.AppendBytes(b, e.thinking)
		b = append(b, `,"signature":`...)
		b = dialect.AppendBytes(b, e.signature)
		b = append(b, `}]}`...)
		return e.close(b, "")
	case dialect.EventStop:
		b = e.open(b)
		b = append(b, "{}"...)
		b = e.close(b, finishReason(ev.StopReason))
		if e.usage {
			b = append(b, e.head...)
			b = append(b, `],"usage":`...)
			b = AppendUsage(b, ev.Usage)
			b = append(b, "}\n\n"...)
		}
		return append(b, "data: [DONE]\n\n"...)
	case dialect.EventError:
		b = append(b, "data: "...)
		b = AppendError(b, ev.Err)
		return append(b, "\n\n"...)
	}
	return b
}

// open begins a chunk's choice; the caller appends its delta.
func (e *encoder) open(b []byte) []byte {
	if len(e.head) == 0 {
		e.head = append(e.head, `data: {"id":"","object":"chat.completion.chunk","created":0,"model":"","choices":[`...)
	}
	b = append(b, e.head...)
	return append(b, `{"index":0,"delta":`...)
}

// close ends a chunk with its finish reason, null when empty.
func (e *encoder) close(b []byte, finish string) []byte {
	b = append(b, `,"logprobs":null,"finish_reason":`...)
	if finish == "" {
		b = append(b, "null"...)
	} else {
		b = dialect.AppendString(b, finish)
	}
	b = append(b, `}]`...)
	if e.usage {
		b = append(b, `,"usage":null`...)
	}
	return append(b, "}\n\n"...)
}
