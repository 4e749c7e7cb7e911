package mockprovider

import (
	"crypto/sha256"
	"encoding/base64"
	"hash/maphash"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// msgRequest is what the mock reads from an Anthropic Messages request.
type msgRequest struct {
	mockFields
	model     string
	stream    bool
	thinking  bool
	maxTokens int64

	inputBytes, images int
	breakpoints        []breakpoint
	echo               string

	afterTool  bool
	tool       bool
	toolName   string
	toolSchema gjson.Result
	// badSignature marks a thinking block sent back without the
	// signature the mock gave it.
	badSignature bool
	// unthoughtToolTurn marks a last assistant message with a tool_use
	// that does not start with a thinking block.
	unthoughtToolTurn bool
}

// breakpoint is a block carrying cache_control: the prompt up to and
// including it is a cacheable prefix.
type breakpoint struct {
	hash   uint64
	tokens int64
	long   bool // ttl "1h"
}

// parseMessages reads a Messages request; msg is not empty when it is
// invalid.
func (h *Handler) parseMessages(body []byte) (req msgRequest, msg string) {
	if msg := h.bodyError(body, "the request body is not valid JSON"); msg != "" {
		return req, msg
	}
	req.mockFields = h.defaultMockFields()
	var system, messages, tools, toolChoice, maxTokens gjson.Result
	gjson.ParseBytes(body).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model":
			req.model = v.String()
		case "stream":
			req.stream = v.Bool()
		case "max_tokens":
			maxTokens = v
		case "system":
			system = v
		case "messages":
			messages = v
		case "tools":
			tools = v
		case "tool_choice":
			toolChoice = v
		case "thinking":
			t := v.Get("type").Str
			req.thinking = t == "enabled" || t == "adaptive"
		default:
			req.readMockField(k.Str, v)
		}
		return true
	})
	switch {
	case req.model == "":
		return req, "model: Field required"
	case !maxTokens.Exists():
		return req, "max_tokens: Field required"
	case maxTokens.Type != gjson.Number || maxTokens.Int() < 1:
		return req, "max_tokens: Input should be greater than or equal to 1"
	case !messages.IsArray() || messages.Get("#").Int() == 0:
		return req, "messages: at least one message is required"
	}
	req.maxTokens = maxTokens.Int()
	h.readPrompt(&req, system, messages)
	if req.thinking && req.afterTool && req.unthoughtToolTurn {
		// As Anthropic does: a tool loop with thinking on continues from
		// the turn's signed thinking, which the client must send back.
		return req, "messages: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, " +
			"a final `assistant` message must start with a thinking block (preceding the lastmost set of `tool_use` and `tool_result` blocks)."
	}
	req.chooseTool(tools, toolChoice)
	return req, ""
}

// readPrompt sizes the system prompt and the messages, records the cache
// breakpoints and finds the echo.
func (h *Handler) readPrompt(req *msgRequest, system, messages gjson.Result) {
	var ph maphash.Hash
	ph.SetSeed(h.seed)
	ph.WriteString(req.model)
	block := func(b gjson.Result) {
		switch b.Get("type").Str {
		case "text":
			t := b.Get("text").Str
			req.inputBytes += len(t)
			ph.WriteString(t)
		case "image", "document":
			req.images++
			ph.WriteString(b.Get("source").Raw)
		case "tool_result":
			n, imgs, _ := anthropicContent(b.Get("content"))
			req.inputBytes += n
			req.images += imgs
			ph.WriteString(b.Raw)
		case "tool_use":
			in := b.Get("input").Raw
			req.inputBytes += len(in)
			ph.WriteString(b.Get("name").Str)
			ph.WriteString(in)
		case "thinking":
			t := b.Get("thinking").Str
			req.inputBytes += len(t)
			ph.WriteString(t)
			if b.Get("signature").Str != mockSignature(t) {
				req.badSignature = true
			}
		default:
			ph.WriteString(b.Raw)
		}
		ph.WriteByte(0)
		if cc := b.Get("cache_control"); cc.Exists() {
			req.breakpoints = append(req.breakpoints, breakpoint{
				hash:   ph.Sum64(),
				tokens: promptTokens(req.inputBytes, req.images),
				long:   cc.Get("ttl").Str == "1h",
			})
		}
	}
	if system.IsArray() {
		system.ForEach(func(_, b gjson.Result) bool { block(b); return true })
	} else {
		req.inputBytes += len(system.Str)
		ph.WriteString(system.Str)
	}
	ph.WriteByte(1)
	messages.ForEach(func(_, m gjson.Result) bool {
		role := m.Get("role").Str
		ph.WriteString(role)
		c := m.Get("content")
		req.afterTool = false
		if role == "assistant" {
			first := c.Get("0.type").Str
			req.unthoughtToolTurn = first != "thinking" && first != "redacted_thinking" && c.Get(`#(type=="tool_use")`).Exists()
		}
		if c.IsArray() {
			var text strings.Builder
			c.ForEach(func(_, b gjson.Result) bool {
				block(b)
				switch b.Get("type").Str {
				case "text":
					if text.Len() > 0 {
						text.WriteByte(' ')
					}
					text.WriteString(b.Get("text").Str)
				case "tool_result":
					req.afterTool = true
				}
				return true
			})
			if role == "user" {
				req.echo = echoOf(text.String())
			}
		} else {
			req.inputBytes += len(c.Str)
			ph.WriteString(c.Str)
			if role == "user" {
				req.echo = echoOf(c.Str)
			}
		}
		ph.WriteByte(1)
		return true
	})
}

// anthropicContent sizes a tool result's content: a string or blocks.
func anthropicContent(c gjson.Result) (n, imgs int, text string) {
	if !c.IsArray() {
		return len(c.Str), 0, c.Str
	}
	c.ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").Str == "text" {
			n += len(b.Get("text").Str)
		} else {
			imgs++
		}
		return true
	})
	return n, imgs, ""
}

// chooseTool decides whether the answer is a tool_use, and of which tool.
func (req *msgRequest) chooseTool(tools, choice gjson.Result) {
	if !tools.IsArray() || req.afterTool {
		return
	}
	want := ""
	switch choice.Get("type").Str {
	case "none":
		return
	case "tool":
		want = choice.Get("name").Str
	}
	tools.ForEach(func(_, t gjson.Result) bool {
		name, schema := t.Get("name").Str, t.Get("input_schema")
		if name == "" || !schema.Exists() || (want != "" && name != want) {
			return true
		}
		req.tool, req.toolName, req.toolSchema = true, name, schema
		return false
	})
}

// msgUsage is the usage of one Messages answer.
type msgUsage struct {
	input, cacheCreation, cacheRead int64
	creation1h                      bool
	output                          int64
	// searches and fetches are the server tools' calls (mock_web_searches,
	// mock_web_fetches), reported in server_tool_use when either is set.
	searches, fetches int64
}

// msgAnswer is the mock's answer to a Messages request.
type msgAnswer struct {
	id, thinking, signature, text string
	toolID, toolInput             string
	stop                          string
	usage                         msgUsage
	// container is the code execution container the answer used
	// (mock_code_sessions), "" for none.
	container string
}

// usage computes input and cache tokens of req at now, and caches its
// breakpoints.
func (h *Handler) msgUsage(req *msgRequest, now time.Time) msgUsage {
	total := promptTokens(req.inputBytes, req.images)
	u := msgUsage{input: total}
	if len(req.breakpoints) == 0 {
		return u
	}
	keys := make([]uint64, len(req.breakpoints))
	for i, bp := range req.breakpoints {
		keys[i] = bp.hash
	}
	last := req.breakpoints[len(req.breakpoints)-1]
	ttl := 5 * time.Minute
	if last.long {
		ttl, u.creation1h = time.Hour, true
	}
	hit := h.cache.lookupAndMark(keys, now, ttl)
	if hit >= 0 {
		u.cacheRead = req.breakpoints[hit].tokens
	}
	if hit != len(keys)-1 {
		u.cacheCreation = last.tokens - u.cacheRead
	}
	u.input = max(total-u.cacheRead-u.cacheCreation, 0)
	return u
}

// answerMessages computes the answer to req.
func (h *Handler) answerMessages(req *msgRequest) msgAnswer {
	a := msgAnswer{id: newID("msg_01", 22), stop: "end_turn", usage: h.msgUsage(req, h.clock())}
	a.usage.searches, a.usage.fetches = req.searches, req.fetches
	if req.codeSessions > 0 {
		a.container = newID("container_", 24)
	}
	var thinking string
	if req.thinking {
		thinking = reasoningText(req.echo)
	}
	if req.tool {
		a.thinking = thinking
		a.toolID = newID("toolu_01", 22)
		a.toolInput = toolArguments(req.toolSchema, req.echo)
		a.stop = "tool_use"
		a.usage.output = textTokens(a.thinking) + textTokens(req.toolName+a.toolInput)
	} else {
		var cut bool
		a.thinking, a.text, cut = applyBudget(thinking, replyText(req.echo, req.chunks), req.maxTokens)
		if cut {
			a.stop = "max_tokens"
		}
		a.usage.output = textTokens(a.thinking) + textTokens(a.text)
	}
	if req.thinking {
		a.signature = mockSignature(a.thinking)
	}
	return a
}

// mockSignature is the mock's signature of a thinking block's text.
func mockSignature(thinking string) string {
	sum := sha256.Sum256([]byte(thinking))
	return base64.StdEncoding.EncodeToString(append(sum[:], "mock-signature"...))
}

// messages answers POST /v1/messages.
func (h *Handler) messages(w http.ResponseWriter, r *http.Request) {
	body, status, err := readBody(w, r)
	if err != nil {
		writeAnthropicError(w, status, anthropicStatusError(status), err.Error())
		return
	}
	req, msg := h.parseMessages(body)
	if req.status != 0 {
		writeAnthropicError(w, req.status, anthropicStatusError(req.status), "mock error forced by mock_status")
		return
	}
	if msg != "" {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", msg)
		return
	}
	if req.badSignature {
		// As Anthropic does, a thinking block must come back with the
		// signature it was given.
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", "messages: Invalid `signature` in `thinking` block")
		return
	}
	a := h.answerMessages(&req)
	if req.stream {
		h.streamMessages(w, r, &req, &a)
		return
	}
	writeMessagesJSON(w, &req, &a)
}

// countTokens answers POST /v1/messages/count_tokens.
func (h *Handler) countTokens(w http.ResponseWriter, r *http.Request) {
	body, status, err := readBody(w, r)
	if err != nil {
		writeAnthropicError(w, status, anthropicStatusError(status), err.Error())
		return
	}
	if msg := h.bodyError(body, "the request body is not valid JSON"); msg != "" {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", msg)
		return
	}
	var req msgRequest
	parsed := gjson.ParseBytes(body)
	req.model = parsed.Get("model").Str
	h.readPrompt(&req, parsed.Get("system"), parsed.Get("messages"))
	out := `{"input_tokens":` + strconv.FormatInt(promptTokens(req.inputBytes, req.images), 10) + "}"
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(out))
}
