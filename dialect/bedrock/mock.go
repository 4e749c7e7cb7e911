package bedrock

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/dialect/internal/mockcache"
)

// Server is a fake Bedrock Runtime for tests and the mock provider: it
// verifies each request's SigV4 signature for real (with its own copy of
// the secret) and answers Converse and ConverseStream in their real
// shapes, the stream in the binary event stream framing.
//
// What it answers depends on the request: a reasoning block first when
// additionalModelRequestFields.thinking is enabled (signed, and a thinking
// block sent back with a wrong signature is refused as Bedrock refuses
// it); then, after a tool result, "Tool result: " and its text; with
// tools declared, a call of the chosen (or first) tool with the prompt as
// its "query" argument, or of every tool with "mock:parallel" in the
// prompt; otherwise "Mock reply to: " and the prompt. A system prompt
// followed by a cache point is written to the cache on its first use and
// read from it after. Failures are asked for in the last user text:
// "mock:throttle" (429 ThrottlingException), "mock:500", "mock:503"; on a
// stream, "mock:exception" (a throttlingException frame after the first
// events), "mock:cut-between" (the stream ends cleanly between two
// frames) and "mock:cut-frame" (it ends inside a frame).
type Server struct {
	// Region is the region requests must be signed for.
	Region string
	// AccessKeyID and SecretKey are the only credentials it accepts.
	AccessKeyID, SecretKey string
	// RetryAfter, if set, is sent as Retry-After with a throttling 429
	// (Bedrock sends none; a proxy in front of it may).
	RetryAfter time.Duration

	// Requests counts the requests whose signature was valid.
	Requests atomic.Int64

	cache mockcache.Prefixes
}

// ServeHTTP answers a Converse or ConverseStream request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	modelID, stream, ok := ModelFromPath(r.URL.EscapedPath())
	if r.Method != http.MethodPost || !ok {
		writeError(w, http.StatusNotFound, "UnknownOperationException", "unknown operation "+r.Method+" "+r.URL.Path)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "ValidationException", "reading the body: "+err.Error())
		return
	}
	if typ, err := s.verifySignature(r, body); err != nil {
		status := http.StatusForbidden
		if typ == "IncompleteSignatureException" {
			status = http.StatusBadRequest
		}
		writeError(w, status, typ, err.Error())
		return
	}
	s.Requests.Add(1)
	if !gjson.ValidBytes(body) || !gjson.GetBytes(body, "messages.0").Exists() {
		writeError(w, http.StatusBadRequest, "ValidationException", "The model returned the following errors: messages: at least one message is required")
		return
	}
	req := gjson.ParseBytes(body)
	if msg := badToolBlocks(req); msg != "" {
		writeError(w, http.StatusBadRequest, "ValidationException", msg)
		return
	}
	if msg := badSignature(req); msg != "" {
		writeError(w, http.StatusBadRequest, "ValidationException", msg)
		return
	}
	prompt := lastUserText(req)
	switch {
	case strings.Contains(prompt, "mock:throttle"):
		if s.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int((s.RetryAfter+time.Second-1)/time.Second)))
		}
		writeError(w, http.StatusTooManyRequests, "ThrottlingException", "Too many requests, please wait before trying again.")
		return
	case strings.Contains(prompt, "mock:500"):
		writeError(w, http.StatusInternalServerError, "InternalServerException", "The server encountered an internal error while processing the request.")
		return
	case strings.Contains(prompt, "mock:503"):
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableException", "The service is currently unavailable.")
		return
	}
	a := s.answer(modelID, req, prompt)
	w.Header().Set("X-Amzn-Requestid", requestID(body))
	if stream {
		s.writeStream(w, a, prompt)
		return
	}
	writeConverse(w, a)
}

// mockAnswer is what the fake answers, before it is written.
type mockAnswer struct {
	blocks []contentBlock
	stop   string
	usage  tokenUsage
}

// answer builds the fake's answer to req.
func (s *Server) answer(modelID string, req gjson.Result, prompt string) mockAnswer {
	var a mockAnswer
	a.stop = "end_turn"
	if req.Get("additionalModelRequestFields.thinking.type").Str == "enabled" {
		text := "Considering: " + prompt
		a.blocks = append(a.blocks, contentBlock{ReasoningContent: &reasoningContent{ReasoningText: &reasoningText{Text: text, Signature: mockSignature(text)}}})
	}
	msgs := req.Get("messages").Array()
	last := msgs[len(msgs)-1]
	tools := req.Get("toolConfig.tools.#.toolSpec.name").Array()
	var result string
	last.Get("content").ForEach(func(_, c gjson.Result) bool {
		if tr := c.Get("toolResult"); tr.Exists() {
			result += tr.Get("content.0.text").Str
		}
		return true
	})
	switch {
	case result != "":
		text := "Tool result: " + result
		a.blocks = append(a.blocks, contentBlock{Text: &text})
	case len(tools) > 0:
		names := []string{tools[0].Str}
		if n := req.Get("toolConfig.toolChoice.tool.name").Str; n != "" {
			names = []string{n}
		} else if strings.Contains(prompt, "mock:parallel") {
			names = names[:0]
			for _, t := range tools {
				names = append(names, t.Str)
			}
		}
		for i, n := range names {
			input, _ := json.Marshal(map[string]string{"query": prompt})
			id := "tooluse_" + requestID([]byte(prompt))[:12] + strconv.Itoa(i)
			a.blocks = append(a.blocks, contentBlock{ToolUse: &toolUseBlock{ToolUseID: id, Name: n, Input: input}})
		}
		a.stop = "tool_use"
	default:
		words := strings.Fields("Mock reply to: " + prompt)
		if max := req.Get("inferenceConfig.maxTokens").Int(); max > 0 && int64(len(words)) > max {
			words, a.stop = words[:max], "max_tokens"
		}
		text := strings.Join(words, " ")
		a.blocks = append(a.blocks, contentBlock{Text: &text})
	}
	for _, b := range a.blocks {
		switch {
		case b.Text != nil:
			a.usage.OutputTokens += tokens(*b.Text)
		case b.ToolUse != nil:
			a.usage.OutputTokens += tokens(string(b.ToolUse.Input))
		case b.ReasoningContent != nil:
			a.usage.OutputTokens += tokens(b.ReasoningContent.ReasoningText.Text)
		}
	}
	a.usage.InputTokens = tokens(req.Get("messages").Raw) + tokens(req.Get("system").Raw)
	if prefix, ok := cachedPrefix(req); ok {
		n := min(tokens(prefix), a.usage.InputTokens)
		if s.cache.Remember(modelID, prefix) {
			a.usage.CacheReadInputTokens = n
		} else {
			a.usage.CacheWriteInputTokens = n
		}
		a.usage.InputTokens -= n
	}
	return a
}

// cachedPrefix is the system text before the request's first system
// cache point.
func cachedPrefix(req gjson.Result) (string, bool) {
	var prefix strings.Builder
	found := false
	req.Get("system").ForEach(func(_, b gjson.Result) bool {
		if b.Get("cachePoint").Exists() {
			found = true
			return false
		}
		prefix.WriteString(b.Get("text").Str)
		return true
	})
	return prefix.String(), found && prefix.Len() > 0
}

// badSignature reports a reasoning block of the history whose signature
// is not the one the fake gave it.
func badSignature(req gjson.Result) string {
	msg := ""
	req.Get("messages.#.content|@flatten.#.reasoningContent.reasoningText").ForEach(func(_, rt gjson.Result) bool {
		if rt.Get("signature").Str != mockSignature(rt.Get("text").Str) {
			msg = "The model returned the following errors: messages: thinking block has an invalid signature"
			return false
		}
		return true
	})
	return msg
}

// badToolBlocks checks the tool blocks as Bedrock does: they need a
// toolConfig, and each result answers a tool use of the message before.
func badToolBlocks(req gjson.Result) string {
	msgs := req.Get("messages").Array()
	hasTools := req.Get("toolConfig.tools.0").Exists()
	for i, m := range msgs {
		for _, c := range m.Get("content").Array() {
			tr := c.Get("toolResult")
			if !tr.Exists() && !c.Get("toolUse").Exists() {
				continue
			}
			if !hasTools {
				return "The toolConfig field must be defined when using toolUse and toolResult content blocks."
			}
			if !tr.Exists() {
				continue
			}
			id := tr.Get("toolUseId").Str
			found := i > 0 && msgs[i-1].Get(`content.#(toolUse.toolUseId==`+strconv.Quote(id)+`)`).Exists()
			if !found {
				return "The model returned the following errors: messages." + strconv.Itoa(i) + ": toolResult block(s) with id " + id + " do not match a toolUse block of the previous turn"
			}
		}
	}
	return ""
}

// lastUserText is the text of the last user message.
func lastUserText(req gjson.Result) string {
	msgs := req.Get("messages").Array()
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Get("role").Str == "user" {
			var b strings.Builder
			for _, t := range msgs[i].Get("content.#.text").Array() {
				b.WriteString(t.Str)
			}
			return b.String()
		}
	}
	return ""
}

// mockSignature is the fake's signature of a reasoning text.
func mockSignature(text string) string {
	sum := sha256.Sum256([]byte("bedrock-mock-thinking\x00" + text))
	return "sig-" + hex.EncodeToString(sum[:12])
}

// requestID derives a stable id from b.
func requestID(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// tokens is the fake's token count of s: a token per four bytes.
func tokens(s string) int64 { return int64(len(s)+3) / 4 }

// writeConverse writes a Converse answer.
func writeConverse(w http.ResponseWriter, a mockAnswer) {
	var out converseResponse
	out.Output.Message = &message{Role: "assistant", Content: a.blocks}
	out.StopReason = a.stop
	out.Usage = &a.usage
	b, _ := json.Marshal(struct {
		converseResponse
		Usage   map[string]int64 `json:"usage"`
		Metrics map[string]int64 `json:"metrics"`
	}{out, usageJSON(a.usage), map[string]int64{"latencyMs": 1}})
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// usageJSON is Converse's usage object, totalTokens included.
func usageJSON(u tokenUsage) map[string]int64 {
	m := map[string]int64{
		"inputTokens":  u.InputTokens,
		"outputTokens": u.OutputTokens,
		"totalTokens":  u.InputTokens + u.OutputTokens + u.CacheReadInputTokens + u.CacheWriteInputTokens,
	}
	if u.CacheReadInputTokens > 0 || u.CacheWriteInputTokens > 0 {
		m["cacheReadInputTokens"], m["cacheWriteInputTokens"] = u.CacheReadInputTokens, u.CacheWriteInputTokens
	}
	return m
}

// writeError writes a Bedrock error: the status, x-amzn-ErrorType and a
// JSON body with the message.
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	b, _ := json.Marshal(map[string]string{"message": msg})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Errortype", typ+":http://internal.amazon.com/coral/com.amazon.bedrock/")
	w.WriteHeader(status)
	w.Write(b)
}
