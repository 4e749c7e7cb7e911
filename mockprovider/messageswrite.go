package mockprovider

import (
	"net/http"
	"strconv"
)

// appendMsgUsage appends the usage object of an Anthropic message.
func appendMsgUsage(b []byte, u *msgUsage, output int64) []byte {
	b = append(b, `{"input_tokens":`...)
	b = appendInt(b, u.input)
	b = append(b, `,"cache_creation_input_tokens":`...)
	b = appendInt(b, u.cacheCreation)
	b = append(b, `,"cache_read_input_tokens":`...)
	b = appendInt(b, u.cacheRead)
	var short, long int64
	if u.creation1h {
		long = u.cacheCreation
	} else {
		short = u.cacheCreation
	}
	b = append(b, `,"cache_creation":{"ephemeral_5m_input_tokens":`...)
	b = appendInt(b, short)
	b = append(b, `,"ephemeral_1h_input_tokens":`...)
	b = appendInt(b, long)
	b = append(b, `},"output_tokens":`...)
	b = appendInt(b, output)
	b = appendServerToolUse(b, u)
	return append(b, `,"service_tier":"standard"}`...)
}

// appendServerToolUse appends the server_tool_use member of u, when it
// has server tool calls.
func appendServerToolUse(b []byte, u *msgUsage) []byte {
	if u.searches == 0 && u.fetches == 0 {
		return b
	}
	b = append(b, `,"server_tool_use":{"web_search_requests":`...)
	b = appendInt(b, u.searches)
	b = append(b, `,"web_fetch_requests":`...)
	b = appendInt(b, u.fetches)
	return append(b, '}')
}

// appendContainer appends the container member of a, when it used one.
func appendContainer(b []byte, a *msgAnswer) []byte {
	if a.container == "" {
		return b
	}
	b = append(b, `,"container":{"id":`...)
	b = appendString(b, a.container)
	return append(b, `,"expires_at":"2099-01-01T00:00:00Z"}`...)
}

// hasText reports whether the answer has a text block: always, unless a
// thinking answer ran out of tokens before its text.
func (a *msgAnswer) hasText(req *msgRequest) bool {
	return !req.tool && (a.text != "" || a.thinking == "")
}

// writeMessagesJSON answers with a message object.
func writeMessagesJSON(w http.ResponseWriter, req *msgRequest, a *msgAnswer) {
	buf := getBuf()
	defer putBuf(buf)
	b := append(*buf, `{"id":`...)
	b = appendString(b, a.id)
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = appendString(b, req.model)
	b = append(b, `,"content":[`...)
	sep := false
	if req.thinking {
		b = append(b, `{"type":"thinking","thinking":`...)
		b = appendString(b, a.thinking)
		b = append(b, `,"signature":`...)
		b = appendString(b, a.signature)
		b = append(b, '}')
		sep = true
	}
	if req.tool {
		if sep {
			b = append(b, ',')
		}
		b = append(b, `{"type":"tool_use","id":`...)
		b = appendString(b, a.toolID)
		b = append(b, `,"name":`...)
		b = appendString(b, req.toolName)
		b = append(b, `,"input":`...)
		b = append(b, a.toolInput...)
		b = append(b, '}')
	} else if a.hasText(req) {
		if sep {
			b = append(b, ',')
		}
		b = append(b, `{"type":"text","text":`...)
		b = appendString(b, a.text)
		b = append(b, '}')
	}
	b = append(b, `],"stop_reason":`...)
	b = appendString(b, a.stop)
	b = append(b, `,"stop_sequence":null`...)
	b = appendContainer(b, a)
	if req.usage {
		b = append(b, `,"usage":`...)
		b = appendMsgUsage(b, &a.usage, a.usage.output)
	}
	b = append(b, '}')
	*buf = b
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// msgStream writes the events of one streamed message.
type msgStream struct {
	*sseWriter
	index  int64
	pinged bool
}

// event begins an event named name; the caller appends its JSON data.
func (s *msgStream) event(name string) []byte {
	b := append(s.begin(), "event: "...)
	b = append(b, name...)
	b = append(b, "\ndata: "...)
	return b
}

// send ends and writes the event b.
func (s *msgStream) send(b []byte) bool {
	return s.emit(append(b, "\n\n"...))
}

// blockStart writes content_block_start with the block JSON, then a ping
// after the first block.
func (s *msgStream) blockStart(block []byte) bool {
	b := s.event("content_block_start")
	b = append(b, `{"type":"content_block_start","index":`...)
	b = appendInt(b, s.index)
	b = append(b, `,"content_block":`...)
	b = append(b, block...)
	if !s.send(append(b, '}')) {
		return false
	}
	if s.pinged {
		return true
	}
	s.pinged = true
	return s.send(append(s.event("ping"), `{"type":"ping"}`...))
}

// deltas writes text cut at bounds as content_block_delta events of type
// typ, whose text field is field.
func (s *msgStream) deltas(typ, field, text string, bounds []int) bool {
	for i := 1; i < len(bounds); i++ {
		b := s.event("content_block_delta")
		b = append(b, `{"type":"content_block_delta","index":`...)
		b = appendInt(b, s.index)
		b = append(b, `,"delta":{"type":"`...)
		b = append(b, typ...)
		b = append(b, `","`...)
		b = append(b, field...)
		b = append(b, `":`...)
		b = appendString(b, text[bounds[i-1]:bounds[i]])
		if !s.send(append(b, "}}"...)) {
			return false
		}
	}
	return true
}

// blockStop writes content_block_stop and moves to the next index.
func (s *msgStream) blockStop() bool {
	b := s.event("content_block_stop")
	b = append(b, `{"type":"content_block_stop","index":`...)
	b = appendInt(b, s.index)
	s.index++
	return s.send(append(b, '}'))
}

// streamMessages answers with Anthropic's event stream.
func (h *Handler) streamMessages(w http.ResponseWriter, r *http.Request, req *msgRequest, a *msgAnswer) {
	s := &msgStream{sseWriter: newSSE(w, r, req.delay)}
	defer s.close()
	b := s.event("message_start")
	b = append(b, `{"type":"message_start","message":{"id":`...)
	b = appendString(b, a.id)
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = appendString(b, req.model)
	b = append(b, `,"content":[],"stop_reason":null,"stop_sequence":null`...)
	if req.usage {
		// The server tools have not run yet.
		start := a.usage
		start.searches, start.fetches = 0, 0
		b = append(b, `,"usage":`...)
		b = appendMsgUsage(b, &start, 1)
	}
	if !s.send(append(b, "}}"...)) {
		return
	}
	if req.thinking {
		ok := s.blockStart([]byte(`{"type":"thinking","thinking":"","signature":""}`)) &&
			s.deltas("thinking_delta", "thinking", a.thinking, wordBounds(a.thinking, max(req.chunks/2, 1))) &&
			s.deltas("signature_delta", "signature", a.signature, []int{0, len(a.signature)}) &&
			s.blockStop()
		if !ok {
			return
		}
	}
	if req.tool {
		block := append([]byte(`{"type":"tool_use","id":`), `"`+a.toolID+`"`...)
		block = append(block, `,"name":`...)
		block = appendString(block, req.toolName)
		block = append(block, `,"input":{}}`...)
		ok := s.blockStart(block) &&
			s.deltas("input_json_delta", "partial_json", a.toolInput, evenBounds(a.toolInput, req.chunks)) &&
			s.blockStop()
		if !ok {
			return
		}
	} else if a.hasText(req) {
		ok := s.blockStart([]byte(`{"type":"text","text":""}`)) &&
			s.deltas("text_delta", "text", a.text, wordBounds(a.text, req.chunks)) &&
			s.blockStop()
		if !ok {
			return
		}
	}
	b = s.event("message_delta")
	b = append(b, `{"type":"message_delta","delta":{"stop_reason":`...)
	b = appendString(b, a.stop)
	b = append(b, `,"stop_sequence":null`...)
	b = append(appendContainer(b, a), '}')
	if req.usage {
		b = append(b, `,"usage":{"input_tokens":`...)
		b = appendInt(b, a.usage.input)
		b = append(b, `,"cache_creation_input_tokens":`...)
		b = appendInt(b, a.usage.cacheCreation)
		b = append(b, `,"cache_read_input_tokens":`...)
		b = appendInt(b, a.usage.cacheRead)
		b = append(b, `,"output_tokens":`...)
		b = appendInt(b, a.usage.output)
		b = appendServerToolUse(b, &a.usage)
		b = append(b, '}')
	}
	if !s.send(append(b, '}')) {
		return
	}
	s.send(append(s.event("message_stop"), `{"type":"message_stop"}`...))
}
