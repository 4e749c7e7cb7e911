package bedrock

import (
	"bytes"
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

// The Converse answer body.
type converseResponse struct {
	Output struct {
		Message *message `json:"message"`
	} `json:"output"`
	StopReason string          `json:"stopReason"`
	Usage      *tokenUsage     `json:"usage"`
	Additional json.RawMessage `json:"additionalModelResponseFields"`
}

// tokenUsage is Converse's usage. inputTokens excludes the cache reads
// and writes, which are counted (and billed) apart.
type tokenUsage struct {
	InputTokens           int64 `json:"inputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
	CacheReadInputTokens  int64 `json:"cacheReadInputTokens"`
	CacheWriteInputTokens int64 `json:"cacheWriteInputTokens"`
}

// usage converts Converse's usage.
func (u *tokenUsage) usage() billing.Usage {
	return billing.Usage{
		Input:         u.InputTokens,
		CacheRead:     u.CacheReadInputTokens,
		CacheCreation: u.CacheWriteInputTokens,
		Output:        u.OutputTokens,
	}.Bounded()
}

// stopReason maps Converse's stopReason.
func stopReason(s string) dialect.StopReason {
	switch s {
	case "tool_use":
		return dialect.StopToolUse
	case "max_tokens", "model_context_window_exceeded":
		return dialect.StopMaxTokens
	case "stop_sequence":
		return dialect.StopSequence
	case "guardrail_intervened", "content_filtered":
		return dialect.StopRefusal
	}
	return dialect.StopEnd
}

// DecodeResponse reads a Converse answer. It has no id and no model
// (both are the caller's: the model is in the URL).
func (Codec) DecodeResponse(body []byte) (*dialect.Response, error) {
	var cr converseResponse
	d := json.NewDecoder(bytes.NewReader(body))
	if err := d.Decode(&cr); err != nil || cr.Output.Message == nil {
		return nil, malformed("converse answer has no output message")
	}
	r := &dialect.Response{StopReason: stopReason(cr.StopReason)}
	if r.StopReason == dialect.StopSequence {
		r.StopSequence = gjson.GetBytes(cr.Additional, "stop_sequence").Str
	}
	if cr.Usage != nil {
		r.Usage, r.UsageReported = cr.Usage.usage(), true
	}
	for i := range cr.Output.Message.Content {
		if b, ok := decodeBlock(&cr.Output.Message.Content[i]); ok {
			r.Content = append(r.Content, b)
		}
	}
	return r, nil
}

// decodeBlock converts one answer block; cache points and unknown
// blocks yield false.
func decodeBlock(c *contentBlock) (dialect.Block, bool) {
	switch {
	case c.Text != nil:
		return dialect.Block{Kind: dialect.BlockText, Text: *c.Text}, true
	case c.ToolUse != nil:
		return dialect.Block{Kind: dialect.BlockToolUse, ToolID: c.ToolUse.ToolUseID, ToolName: c.ToolUse.Name, Input: c.ToolUse.Input}, true
	case c.ReasoningContent != nil && c.ReasoningContent.ReasoningText != nil:
		rt := c.ReasoningContent.ReasoningText
		return dialect.Block{Kind: dialect.BlockThinking, Text: rt.Text, Signature: rt.Signature}, true
	case c.ReasoningContent != nil && c.ReasoningContent.RedactedContent != "":
		return dialect.Block{Kind: dialect.BlockRedactedThinking, Data: c.ReasoningContent.RedactedContent}, true
	}
	return dialect.Block{}, false
}

// DecodeError reads a failed answer: its x-amzn-ErrorType (or the body's
// __type) names the exception, its body's message says why.
func (Codec) DecodeError(status int, h http.Header, body []byte) *dialect.Error {
	typ := h.Get("X-Amzn-Errortype")
	if typ == "" {
		typ = gjson.GetBytes(body, "__type").Str
	}
	msg := gjson.GetBytes(body, "message").Str
	if msg == "" {
		msg = gjson.GetBytes(body, "Message").Str
	}
	e := exceptionError(typ, msg)
	if e.Kind == "" {
		e.Kind, e.Status = dialect.KindOf(status), status
	}
	if e.Message == "" {
		e.Message = "bedrock answered " + strconv.Itoa(status)
	}
	if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil && s > 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}

// exceptionError maps a Bedrock exception name, in any case and with or
// without the namespace after ':' or before '#', to an error; its Kind
// is empty for a name it does not know.
func exceptionError(typ, msg string) *dialect.Error {
	if i := strings.IndexByte(typ, ':'); i >= 0 {
		typ = typ[:i]
	}
	if i := strings.LastIndexByte(typ, '#'); i >= 0 {
		typ = typ[i+1:]
	}
	e := &dialect.Error{Message: scrub(msg)}
	switch strings.ToLower(typ) {
	case "throttlingexception":
		e.Status, e.Kind = http.StatusTooManyRequests, dialect.ErrRateLimit
	case "servicequotaexceededexception":
		e.Status, e.Kind = http.StatusTooManyRequests, dialect.ErrRateLimit
	case "serviceunavailableexception", "modelnotreadyexception":
		e.Status, e.Kind = http.StatusServiceUnavailable, dialect.ErrOverloaded
	case "modeltimeoutexception":
		e.Status, e.Kind = http.StatusGatewayTimeout, dialect.ErrTimeout
	case "validationexception", "modelerrorexception":
		e.Status, e.Kind = http.StatusBadRequest, dialect.ErrInvalidRequest
	case "accessdeniedexception":
		e.Status, e.Kind = http.StatusForbidden, dialect.ErrPermission
	case "unrecognizedclientexception", "invalidsignatureexception", "expiredtokenexception", "incompletesignatureexception":
		e.Status, e.Kind = http.StatusForbidden, dialect.ErrAuthentication
	case "resourcenotfoundexception":
		e.Status, e.Kind = http.StatusNotFound, dialect.ErrNotFound
	case "internalserverexception", "modelstreamerrorexception":
		e.Status, e.Kind = http.StatusBadGateway, dialect.ErrServer
	}
	return e
}

// Account identifiers in Bedrock's messages: ARNs (which name the
// account, the user or role, and the resource) and bare account ids.
var (
	arnPattern     = regexp.MustCompile(`arn:aws[a-z-]*:[^\s"',]+`)
	accountPattern = regexp.MustCompile(`\b\d{12}\b`)
)

// scrub removes account identifiers from a provider's message, which
// the client sees.
func scrub(msg string) string {
	msg = arnPattern.ReplaceAllString(msg, "arn:aws:…")
	return accountPattern.ReplaceAllString(msg, "…")
}

// malformed is the error of an answer the dialect cannot read.
func malformed(msg string) *dialect.Error {
	return &dialect.Error{Status: http.StatusBadGateway, Kind: dialect.ErrServer, Message: "bedrock: " + msg}
}
