package mockprovider

import (
	"hash/maphash"
	"net/http"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// implicitCacheTTL is how long an OpenAI-style prompt prefix stays cached.
const implicitCacheTTL = 5 * time.Minute

// chatRequest is what the mock reads from a chat completion request.
type chatRequest struct {
	mockFields
	model        string
	stream       bool
	includeUsage bool
	thinking     bool
	caching      bool
	maxTokens    int64

	promptBytes, images       int
	prefixBytes, prefixImages int
	prefixHash                uint64
	echo                      string

	afterTool  bool
	tool       bool
	toolName   string
	toolSchema gjson.Result
}

// parseChat reads a chat completion request. The returned param names the
// offending field when the request is invalid.
func (h *Handler) parseChat(body []byte) (req chatRequest, param, msg string) {
	if msg := h.bodyError(body, "We could not parse the JSON body of your request."); msg != "" {
		return req, "", msg
	}
	req.mockFields = h.defaultMockFields()
	var messages, tools, toolChoice gjson.Result
	thinking := gjson.Result{}
	gjson.ParseBytes(body).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model":
			req.model = v.String()
		case "stream":
			req.stream = v.Bool()
		case "stream_options":
			req.includeUsage = v.Get("include_usage").Bool()
		case "messages":
			messages = v
		case "tools":
			tools = v
		case "tool_choice":
			toolChoice = v
		case "max_tokens", "max_completion_tokens":
			if v.Type != gjson.Null {
				req.maxTokens = v.Int()
				if req.maxTokens < 1 {
					param, msg = k.Str, "Invalid '"+k.Str+"': integer below minimum value. Expected a value >= 1."
				}
			}
		case "enable_thinking":
			thinking = v
		case "enable_context_caching":
			req.caching = v.Bool()
		default:
			req.readMockField(k.Str, v)
		}
		return true
	})
	if param != "" {
		return req, param, msg
	}
	if req.model == "" {
		return req, "model", "you must provide a model parameter"
	}
	if !messages.IsArray() || messages.Get("#").Int() == 0 {
		return req, "messages", "Invalid 'messages': empty array. Expected an array with minimum length 1."
	}
	if thinking.Exists() {
		req.thinking = thinking.Bool()
	} else {
		m := strings.ToLower(req.model)
		req.thinking = strings.Contains(m, "reason") || strings.Contains(m, "think")
	}
	h.readMessages(&req, messages)
	req.chooseTool(tools, toolChoice)
	return req, "", ""
}

// mockFields are the mock_* extension fields shared by every endpoint.
type mockFields struct {
	usage  bool
	chunks int
	delay  time.Duration
	status int
	charges
}

// charges are the mock_* fields that make an answer report the charges
// beyond plain tokens: mock_audio_tokens (chat: that many audio tokens
// in the prompt and in the completion, each capped at its whole),
// mock_web_searches (Anthropic server_tool_use, Responses web_search_call
// items), mock_web_fetches (Anthropic), mock_file_searches,
// mock_code_sessions (Responses code_interpreter_call items, one per
// container; Anthropic: a code execution container) and mock_image_calls
// (Responses image_generation_call items).
type charges struct {
	audio, searches, fetches, fileSearches, codeSessions, imageCalls int64
}

// maxMockCalls bounds each mock_* count of tool calls.
const maxMockCalls = 100

// defaultMockFields returns the behaviour of a request without mock_*
// fields.
func (h *Handler) defaultMockFields() mockFields {
	return mockFields{usage: true, chunks: defaultChunks, delay: h.cfg.ChunkDelay}
}

// readMockField reads k if it is a mock_* extension field.
func (req *mockFields) readMockField(k string, v gjson.Result) {
	switch k {
	case "mock_chunks":
		req.chunks = min(max(int(v.Int()), 1), maxChunks)
	case "mock_chunk_delay_ms":
		req.delay = min(time.Duration(max(v.Int(), 0))*time.Millisecond, time.Minute)
	case "mock_status":
		req.status = forcedStatus(v.Int())
	case "mock_usage":
		req.usage = v.Type != gjson.False
	case "mock_audio_tokens":
		req.audio = min(max(v.Int(), 0), 1<<30)
	case "mock_web_searches":
		req.searches = min(max(v.Int(), 0), maxMockCalls)
	case "mock_web_fetches":
		req.fetches = min(max(v.Int(), 0), maxMockCalls)
	case "mock_file_searches":
		req.fileSearches = min(max(v.Int(), 0), maxMockCalls)
	case "mock_code_sessions":
		req.codeSessions = min(max(v.Int(), 0), maxMockCalls)
	case "mock_image_calls":
		req.imageCalls = min(max(v.Int(), 0), maxMockCalls)
	}
}

// readMessages sizes the prompt, hashes its cacheable prefix (every
// message but the last, or the only one) and finds the echo.
func (h *Handler) readMessages(req *chatRequest, messages gjson.Result) {
	var ph maphash.Hash
	ph.SetSeed(h.seed)
	ph.WriteString(req.model)
	ph.WriteByte(0)
	var prev string
	count, prevBytes, prevImages := 0, 0, 0
	messages.ForEach(func(_, m gjson.Result) bool {
		if count++; count > 1 {
			ph.WriteString(prev)
			req.prefixBytes += prevBytes
			req.prefixImages += prevImages
		}
		n, imgs, text := openAIContent(m.Get("content"))
		m.Get("tool_calls").ForEach(func(_, c gjson.Result) bool {
			n += len(c.Get("function.arguments").Str)
			return true
		})
		req.promptBytes += n
		req.images += imgs
		if m.Get("role").Str == "user" {
			req.echo = echoOf(text)
		}
		req.afterTool = m.Get("role").Str == "tool"
		prev, prevBytes, prevImages = m.Raw, n, imgs
		return true
	})
	if count == 1 {
		ph.WriteString(prev)
		req.prefixBytes, req.prefixImages = prevBytes, prevImages
	}
	req.prefixHash = ph.Sum64()
}

// openAIContent sizes an OpenAI message content (a string or an array of
// parts) and returns its text.
func openAIContent(c gjson.Result) (n, imgs int, text string) {
	if !c.IsArray() {
		return len(c.Str), 0, c.Str
	}
	var b strings.Builder
	c.ForEach(func(_, p gjson.Result) bool {
		switch p.Get("type").Str {
		case "text", "input_text":
			t := p.Get("text").Str
			n += len(t)
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(t)
		case "image_url", "input_image", "input_audio", "file", "video_url":
			imgs++
		}
		return true
	})
	return n, imgs, b.String()
}

// chooseTool decides whether the answer is a call of a function tool, and
// of which one. A conversation that ends with a tool result gets a text
// answer, so that agent loops end.
func (req *chatRequest) chooseTool(tools, choice gjson.Result) {
	if !tools.IsArray() || choice.Str == "none" || req.afterTool {
		return
	}
	want := choice.Get("function.name").Str
	tools.ForEach(func(_, t gjson.Result) bool {
		name := t.Get("function.name").Str
		if name == "" || (want != "" && name != want) {
			return true
		}
		req.tool, req.toolName, req.toolSchema = true, name, t.Get("function.parameters")
		return false
	})
}

// chatAnswer is the mock's answer to a chat request.
type chatAnswer struct {
	id, content, reasoning string
	toolID, toolArgs       string
	finish                 string
	created                int64
	prompt, cached         int64
	completion, reasoningT int64
	audioIn, audioOut      int64
}

// answerChat computes the answer to req.
func (h *Handler) answerChat(req *chatRequest) chatAnswer {
	now := h.clock()
	a := chatAnswer{id: newID("chatcmpl-", 29), created: now.Unix(), finish: "stop"}
	a.prompt = promptTokens(req.promptBytes, req.images)
	if req.caching {
		if h.cache.lookupAndMark([]uint64{req.prefixHash}, now, implicitCacheTTL) == 0 {
			p := promptTokens(req.prefixBytes, req.prefixImages)
			a.cached = min(max(p-p/4, 1), a.prompt)
		}
	}
	if req.tool {
		a.toolID = newID("call_", 24)
		a.toolArgs = toolArguments(req.toolSchema, req.echo)
		a.finish = "tool_calls"
		a.completion = textTokens(req.toolName + a.toolArgs)
		return a
	}
	var reasoning string
	if req.thinking {
		reasoning = reasoningText(req.echo)
	}
	var cut bool
	a.reasoning, a.content, cut = applyBudget(reasoning, replyText(req.echo, req.chunks), req.maxTokens)
	if cut {
		a.finish = "length"
	}
	a.reasoningT = textTokens(a.reasoning)
	a.completion = a.reasoningT + textTokens(a.content)
	a.audioIn, a.audioOut = min(req.audio, a.prompt-a.cached), min(req.audio, a.completion)
	return a
}

// refusedOpenAI answers an OpenAI-shaped request that its parse refused,
// and reports whether it did: forced (mock_status) gives that status, msg
// a 400 invalid_request_error naming param.
func refusedOpenAI(w http.ResponseWriter, forced int, param, msg string) bool {
	if forced != 0 {
		typ, code := openAIStatusError(forced)
		writeOpenAIError(w, forced, typ, code, "", "mock error forced by mock_status")
		return true
	}
	if msg != "" {
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", param, msg)
		return true
	}
	return false
}

// chat answers POST /v1/chat/completions.
func (h *Handler) chat(w http.ResponseWriter, r *http.Request) {
	body, status, err := readBody(w, r)
	if err != nil {
		writeOpenAIError(w, status, "invalid_request_error", "", "", err.Error())
		return
	}
	req, param, msg := h.parseChat(body)
	if refusedOpenAI(w, req.status, param, msg) {
		return
	}
	a := h.answerChat(&req)
	if req.stream {
		h.streamChat(w, r, &req, &a)
		return
	}
	writeChatJSON(w, &req, &a)
}
