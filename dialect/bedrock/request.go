package bedrock

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/caddy-air/caddy-air/dialect"
)

// The Converse request body, as the JSON API spells it.
type (
	converseRequest struct {
		Messages        []message        `json:"messages"`
		System          []contentBlock   `json:"system,omitempty"`
		InferenceConfig *inferenceConfig `json:"inferenceConfig,omitempty"`
		ToolConfig      *toolConfig      `json:"toolConfig,omitempty"`
		Additional      map[string]any   `json:"additionalModelRequestFields,omitempty"`
	}
	message struct {
		Role    string         `json:"role"`
		Content []contentBlock `json:"content"`
	}
	contentBlock struct {
		Text             *string           `json:"text,omitempty"`
		Image            *imageBlock       `json:"image,omitempty"`
		ToolUse          *toolUseBlock     `json:"toolUse,omitempty"`
		ToolResult       *toolResultBlock  `json:"toolResult,omitempty"`
		ReasoningContent *reasoningContent `json:"reasoningContent,omitempty"`
		CachePoint       *cachePoint       `json:"cachePoint,omitempty"`
	}
	imageBlock struct {
		Format string `json:"format"`
		Source struct {
			Bytes string `json:"bytes"`
		} `json:"source"`
	}
	toolUseBlock struct {
		ToolUseID string          `json:"toolUseId"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
	}
	toolResultBlock struct {
		ToolUseID string         `json:"toolUseId"`
		Content   []contentBlock `json:"content"`
		Status    string         `json:"status,omitempty"`
	}
	reasoningContent struct {
		ReasoningText   *reasoningText `json:"reasoningText,omitempty"`
		RedactedContent string         `json:"redactedContent,omitempty"`
	}
	reasoningText struct {
		Text      string `json:"text"`
		Signature string `json:"signature,omitempty"`
	}
	cachePoint struct {
		Type string `json:"type"`
	}
	inferenceConfig struct {
		MaxTokens     int64    `json:"maxTokens,omitempty"`
		Temperature   *float64 `json:"temperature,omitempty"`
		TopP          *float64 `json:"topP,omitempty"`
		StopSequences []string `json:"stopSequences,omitempty"`
	}
	toolConfig struct {
		Tools      []tool          `json:"tools"`
		ToolChoice json.RawMessage `json:"toolChoice,omitempty"`
	}
	tool struct {
		ToolSpec   *toolSpec   `json:"toolSpec,omitempty"`
		CachePoint *cachePoint `json:"cachePoint,omitempty"`
	}
	toolSpec struct {
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
		InputSchema struct {
			JSON json.RawMessage `json:"json"`
		} `json:"inputSchema"`
	}
)

// defaultCachePoint is the block that marks a cache breakpoint.
var defaultCachePoint = &cachePoint{Type: "default"}

// Reasoning budgets for an effort without a budget, as LiteLLM maps
// reasoning_effort to Anthropic's budget_tokens on Bedrock.
var effortBudget = map[string]int64{"minimal": 1024, "low": 1024, "medium": 2048, "high": 4096}

// EncodeRequest appends r's Converse body to dst. The model is not in
// the body: it is in the URL. A parameter Converse cannot express is
// left out and appended to r.Unsupported, for the caller to refuse or,
// with drop_params, report; an image given only by URL is refused with a
// 400, since Converse takes image bytes only.
func (Codec) EncodeRequest(dst []byte, r *dialect.Request) ([]byte, error) {
	body := converseRequest{Messages: make([]message, 0, len(r.Messages))}
	for i := range r.System {
		b := &r.System[i]
		if b.Kind != dialect.BlockText || b.Text == "" {
			continue
		}
		body.System = appendCache(append(body.System, contentBlock{Text: &b.Text}), b.CacheControl)
	}
	hasToolBlocks := false
	for i := range r.Messages {
		m := &r.Messages[i]
		// Converse refuses two messages of one role in a row: they are
		// merged, as Anthropic merges them.
		n := len(body.Messages)
		if n == 0 || body.Messages[n-1].Role != string(m.Role) {
			body.Messages = append(body.Messages, message{Role: string(m.Role), Content: make([]contentBlock, 0, len(m.Content))})
			n++
		}
		out := &body.Messages[n-1]
		for j := range m.Content {
			b := &m.Content[j]
			if b.Kind == dialect.BlockText && b.Text == "" {
				continue // Converse refuses empty text blocks
			}
			if b.Kind == dialect.BlockToolUse || b.Kind == dialect.BlockToolResult {
				hasToolBlocks = true
			}
			cb, err := encodeBlock(b)
			if err != nil {
				return dst, err
			}
			out.Content = appendCache(append(out.Content, cb), b.CacheControl)
		}
	}
	if r.MaxTokens > 0 || r.Temperature != nil || r.TopP != nil || len(r.Stop) > 0 {
		body.InferenceConfig = &inferenceConfig{MaxTokens: r.MaxTokens, Temperature: r.Temperature, TopP: r.TopP, StopSequences: r.Stop}
	}
	encodeTools(&body, r, hasToolBlocks)
	if r.TopK != nil {
		addField(&body, "top_k", *r.TopK)
	}
	if rs := r.Reasoning; rs != nil && !rs.Disabled {
		budget := rs.BudgetTokens
		if budget == 0 {
			budget = effortBudget[rs.Effort]
		}
		if budget > 0 {
			addField(&body, "thinking", map[string]any{"type": "enabled", "budget_tokens": budget})
		}
	}
	if r.ResponseFormat != nil {
		r.Unsupported = append(r.Unsupported, "response_format")
	}
	b, err := json.Marshal(&body)
	if err != nil {
		return dst, &dialect.Error{Status: http.StatusBadRequest, Kind: dialect.ErrInvalidRequest, Message: "bedrock: " + err.Error()}
	}
	return append(dst, b...), nil
}

// encodeTools writes r's tools and tool choice. Converse has no choice
// that forbids calls: with tool blocks in the history the tools must
// still be declared, so "none" is then unsupported; without them the
// tools are left out, which forbids calls.
func encodeTools(body *converseRequest, r *dialect.Request, hasToolBlocks bool) {
	tc := r.ToolChoice
	if len(r.Tools) == 0 || (tc != nil && tc.Mode == dialect.ToolNone && !hasToolBlocks) {
		return
	}
	cfg := &toolConfig{Tools: make([]tool, 0, len(r.Tools))}
	for i := range r.Tools {
		t := &r.Tools[i]
		spec := &toolSpec{Name: t.Name, Description: t.Description}
		spec.InputSchema.JSON = t.Schema
		if len(spec.InputSchema.JSON) == 0 {
			spec.InputSchema.JSON = json.RawMessage(`{"type":"object"}`)
		}
		cfg.Tools = append(cfg.Tools, tool{ToolSpec: spec})
		if t.CacheControl != nil {
			cfg.Tools = append(cfg.Tools, tool{CachePoint: defaultCachePoint})
		}
	}
	if tc != nil {
		switch tc.Mode {
		case dialect.ToolAuto:
			cfg.ToolChoice = json.RawMessage(`{"auto":{}}`)
		case dialect.ToolAny:
			cfg.ToolChoice = json.RawMessage(`{"any":{}}`)
		case dialect.ToolNamed:
			name, _ := json.Marshal(tc.Name)
			cfg.ToolChoice = json.RawMessage(`{"tool":{"name":` + string(name) + `}}`)
		case dialect.ToolNone:
			r.Unsupported = append(r.Unsupported, "tool_choice")
		}
		if tc.NoParallel {
			r.Unsupported = append(r.Unsupported, "parallel_tool_calls")
		}
	}
	body.ToolConfig = cfg
}

// encodeBlock converts one message block.
func encodeBlock(b *dialect.Block) (contentBlock, error) {
	switch b.Kind {
	case dialect.BlockText:
		return contentBlock{Text: &b.Text}, nil
	case dialect.BlockImage:
		img, err := encodeImage(b.Image)
		return contentBlock{Image: img}, err
	case dialect.BlockToolUse:
		input := b.Input
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		return contentBlock{ToolUse: &toolUseBlock{ToolUseID: b.ToolID, Name: b.ToolName, Input: input}}, nil
	case dialect.BlockToolResult:
		res := &toolResultBlock{ToolUseID: b.ToolID, Content: make([]contentBlock, 0, len(b.Content))}
		if b.IsError {
			res.Status = "error"
		}
		for i := range b.Content {
			c, err := encodeBlock(&b.Content[i])
			if err != nil {
				return contentBlock{}, err
			}
			res.Content = append(res.Content, c)
		}
		if len(res.Content) == 0 {
			empty := ""
			res.Content = append(res.Content, contentBlock{Text: &empty})
		}
		return contentBlock{ToolResult: res}, nil
	case dialect.BlockThinking:
		return contentBlock{ReasoningContent: &reasoningContent{ReasoningText: &reasoningText{Text: b.Text, Signature: b.Signature}}}, nil
	case dialect.BlockRedactedThinking:
		return contentBlock{ReasoningContent: &reasoningContent{RedactedContent: b.Data}}, nil
	}
	return contentBlock{}, &dialect.Error{Status: http.StatusBadRequest, Kind: dialect.ErrInvalidRequest, Message: "bedrock: a content block of an unknown kind"}
}

// encodeImage converts an image given by its bytes.
func encodeImage(img *dialect.Image) (*imageBlock, error) {
	if img == nil || img.Data == "" {
		return nil, &dialect.Error{Status: http.StatusBadRequest, Kind: dialect.ErrInvalidRequest, Param: "image_url",
			Message: "bedrock converse takes images as bytes only, not by url"}
	}
	format, ok := strings.CutPrefix(img.MediaType, "image/")
	switch {
	case !ok:
		format = ""
	case format == "jpg":
		format = "jpeg"
	}
	switch format {
	case "png", "jpeg", "gif", "webp":
	default:
		return nil, &dialect.Error{Status: http.StatusBadRequest, Kind: dialect.ErrInvalidRequest, Param: "image_url",
			Message: "bedrock converse takes png, jpeg, gif or webp images, not " + img.MediaType}
	}
	out := &imageBlock{Format: format}
	out.Source.Bytes = img.Data
	return out, nil
}

// appendCache appends a cache point after a block with a breakpoint.
func appendCache(blocks []contentBlock, cc json.RawMessage) []contentBlock {
	if cc == nil {
		return blocks
	}
	return append(blocks, contentBlock{CachePoint: defaultCachePoint})
}

// addField sets a model-specific field (Anthropic's spelling, which
// Claude on Bedrock reads).
func addField(body *converseRequest, k string, v any) {
	if body.Additional == nil {
		body.Additional = map[string]any{}
	}
	body.Additional[k] = v
}
