package gemini

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/dialect/internal/mockcache"
)

// Server is a fake Gemini API (and, with Authorize set, a fake Vertex AI,
// which takes the same bodies) for tests and the mock provider. It
// answers generateContent and streamGenerateContent?alt=sse in their real
// shapes, checking the API key.
//
// What it answers depends on the request: with includeThoughts, a thought
// part first, and a thoughtSignature on the part after it (Gemini 3's
// behaviour; a model turn sent back with a function call that lost its
// signature, or with a forged one, is refused as Gemini 3 refuses it);
// then, after a function response, "Tool result: " and the response;
// with function declarations, a call of the allowed (or first) function
// with the prompt as its "query" argument, or of every function with
// "mock:parallel" in the prompt; otherwise "Mock reply to: " and the
// prompt. A system instruction of 64 tokens or more is cached on its
// first use and read from the cache after, as implicit caching does.
// Failures are asked for in the last user text: "mock:throttle" (429
// RESOURCE_EXHAUSTED with a RetryInfo), "mock:500", "mock:503"; on a
// stream, "mock:error" (an error chunk after the first), "mock:cut" (the
// stream ends before its last chunk) and "mock:cut-event" (it ends inside
// an event). With "mock:usage-chunk", a stream's whole usage comes in a
// chunk of its own after the one with the finish reason.
type Server struct {
	// APIKey is the key requests must carry in x-goog-api-key (or the key
	// query parameter), when Authorize is nil.
	APIKey string
	// Authorize, if set, replaces the API key check: it returns the HTTP
	// status, Google status and message of a refusal, or 0 to accept.
	Authorize func(r *http.Request) (code int, status, message string)

	// Requests counts the authorized requests.
	Requests atomic.Int64

	cache mockcache.Prefixes
}

// Limits of the fake.
const (
	minCacheTokens = 64
)

// ServeHTTP answers a generateContent, streamGenerateContent or
// countTokens request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	model, method, ok := modelMethod(r.URL.Path)
	stream := method == "streamGenerateContent"
	if r.Method != http.MethodPost || !ok || (!stream && method != "generateContent" && method != "countTokens") {
		WriteError(w, http.StatusNotFound, "NOT_FOUND", "unknown method "+r.Method+" "+r.URL.Path)
		return
	}
	if code, status, msg := s.authorize(r); code != 0 {
		WriteError(w, code, status, msg)
		return
	}
	s.Requests.Add(1)
	if stream && r.URL.Query().Get("alt") != "sse" {
		WriteError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "the fake streams only with alt=sse")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil || !gjson.ValidBytes(body) {
		WriteError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Invalid JSON payload received.")
		return
	}
	req := gjson.ParseBytes(body)
	if method == "countTokens" {
		countTokens(w, req)
		return
	}
	if !req.Get("contents.0.parts.0").Exists() {
		WriteError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "* GenerateContentRequest.contents: contents is not specified")
		return
	}
	if msg := badSignatures(model, req); msg != "" {
		WriteError(w, http.StatusBadRequest, "INVALID_ARGUMENT", msg)
		return
	}
	prompt := lastUserText(req)
	switch {
	case strings.Contains(prompt, "mock:throttle"):
		writeGoogleError(w, http.StatusTooManyRequests, "RESOURCE_EXHAUSTED", "You exceeded your current quota, please check your plan and billing details.",
			map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "17s"})
		return
	case strings.Contains(prompt, "mock:500"):
		WriteError(w, http.StatusInternalServerError, "INTERNAL", "An internal error has occurred.")
		return
	case strings.Contains(prompt, "mock:503"):
		WriteError(w, http.StatusServiceUnavailable, "UNAVAILABLE", "The model is overloaded. Please try again later.")
		return
	}
	a := s.answer(model, req, prompt)
	if stream {
		writeStream(w, a, prompt)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	b, _ := json.Marshal(a.response(a.parts, "STOP", true))
	w.Write(b)
}

// authorize checks the request's credentials.
func (s *Server) authorize(r *http.Request) (int, string, string) {
	if s.Authorize != nil {
		return s.Authorize(r)
	}
	key := r.Header.Get(APIKeyHeader)
	if key == "" {
		key = r.URL.Query().Get("key")
	}
	if key == "" {
		return http.StatusForbidden, "PERMISSION_DENIED", "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."
	}
	if subtle.ConstantTimeCompare([]byte(key), []byte(s.APIKey)) != 1 {
		return http.StatusBadRequest, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key."
	}
	return 0, "", ""
}

// modelMethod splits a path ending in models/{model}:{method}.
func modelMethod(path string) (model, method string, ok bool) {
	i := strings.LastIndex(path, "/models/")
	if i < 0 {
		return "", "", false
	}
	model, method, ok = strings.Cut(path[i+len("/models/"):], ":")
	return model, method, ok && model != ""
}

// mockAnswer is what the fake answers, before it is written.
type mockAnswer struct {
	model, id string
	parts     []part
	finish    string
	usage     usageMetadata
}

// response is a GenerateContentResponse of parts; usage only if withUsage.
func (a *mockAnswer) response(parts []part, finish string, withUsage bool) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	if finish != "" {
		if finish == "STOP" {
			finish = a.finish
		}
		cand["finishReason"] = finish
	}
	out := map[string]any{"candidates": []any{cand}, "modelVersion": a.model, "responseId": a.id}
	if withUsage {
		u := a.usage
		m := map[string]int64{"promptTokenCount": u.PromptTokenCount, "candidatesTokenCount": u.CandidatesTokenCount,
			"totalTokenCount": u.PromptTokenCount + u.CandidatesTokenCount + u.ThoughtsTokenCount}
		if u.CachedContentTokenCount > 0 {
			m["cachedContentTokenCount"] = u.CachedContentTokenCount
		}
		if u.ThoughtsTokenCount > 0 {
			m["thoughtsTokenCount"] = u.ThoughtsTokenCount
		}
		out["usageMetadata"] = m
	}
	return out
}

// answer builds the fake's answer to req.
func (s *Server) answer(model string, req gjson.Result, prompt string) mockAnswer {
	a := mockAnswer{model: model, id: hash("id", req.Raw)[:20], finish: "STOP"}
	thinking := req.Get("generationConfig.thinkingConfig.includeThoughts").Bool()
	sig := ""
	if thinking {
		text := "Considering: " + prompt
		a.parts = append(a.parts, part{Text: &text, Thought: true})
		a.usage.ThoughtsTokenCount = tokens(text)
		sig = signature(model, prompt)
	}
	contents := req.Get("contents").Array()
	var result strings.Builder
	for _, fr := range contents[len(contents)-1].Get("parts.#.functionResponse").Array() {
		result.WriteString(fr.Get("response").Raw)
	}
	decls := req.Get("tools.#.functionDeclarations|@flatten.#.name").Array()
	switch {
	case result.Len() > 0:
		text := "Tool result: " + result.String()
		a.parts = append(a.parts, part{Text: &text})
	case len(decls) > 0 && req.Get("toolConfig.functionCallingConfig.mode").Str != "NONE":
		names := []string{decls[0].Str}
		if allowed := req.Get("toolConfig.functionCallingConfig.allowedFunctionNames.0").Str; allowed != "" {
			names = []string{allowed}
		} else if strings.Contains(prompt, "mock:parallel") {
			names = names[:0]
			for _, d := range decls {
				names = append(names, d.Str)
			}
		}
		for _, n := range names {
			args, _ := json.Marshal(map[string]string{"query": prompt})
			a.parts = append(a.parts, part{FunctionCall: &functionCall{Name: n, Args: args}})
		}
	default:
		words := strings.Fields("Mock reply to: " + prompt)
		if max := req.Get("generationConfig.maxOutputTokens").Int(); max > 0 && int64(len(words)) > max {
			words, a.finish = words[:max], "MAX_TOKENS"
		}
		text := strings.Join(words, " ")
		a.parts = append(a.parts, part{Text: &text})
	}
	if sig != "" {
		a.parts[1].ThoughtSignature = sig
	}
	for _, p := range a.parts[boolInt(thinking):] {
		if p.Text != nil {
			a.usage.CandidatesTokenCount += tokens(*p.Text)
		} else {
			a.usage.CandidatesTokenCount += tokens(string(p.FunctionCall.Args))
		}
	}
	sys := req.Get("systemInstruction").Raw
	a.usage.PromptTokenCount = tokens(req.Get("contents").Raw) + tokens(sys)
	if n := tokens(sys); n >= minCacheTokens && s.cache.Remember(model, sys) {
		a.usage.CachedContentTokenCount = n
	}
	return a
}

// badSignatures checks the signatures of the model turns sent back, as
// Gemini 3 does: a signature must be the one the fake gave the turn, and
// with thoughts on, the first function call of a turn must carry one.
func badSignatures(model string, req gjson.Result) string {
	thinking := req.Get("generationConfig.thinkingConfig.includeThoughts").Bool()
	contents := req.Get("contents").Array()
	for i, c := range contents {
		if c.Get("role").Str != "model" || i == 0 {
			continue
		}
		want := signature(model, textOf(contents[i-1]))
		firstCall := true
		for _, p := range c.Get("parts").Array() {
			sig := p.Get("thoughtSignature").Str
			if sig != "" && sig != want {
				return "Corrupted thought signature."
			}
			if p.Get("functionCall").Exists() {
				if firstCall && sig == "" && thinking {
					return "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance."
				}
				firstCall = false
			}
		}
	}
	return ""
}

// signature is the fake's thought signature of the turn that answered
// prompt.
func signature(model, prompt string) string {
	return hash("sig", model+"\x00"+prompt)[:32]
}

// lastUserText is the text of the last user content.
func lastUserText(req gjson.Result) string {
	contents := req.Get("contents").Array()
	for i := len(contents) - 1; i >= 0; i-- {
		if contents[i].Get("role").Str != "model" {
			return textOf(contents[i])
		}
	}
	return ""
}

// textOf joins a content's text parts.
func textOf(c gjson.Result) string {
	var b strings.Builder
	for _, t := range c.Get("parts.#.text").Array() {
		b.WriteString(t.Str)
	}
	return b.String()
}

func hash(kind, s string) string {
	sum := sha256.Sum256([]byte(kind + "\x00" + s))
	return hex.EncodeToString(sum[:])
}

// tokens is the fake's token count of s: a token per four bytes.
func tokens(s string) int64 { return int64(len(s)+3) / 4 }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// WriteError writes Google's error shape: {"error":{"code","message",
// "status"}} with code the HTTP status.
func WriteError(w http.ResponseWriter, code int, status, message string) {
	writeGoogleError(w, code, status, message)
}

// writeGoogleError writes an error with details.
func writeGoogleError(w http.ResponseWriter, code int, status, message string, details ...map[string]any) {
	e := map[string]any{"code": code, "message": message, "status": status}
	if len(details) > 0 {
		e["details"] = details
	}
	if status == "INVALID_ARGUMENT" && strings.HasPrefix(message, "API key not valid") {
		e["details"] = []any{map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com"}}
	}
	b, _ := json.Marshal(map[string]any{"error": e})
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	w.Write(b)
}
