package chatproxy

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/jsonlimit"
)

// The OpenAI Responses API (/v1/responses) is proxied like chat: the
// client's bytes pass through with the model alias as the only edit (the
// stream's response.completed event carries the usage, so nothing is
// injected), the usage is read by billing.NormalizeResponses, from the
// JSON body's "usage" or from the response object of the stream's final
// event, and a stream ends with response.completed, response.incomplete,
// response.failed or error. The response's id and status are kept
// (Result.ResponseID, Result.ResponseStatus) for the caller to map the id
// to the deployment that holds the response.

// InspectResponses validates a Responses API create request body: a JSON
// object with a non-empty string model, an input (a string or an array of
// items) unless previous_response_id or a prompt template stands for it,
// and boolean stream and background, nested at most maxDepth levels (zero
// means jsonlimit.DefaultMaxDepth). A repeated model, stream, background
// or previous_response_id is refused, as in InspectChat.
func InspectResponses(body []byte, maxDepth int) (Inspected, *apierror.Error) {
	r := reqScan{b: body}
	r.s.Reset(body, jsonlimit.OrDefault(maxDepth))
	var (
		in                  Inspected
		model, prev         gjson.Result
		input, instr, tools int
		hasInput, hasPrompt bool
		seen                uint8
	)
	member := func(key string, v token) bool {
		var ok bool
		var e *apierror.Error
		switch key {
		case "model":
			e = once(&seen, 1, "model")
			model, ok = r.result(v)
			in.model = span{v.Start, v.Start + len(model.Raw)}
		case "stream":
			e = once(&seen, 2, "stream")
			var s gjson.Result
			if s, ok = r.result(v); e == nil {
				in.Stream, e = boolField("stream", s)
			}
		case "background":
			e = once(&seen, 4, "background")
			var s gjson.Result
			if s, ok = r.result(v); e == nil {
				in.Background, e = boolField("background", s)
			}
		case "previous_response_id":
			e = once(&seen, 8, "previous_response_id")
			if prev, ok = r.result(v); ok && prev.Type != gjson.Null && prev.Type != gjson.String {
				e = apierror.InvalidRequest("previous_response_id", "previous_response_id must be a string")
			}
		case "input":
			hasInput = v.Kind != jsonlimit.Null
			if v.Kind == jsonlimit.BeginArray {
				input, ok = r.messagesBytes()
			} else {
				input, ok = r.textLen(v)
			}
		case "instructions":
			instr, ok = r.textLen(v)
		case "tools":
			tools, ok = r.rawLen(v)
		case "prompt", "conversation":
			hasPrompt = v.Kind != jsonlimit.Null
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
	case evCompleted, evIncomplete, evFailed:
		resp := root.Get("response")
		t.responseObject(resp)
		t.usageFrom(usageMember(resp, "usage"))
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
		return billing.NormalizeAnthropic(u)
	case Responses:
		return billing.NormalizeResponses(u)
	}
	return billing.NormalizeOpenAI(u)
}
