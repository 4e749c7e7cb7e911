package gemini

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect"
)

// The GenerateContentResponse body.
type (
	generateResponse struct {
		Candidates     []candidate    `json:"candidates"`
		UsageMetadata  *usageMetadata `json:"usageMetadata"`
		ModelVersion   string         `json:"modelVersion"`
		ResponseID     string         `json:"responseId"`
		PromptFeedback *struct {
			BlockReason string `json:"blockReason"`
		} `json:"promptFeedback"`
	}
	candidate struct {
		Content      content `json:"content"`
		FinishReason string  `json:"finishReason"`
	}
	// usageMetadata is Gemini's usage: promptTokenCount includes the
	// cached tokens; candidatesTokenCount excludes the thoughts.
	usageMetadata struct {
		PromptTokenCount        int64 `json:"promptTokenCount"`
		CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
		CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
		ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
		ToolUsePromptTokenCount int64 `json:"toolUsePromptTokenCount"`
	}
)

// Usage normalizes Gemini's usage: the cached tokens are taken out of
// the prompt, the tool-use prompt (billed as input) is added to it, and
// the thoughts (billed as output) are added to the output.
func (u *usageMetadata) Usage() billing.Usage {
	return billing.Usage{
		Input:     u.PromptTokenCount - u.CachedContentTokenCount + u.ToolUsePromptTokenCount,
		CacheRead: u.CachedContentTokenCount,
		Output:    u.CandidatesTokenCount + u.ThoughtsTokenCount,
		Reasoning: u.ThoughtsTokenCount,
	}.Bounded()
}

// finishReason maps a candidate's finishReason; a turn that called a
// function stops for it, although Gemini says STOP.
func finishReason(s string, called bool) dialect.StopReason {
	switch s {
	case "MAX_TOKENS":
		return dialect.StopMaxTokens
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "LANGUAGE":
		return dialect.StopRefusal
	}
	if called {
		return dialect.StopToolUse
	}
	return dialect.StopEnd
}

// ToolID is the id the codec gives the call at position index of the
// answer responseID (or, without one, of a call whose name and args are
// given), since Gemini's calls have none: unique across the turns of a
// conversation, so that a client can match results to calls.
func ToolID(responseID string, index int, name string, args []byte) string {
	if responseID == "" {
		responseID = strconv.FormatUint(uint64(fnv64(name, args)), 36)
	}
	return "call_" + responseID + "_" + strconv.Itoa(index)
}

// signatureMark separates a tool id from the thought signature it
// carries (see WithSignature).
const signatureMark = "__ts_"

// WithSignature appends a call's thought signature to its tool id, in
// base64url so that the id stays within [A-Za-z0-9_-] as Anthropic
// requires: a client protocol with no place for the signature (Chat
// Completions' tool_calls) still sends it back with the id, and Gemini 3
// refuses a call sent back without it.
func WithSignature(id, sig string) string {
	if sig == "" {
		return id
	}
	return id + signatureMark + base64.RawURLEncoding.EncodeToString([]byte(sig))
}

// SignatureOf returns the thought signature a tool id carries, or "".
func SignatureOf(id string) string {
	i := strings.Index(id, signatureMark)
	if i < 0 {
		return ""
	}
	sig, err := base64.RawURLEncoding.DecodeString(id[i+len(signatureMark):])
	if err != nil {
		return ""
	}
	return string(sig)
}

// fnv64 hashes a call without a response id.
func fnv64(name string, args []byte) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h = (h ^ uint64(name[i])) * 1099511628211
	}
	for _, c := range args {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}

// DecodeResponse reads a generateContent answer: its first candidate.
func (Codec) DecodeResponse(body []byte) (*dialect.Response, error) {
	var gr generateResponse
	if err := json.Unmarshal(body, &gr); err != nil {
		return nil, malformed("the answer is not a GenerateContentResponse")
	}
	r := &dialect.Response{ID: gr.ResponseID, Model: gr.ModelVersion}
	if gr.UsageMetadata != nil {
		r.Usage, r.UsageReported = gr.UsageMetadata.Usage(), true
	}
	if len(gr.Candidates) == 0 {
		if gr.PromptFeedback == nil || gr.PromptFeedback.BlockReason == "" {
			return nil, malformed("the answer has no candidate")
		}
		r.StopReason = dialect.StopRefusal
		return r, nil
	}
	c := &gr.Candidates[0]
	calls := 0
	for i := range c.Content.Parts {
		p := &c.Content.Parts[i]
		switch {
		case p.FunctionCall != nil:
			id := p.FunctionCall.ID
			if id == "" {
				id = ToolID(gr.ResponseID, calls, p.FunctionCall.Name, p.FunctionCall.Args)
			}
			args := p.FunctionCall.Args
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			r.Content = append(r.Content, dialect.Block{Kind: dialect.BlockToolUse, ToolID: WithSignature(id, p.ThoughtSignature),
				ToolName: p.FunctionCall.Name, Input: args, Signature: p.ThoughtSignature})
			calls++
		case p.Thought:
			r.Content = append(r.Content, dialect.Block{Kind: dialect.BlockThinking, Text: deref(p.Text), Signature: p.ThoughtSignature})
		case p.Text != nil:
			if p.ThoughtSignature != "" {
				r.Content = append(r.Content, dialect.Block{Kind: dialect.BlockThinking, Signature: p.ThoughtSignature})
			}
			if *p.Text != "" {
				r.Content = append(r.Content, dialect.Block{Kind: dialect.BlockText, Text: *p.Text})
			}
		case p.InlineData != nil:
			r.Content = append(r.Content, dialect.Block{Kind: dialect.BlockImage, Image: &dialect.Image{MediaType: p.InlineData.MimeType, Data: p.InlineData.Data}})
		}
	}
	r.StopReason = finishReason(c.FinishReason, calls > 0)
	return r, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// DecodeError reads Google's {"error":{"code","message","status"}}.
func (Codec) DecodeError(status int, h http.Header, body []byte) *dialect.Error {
	e := googleError(status, gjson.GetBytes(body, "error"))
	if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil && s > 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}

// googleError maps a google.rpc.Status (from an answer or a stream
// event) to an error; status is the HTTP status, or 0 inside a stream.
func googleError(status int, g gjson.Result) *dialect.Error {
	e := &dialect.Error{Message: scrub(g.Get("message").Str)}
	if status == 0 {
		status = int(g.Get("code").Int())
	}
	switch g.Get("status").Str {
	case "INVALID_ARGUMENT", "FAILED_PRECONDITION", "OUT_OF_RANGE":
		e.Status, e.Kind = http.StatusBadRequest, dialect.ErrInvalidRequest
	case "UNAUTHENTICATED":
		e.Status, e.Kind = http.StatusUnauthorized, dialect.ErrAuthentication
	case "PERMISSION_DENIED":
		e.Status, e.Kind = http.StatusForbidden, dialect.ErrPermission
	case "NOT_FOUND":
		e.Status, e.Kind = http.StatusNotFound, dialect.ErrNotFound
	case "RESOURCE_EXHAUSTED":
		e.Status, e.Kind = http.StatusTooManyRequests, dialect.ErrRateLimit
	case "UNAVAILABLE":
		e.Status, e.Kind = http.StatusServiceUnavailable, dialect.ErrOverloaded
	case "DEADLINE_EXCEEDED":
		e.Status, e.Kind = http.StatusGatewayTimeout, dialect.ErrTimeout
	case "INTERNAL", "UNKNOWN", "DATA_LOSS", "ABORTED":
		e.Status, e.Kind = http.StatusBadGateway, dialect.ErrServer
	default:
		e.Status, e.Kind = status, dialect.KindOf(status)
	}
	g.Get("details").ForEach(func(_, d gjson.Result) bool {
		switch {
		case d.Get("reason").Str == "API_KEY_INVALID":
			e.Status, e.Kind = http.StatusUnauthorized, dialect.ErrAuthentication
		case strings.HasSuffix(d.Get("@type").Str, "google.rpc.RetryInfo"):
			if dur, err := time.ParseDuration(d.Get("retryDelay").Str); err == nil && dur > 0 {
				e.RetryAfter = dur
			}
		}
		return true
	})
	if e.Status < 400 || e.Status > 599 {
		e.Status, e.Kind = http.StatusBadGateway, dialect.ErrServer
	}
	if e.Message == "" {
		e.Message = "gemini answered " + strconv.Itoa(status)
	}
	return e
}

// projectPattern finds the Google Cloud project a message names, in a
// resource path or as "project ID".
var projectPattern = regexp.MustCompile(`(?i)\b(projects/|project )[a-z0-9][a-z0-9.:-]*`)

// scrub removes project ids from a provider's message, which the client
// sees.
func scrub(msg string) string {
	return projectPattern.ReplaceAllString(msg, "${1}…")
}

// malformed is the error of an answer the dialect cannot read.
func malformed(msg string) *dialect.Error {
	return &dialect.Error{Status: http.StatusBadGateway, Kind: dialect.ErrServer, Message: "gemini: " + msg}
}
