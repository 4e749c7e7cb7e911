package mockprovider

import (
	"net/http"
	"strconv"
)

// appendChatUsage appends the usage object of a.
func appendChatUsage(b []byte, a *chatAnswer) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = appendInt(b, a.prompt)
	b = append(b, `,"completion_tokens":`...)
	b = appendInt(b, a.completion)
	b = append(b, `,"total_tokens":`...)
	b = appendInt(b, a.prompt+a.completion)
	b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
	b = appendInt(b, a.cached)
	b = append(b, `,"audio_tokens":`...)
	b = appendInt(b, a.audioIn)
	b = append(b, `},"completion_tokens_details":{"reasoning_tokens":`...)
	b = appendInt(b, a.reasoningT)
	b = append(b, `,"audio_tokens":`...)
	b = appendInt(b, a.audioOut)
	return append(b, `,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`...)
}

// appendToolCall appends the tool call of a; args is its arguments so far.
func appendToolCall(b []byte, req *chatRequest, a *chatAnswer, index bool, args string) []byte {
	b = append(b, '{')
	if index {
		b = append(b, `"index":0,`...)
	}
	b = append(b, `"id":`...)
	b = appendString(b, a.toolID)
	b = append(b, `,"type":"function","function":{"name":`...)
	b = appendString(b, req.toolName)
	b = append(b, `,"arguments":`...)
	b = appendString(b, args)
	return append(b, `}}`...)
}

// writeChatJSON answers with a chat.completion object.
func writeChatJSON(w http.ResponseWriter, req *chatRequest, a *chatAnswer) {
	buf := getBuf()
	defer putBuf(buf)
	b := append(*buf, `{"id":`...)
	b = appendString(b, a.id)
	b = append(b, `,"object":"chat.completion","created":`...)
	b = appendInt(b, a.created)
	b = append(b, `,"model":`...)
	b = appendString(b, req.model)
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	if req.tool {
		b = append(b, `null,"tool_calls":[`...)
		b = appendToolCall(b, req, a, false, a.toolArgs)
		b = append(b, ']')
	} else {
		b = appendString(b, a.content)
		if req.thinking {
			b = append(b, `,"reasoning_content":`...)
			b = appendString(b, a.reasoning)
		}
	}
	b = append(b, `,"refusal":null,"annotations":[]},"logprobs":null,"finish_reason":`...)
	b = appendString(b, a.finish)
	b = append(b, `}]`...)
	if req.usage {
		b = append(b, `,"usage":`...)
		b = appendChatUsage(b, a)
	}
	b = append(b, `,"service_tier":"default","system_fingerprint":"fp_mock"}`...)
	*buf = b
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// chatStream writes the chunks of one streamed chat completion.
type chatStream struct {
	*sseWriter
	head      []byte // `data: {…,"choices":[`
	nullUsage bool
}

// start begins a chunk; the caller appends the delta JSON and ends it.
func (s *chatStream) start() []byte {
	b := append(s.begin(), s.head...)
	return append(b, `{"index":0,"delta":`...)
}

// end completes the chunk b with the finish reason (none when empty) and
// writes it.
func (s *chatStream) end(b []byte, finish string) bool {
	b = append(b, `,"logprobs":null,"finish_reason":`...)
	if finish == "" {
		b = append(b, "null"...)
	} else {
		b = appendString(b, finish)
	}
	b = append(b, `}]`...)
	if s.nullUsage {
		b = append(b, `,"usage":null`...)
	}
	return s.emit(append(b, "}\n\n"...))
}

// streamChat answers with a stream of chat.completion.chunk events.
func (h *Handler) streamChat(w http.ResponseWriter, r *http.Request, req *chatRequest, a *chatAnswer) {
	s := &chatStream{sseWriter: newSSE(w, r, req.delay), nullUsage: req.includeUsage && req.usage}
	defer s.close()
	head := append(make([]byte, 0, 160+len(req.model)), `data: {"id":`...)
	head = appendString(head, a.id)
	head = append(head, `,"object":"chat.completion.chunk","created":`...)
	head = appendInt(head, a.created)
	head = append(head, `,"model":`...)
	head = appendString(head, req.model)
	head = append(head, `,"service_tier":"default","system_fingerprint":"fp_mock","choices":[`...)
	s.head = head

	if req.tool {
		b := append(s.start(), `{"role":"assistant","content":null,"tool_calls":[`...)
		b = appendToolCall(b, req, a, true, "")
		ok := s.end(append(b, `],"refusal":null}`...), "")
		bounds := evenBounds(a.toolArgs, req.chunks)
		for i := 1; ok && i < len(bounds); i++ {
			b = append(s.start(), `{"tool_calls":[{"index":0,"function":{"arguments":`...)
			b = appendString(b, a.toolArgs[bounds[i-1]:bounds[i]])
			ok = s.end(append(b, `}}]}`...), "")
		}
		if !ok {
			return
		}
	} else {
		if !s.end(append(s.start(), `{"role":"assistant","content":"","refusal":null}`...), "") {
			return
		}
		if !s.pieces("reasoning_content", a.reasoning, wordBounds(a.reasoning, max(req.chunks/2, 1))) ||
			!s.pieces("content", a.content, wordBounds(a.content, req.chunks)) {
			return
		}
	}
	if !s.end(append(s.start(), "{}"...), a.finish) {
		return
	}
	if s.nullUsage {
		b := append(s.begin(), s.head...)
		b = append(b, `],"usage":`...)
		b = appendChatUsage(b, a)
		if !s.emit(append(b, "}\n\n"...)) {
			return
		}
	}
	s.emit(append(s.begin(), "data: [DONE]\n\n"...))
}

// pieces streams text cut at bounds, one delta field per chunk.
func (s *chatStream) pieces(name, text string, bounds []int) bool {
	for i := 1; i < len(bounds); i++ {
		b := append(s.start(), `{"`...)
		b = append(b, name...)
		b = append(b, `":`...)
		b = appendString(b, text[bounds[i-1]:bounds[i]])
		if !s.end(append(b, '}'), "") {
			return false
		}
	}
	return true
}
