package chatproxy

import (
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect/anthropic"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"github.com/caddy-air/caddy-air/dialect/responses"
	"github.com/caddy-air/caddy-air/jsonlimit"
)

// The OpenAI Responses API (/v1/responses) is proxied like chat: the
// client's bytes pass through with the model alias as the only edit (the
// stream's response.completed event carries the usage, so nothing is
// injected), the usage is read by responses.NormalizeUsage, from the
// JSON body's "usage" or from the response object of the stream's final
// event, and a stream ends with response.completed, response.incomplete,
// response.failed or error. The response's id and status are kept
// (Result.ResponseID, Result.ResponseStatus) for the caller to map the id
// to the deployment that holds the response.

// InspectResponses validates a Responses API create request body: a JSON
// object with a non-empty string model, an input (a string or an array of
// items) unless previous_response_id or a prompt template stands for it,
// and boolean stream and background, nested at most maxDepth levels (zero
// means jsonlimit.DefaultMaxDepth). A repeated member that the gateway
// reads (those below, and in input's items their content and tool calls)
// is refused, as in InspectChat.
func InspectResponses(body []byte, maxDepth int) (Inspected, *apierror.Error) {
	r := reqScan{b: body}
	r.s.Reset(body, jsonlimit.OrDefault(maxDepth))
	var (
		in                  Inspected
		model, prev         gjson.Result
		input, instr, tools int
		hasInput, hasPrompt bool
		seen                uint32
	)
	member := func(key string, v token) bool {
		var ok bool
		var e *apierror.Error
		if bit := responsesMember(key); bit != 0 {
			r.once(&seen, bit, key)
		}
		switch key {
		case "model":
			model, ok = r.result(v)
			in.model = span{v.Start, v.Start + len(model.Raw)}
		case "stream":
			var s gjson.Result
			if s, ok = r.result(v); ok {
				in.Stream, e = boolField("stream", s)
			}
		case "background":
			var s gjson.Result
			if s, ok = r.result(v); ok {
				in.Background, e = boolField("background", s)
			}
		case "previous_response_id":
			if prev, ok = r.result(v); ok && prev.Type != gjson.Null && (prev.Type != gjson.String || !utf8.ValidString(prev.Raw)) {
				e = apierror.InvalidRequest("previous_response_id", "previous_response_id must be a string")
			}
		case "input":
			hasInput = v.Kind != jsonlimit.Null
			if v.Kind == jsonlimit.BeginArray {
				input, ok = r.messagesBytes(key)
			} else {
				input, ok = r.textLen(v)
			}
		case "instructions":
			instr, ok = r.textLen(v)
		case "tools":
			tools, ok = r.rawLen(v)
		case "prompt", "conversation":
			hasPrompt = hasPrompt || v.Kind != jsonlimit.Null
			_, ok = r.skip(v)
		case "max_output_tokens":
			var n gjson.Result
			if n, ok = r.result(v); ok {
				in.MaxTokens, e = positiveInt(key, n)
			}
		default:
			_, ok = r.skip(v)
		}
		r.refuse(e)
		return ok
	}
	if e := r.object(member); e != nil {
		return Inspected{}, e
	}
	var e *apierror.Error
	if in.Model, e = modelField(model); e != nil {
		return Inspected{}, e
	}
	if prev.Type == gjson.String {
		in.PreviousResponseID = strings.Clone(prev.Str)
	}
	if !hasInput && !hasPrompt && in.PreviousResponseID == "" {
		return Inspected{}, apierror.InvalidRequest("input", "you must provide an input parameter")
	}
	in.PromptBytes = input + instr + tools
	return in, nil
}

// responsesMember returns the bit of a top-level member of a Responses
// request that the gateway reads, zero for the others.
func responsesMember(key string) uint32 {
	switch key {
	case "model":
		return 1 << 0
	case "stream":
		return 1 << 1
	case "background":
		return 1 << 2
	case "previous_response_id":
		return 1 << 3
	case "input":
		return 1 << 4
	case "instructions":
		return 1 << 5
	case "tools":
		return 1 << 6
	case "prompt":
		return 1 << 7
	case "conversation":
		return 1 << 8
	case "max_output_tokens":
		return 1 << 9
	}
	return 0
}

// Terminal events of a Responses stream.
const (
	evCompleted  = "response.completed"
	evIncomplete = "response.incomplete"
	evFailed     = "response.failed"
	evError      = "error"
)

// responsesEvent collects usage, output size, the response's id and status
// and errors from the JSON payload of one Responses stream event. Every
// event names itself in "type"; only the few that matter are read further.
func (t *tap) responsesEvent(payload []byte) {
	if jsonlimit.Check(payload, jsonlimit.OrDefault(t.maxDepth)) != nil {
		t.outBytes += int64(len(payload))
		return
	}
	root := gjson.Parse(str(payload))
	typ := root.Get("type").Str
	switch typ {
	case "response.output_text.delta", "response.reasoning_summary_text.delta", "response.reasoning_text.delta",
		"response.function_call_arguments.delta", "response.refusal.delta":
		t.outBytes += int64(textLen(root.Get("delta")))
	case "response.created", "response.queued", "response.in_progress":
		t.responseObject(root.Get("response"))
	case "response.output_item.done":
		t.calls.Item(root.Get("output_index").Int(), rawBytes(root.Get("item")))
	case "response.web_search_call.completed", "response.file_search_call.completed",
		"response.image_generation_call.completed", "response.code_interpreter_call.completed":
		kind := strings.TrimSuffix(strings.TrimPrefix(typ, "response."), ".completed")
		t.calls.Completed(kind, root.Get("output_index").Int(), root.Get("item_id").Str)
	case evCompleted, evIncomplete, evFailed:
		resp := root.Get("response")
		t.responseObject(resp)
		t.usageFrom(usageMember(resp, "usage"))
		t.calls.Output(rawBytes(resp.Get("output")))
		t.terminal = true
		t.upstreamError = t.upstreamError || typ == evFailed
	case evError:
		t.terminal, t.upstreamError = true, true
	}
}

// responseObject records a response object's id (the first one seen), its
// status and, for a traced attempt, its model.
func (t *tap) responseObject(resp gjson.Result) {
	if !resp.IsObject() {
		return
	}
	if id := resp.Get("id").Str; t.respID == "" && id != "" {
		t.respID = strings.Clone(id)
	}
	if s := resp.Get("status").Str; s != "" && s != t.respStatus {
		t.respStatus = strings.Clone(s)
	}
	if t.meta != nil {
		t.meta.setModel(resp.Get("model").Str)
	}
}

// responsesOutputBytes sizes the text of a whole response object: the
// text, refusal and arguments of its output items and of their content.
func responsesOutputBytes(resp gjson.Result) int {
	n := 0
	resp.Get("output").ForEach(func(_, item gjson.Result) bool {
		n += textLen(item.Get("arguments"))
		item.Get("content").ForEach(func(_, c gjson.Result) bool {
			n += textLen(c.Get("text")) + textLen(c.Get("refusal"))
			return true
		})
		item.Get("summary").ForEach(func(_, c gjson.Result) bool {
			n += textLen(c.Get("text"))
			return true
		})
		return true
	})
	return n
}

// normalize reads a usage object in the tap's protocol.
func (t *tap) normalize(u []byte) (billing.Usage, error) {
	switch t.proto {
	case Anthropic:
		return anthropic.NormalizeUsage(u)
	case Responses:
		return responses.NormalizeUsage(u)
	}
	return openai.NormalizeUsage(u)
}
