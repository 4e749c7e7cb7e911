package anthropic

import "github.com/caddy-air/caddy-air/dialect"

// NewStreamEncoder returns an encoder of a Messages event stream. Messages
// streams always carry their usage.
func (Codec) NewStreamEncoder(*dialect.Request) dialect.StreamEncoder { return &encoder{} }

// encoder writes neutral events as Messages events, one for one; the stop
// is a message_delta with the stop reason and the whole usage, then
// message_stop.
type encoder struct{}

// Encode appends the events of ev.
func (e *encoder) Encode(b []byte, ev *dialect.Event) []byte {
	switch ev.Kind {
	case dialect.EventDelta:
		b = append(b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":"...)
		b = dialect.AppendInt(b, int64(ev.Index))
		switch ev.Delta {
		case dialect.DeltaText:
			b = append(b, `,"delta":{"type":"text_delta","text":`...)
		case dialect.DeltaThinking:
			b = append(b, `,"delta":{"type":"thinking_delta","thinking":`...)
		case dialect.DeltaSignature:
			b = append(b, `,"delta":{"type":"signature_delta","signature":`...)
		default:
			b = append(b, `,"delta":{"type":"input_json_delta","partial_json":`...)
		}
		b = dialect.AppendBytes(b, ev.Text)
		return append(b, "}}\n\n"...)
	case dialect.EventBlockStart:
		b = append(b, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":"...)
		b = dialect.AppendInt(b, int64(ev.Index))
		b = append(b, `,"content_block":`...)
		switch bl := &ev.Block; bl.Kind {
		case dialect.BlockThinking:
			b = append(b, `{"type":"thinking","thinking":"","signature":""}`...)
		case dialect.BlockRedactedThinking:
			b = append(b, `{"type":"redacted_thinking","data":`...)
			b = dialect.AppendString(b, bl.Data)
			b = append(b, '}')
		case dialect.BlockToolUse:
			b = append(b, `{"type":"tool_use","id":`...)
			b = dialect.AppendString(b, bl.ToolID)
			b = append(b, `,"name":`...)
			b = dialect.AppendString(b, bl.ToolName)
			b = append(b, `,"input":{}}`...)
		default:
			b = append(b, `{"type":"text","text":""}`...)
		}
		return append(b, "}\n\n"...)
	case dialect.EventBlockStop:
		b = append(b, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":"...)
		b = dialect.AppendInt(b, int64(ev.Index))
		return append(b, "}\n\n"...)
	case dialect.EventStart:
		b = append(b, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":"...)
		b = dialect.AppendString(b, ev.ID)
		b = append(b, `,"type":"message","role":"assistant","model":`...)
		b = dialect.AppendString(b, ev.Model)
		b = append(b, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":`...)
		b = AppendUsage(b, ev.Usage)
		return append(b, "}}\n\n"...)
	case dialect.EventStop:
		b = append(b, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"...)
		b = dialect.AppendString(b, string(ev.StopReason))
		b = append(b, `,"stop_sequence":`...)
		if ev.StopSequence != "" {
			b = dialect.AppendString(b, ev.StopSequence)
		} else {
			b = append(b, "null"...)
		}
		b = append(b, `},"usage":`...)
		b = AppendUsage(b, ev.Usage)
		return append(b, "}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
	case dialect.EventError:
		b = append(b, "event: error\ndata: "...)
		b = AppendError(b, ev.Err)
		return append(b, "\n\n"...)
	}
	return b
}
