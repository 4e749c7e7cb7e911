package responses

import (
	"strconv"
	"time"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect"
)

// itemKind is the type of an output item.
type itemKind uint8

// Kinds of output items.
const (
	itemMessage itemKind = iota + 1
	itemFunctionCall
	itemReasoning
)

// item is one output item, as the answer and the stream's final event
// write it. Its byte slices are reused from one stream event to the next.
type item struct {
	kind itemKind
	id   []byte
	// text is a message's text, a reasoning item's summary text, or a
	// function call's arguments.
	text []byte
	// enc is a reasoning item's encrypted_content: the thinking block's
	// signature, or RedactedPrefix and the redacted block's data.
	enc []byte
	// callID and name are a function call's.
	callID, name string
	done         bool
}

// prefix is the id prefix of an item kind.
func (k itemKind) prefix() string {
	switch k {
	case itemFunctionCall:
		return "fc_"
	case itemReasoning:
		return "rs_"
	default:
		return "msg_"
	}
}

// setID names it: its kind's prefix, the answer's id base and its output
// index.
func (it *item) setID(base string, index int) {
	it.id = append(append(append(it.id[:0], it.kind.prefix()...), base...), '_')
	it.id = strconv.AppendInt(it.id, int64(index), 10)
}

// appendItem appends it as an output item; status is "completed" once it
// is done, "in_progress" before.
func appendItem(b []byte, it *item) []byte {
	status := `"in_progress"`
	if it.done {
		status = `"completed"`
	}
	b = append(b, `{"id":`...)
	b = dialect.AppendBytes(b, it.id)
	switch it.kind {
	case itemMessage:
		b = append(b, `,"type":"message","status":`...)
		b = append(b, status...)
		b = append(b, `,"role":"assistant","content":[`...)
		if it.done {
			b = appendTextPart(b, it.text)
		}
		return append(b, "]}"...)
	case itemFunctionCall:
		b = append(b, `,"type":"function_call","status":`...)
		b = append(b, status...)
		b = append(b, `,"arguments":`...)
		b = dialect.AppendBytes(b, it.arguments())
		b = append(b, `,"call_id":`...)
		b = dialect.AppendString(b, it.callID)
		b = append(b, `,"name":`...)
		b = dialect.AppendString(b, it.name)
		return append(b, '}')
	default:
		b = append(b, `,"type":"reasoning","summary":[`...)
		if it.done && len(it.text) > 0 {
			b = appendSummaryPart(b, it.text)
		}
		b = append(b, ']')
		if len(it.enc) > 0 {
			b = append(b, `,"encrypted_content":`...)
			b = dialect.AppendBytes(b, it.enc)
		}
		return append(b, '}')
	}
}

// arguments is a function call's arguments: "{}" for a call whose
// provider streamed none.
func (it *item) arguments() []byte {
	if len(it.text) == 0 && it.done {
		return emptyArgs
	}
	return it.text
}

var emptyArgs = []byte("{}")

// appendTextPart appends an output_text content part.
func appendTextPart(b, text []byte) []byte {
	b = append(b, `{"type":"output_text","text":`...)
	b = dialect.AppendBytes(b, text)
	return append(b, `,"annotations":[],"logprobs":[]}`...)
}

// appendSummaryPart appends a reasoning summary part.
func appendSummaryPart(b, text []byte) []byte {
	b = append(b, `{"type":"summary_text","text":`...)
	b = dialect.AppendBytes(b, text)
	return append(b, '}')
}

// head is what a Response object says of itself besides its output and
// usage.
type head struct {
	id, model string
	created   int64
}

// appendResponse appends a Response object with status (and, when
// incomplete, its reason), its items, and the usage if reported (null
// while it runs). A failed one carries e.
func appendResponse(b []byte, h *head, status, reason string, items []item, u *billing.Usage, e *dialect.Error) []byte {
	b = append(b, `{"id":`...)
	b = dialect.AppendString(b, h.id)
	b = append(b, `,"object":"response","created_at":`...)
	b = dialect.AppendInt(b, h.created)
	b = append(b, `,"status":`...)
	b = dialect.AppendString(b, status)
	b = append(b, `,"error":`...)
	if e != nil {
		_, code := errorType(e.Kind)
		b = append(b, `{"code":`...)
		b = dialect.AppendString(b, code)
		b = append(b, `,"message":`...)
		b = dialect.AppendString(b, e.Message)
		b = append(b, '}')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"incomplete_details":`...)
	if reason != "" {
		b = append(b, `{"reason":`...)
		b = dialect.AppendString(b, reason)
		b = append(b, '}')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"model":`...)
	b = dialect.AppendString(b, h.model)
	b = append(b, `,"output":[`...)
	for i := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendItem(b, &items[i])
	}
	b = append(b, `],"parallel_tool_calls":true,"store":false,"usage":`...)
	if u != nil {
		b = appendUsage(b, *u)
	} else {
		b = append(b, "null"...)
	}
	return append(b, `,"metadata":{}}`...)
}

// appendUsage appends u as a Responses usage object: input_tokens include
// the cache reads (input_tokens_details.cached_tokens) and writes
// (cache_write_tokens, as Chat Completions shows them), output_tokens
// the reasoning (output_tokens_details.reasoning_tokens).
func appendUsage(b []byte, u billing.Usage) []byte {
	b = append(b, `{"input_tokens":`...)
	b = dialect.AppendInt(b, u.PromptTotal())
	b = append(b, `,"input_tokens_details":{"cached_tokens":`...)
	b = dialect.AppendInt(b, u.CacheRead)
	if u.CacheCreation > 0 {
		b = append(b, `,"cache_write_tokens":`...)
		b = dialect.AppendInt(b, u.CacheCreation)
	}
	b = append(b, `},"output_tokens":`...)
	b = dialect.AppendInt(b, u.Output)
	b = append(b, `,"output_tokens_details":{"reasoning_tokens":`...)
	b = dialect.AppendInt(b, u.Reasoning)
	b = append(b, `},"total_tokens":`...)
	b = dialect.AppendInt(b, u.Total())
	return append(b, '}')
}

// itemsOf are the output items of an answer's blocks.
func itemsOf(base string, blocks []dialect.Block) []item {
	items := make([]item, 0, len(blocks))
	for i := range blocks {
		bl := &blocks[i]
		it := item{done: true}
		switch bl.Kind {
		case dialect.BlockText:
			it.kind, it.text = itemMessage, []byte(bl.Text)
		case dialect.BlockThinking:
			it.kind, it.text, it.enc = itemReasoning, []byte(bl.Text), []byte(bl.Signature)
		case dialect.BlockRedactedThinking:
			it.kind, it.enc = itemReasoning, []byte(RedactedPrefix+bl.Data)
		case dialect.BlockToolUse:
			it.kind, it.text, it.callID, it.name = itemFunctionCall, []byte(bl.Input), bl.ToolID, bl.ToolName
		default:
			continue
		}
		it.setID(base, len(items))
		items = append(items, it)
	}
	return items
}

// EncodeResponse appends the Response object of r to dst.
func (Codec) EncodeResponse(dst []byte, r *dialect.Response) ([]byte, error) {
	base := idBase(r.ID)
	h := head{id: "resp_" + base, model: r.Model, created: time.Now().Unix()}
	status, reason := statusOf(r.StopReason)
	var u *billing.Usage
	if r.UsageReported {
		u = &r.Usage
	}
	return appendResponse(dst, &h, status, reason, itemsOf(base, r.Content), u, nil), nil
}
