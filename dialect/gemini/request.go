package gemini

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/caddy-air/caddy-air/dialect"
)

// The GenerateContentRequest body.
type (
	generateRequest struct {
		Contents          []content         `json:"contents"`
		SystemInstruction *content          `json:"systemInstruction,omitempty"`
		Tools             []toolGroup       `json:"tools,omitempty"`
		ToolConfig        *toolConfig       `json:"toolConfig,omitempty"`
		GenerationConfig  *generationConfig `json:"generationConfig,omitempty"`
	}
	content struct {
		Role  string `json:"role,omitempty"`
		Parts []part `json:"parts"`
	}
	part struct {
		Text             *string           `json:"text,omitempty"`
		Thought          bool              `json:"thought,omitempty"`
		InlineData       *blob             `json:"inlineData,omitempty"`
		FileData         *fileData         `json:"fileData,omitempty"`
		FunctionCall     *functionCall     `json:"functionCall,omitempty"`
		FunctionResponse *functionResponse `json:"functionResponse,omitempty"`
		ThoughtSignature string            `json:"thoughtSignature,omitempty"`
	}
	blob struct {
		MimeType string `json:"mimeType"`
		Data     string `json:"data"`
	}
	fileData struct {
		MimeType string `json:"mimeType,omitempty"`
		FileURI  string `json:"fileUri"`
	}
	functionCall struct {
		ID   string          `json:"id,omitempty"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args,omitempty"`
	}
	functionResponse struct {
		Name     string         `json:"name"`
		Response map[string]any `json:"response"`
	}
	toolGroup struct {
		FunctionDeclarations []functionDeclaration `json:"functionDeclarations"`
	}
	functionDeclaration struct {
		Name                 string          `json:"name"`
		Description          string          `json:"description,omitempty"`
		ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
	}
	toolConfig struct {
		FunctionCallingConfig struct {
			Mode                 string   `json:"mode"`
			AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
		} `json:"functionCallingConfig"`
	}
	generationConfig struct {
		MaxOutputTokens    int64           `json:"maxOutputTokens,omitempty"`
		Temperature        *float64        `json:"temperature,omitempty"`
		TopP               *float64        `json:"topP,omitempty"`
		TopK               *int64          `json:"topK,omitempty"`
		StopSequences      []string        `json:"stopSequences,omitempty"`
		ResponseMimeType   string          `json:"responseMimeType,omitempty"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
		ThinkingConfig     *thinkingConfig `json:"thinkingConfig,omitempty"`
	}
	thinkingConfig struct {
		IncludeThoughts bool   `json:"includeThoughts,omitempty"`
		ThinkingBudget  *int64 `json:"thinkingBudget,omitempty"`
		ThinkingLevel   string `json:"thinkingLevel,omitempty"`
	}
)

// badRequest is a 400 naming param.
func badRequest(param, msg string) *dialect.Error {
	return &dialect.Error{Status: http.StatusBadRequest, Kind: dialect.ErrInvalidRequest, Param: param, Message: "gemini: " + msg}
}

// EncodeRequest appends r's GenerateContentRequest body to dst. The
// model is in the URL, not the body. A parameter Gemini cannot express
// is left out and appended to r.Unsupported; a tool result whose call is
// not in the history (so that its name is unknown) and an image at a URL
// Gemini cannot fetch are refused with a 400. Cache breakpoints are left
// out (Gemini caches prompt prefixes implicitly), and so is Anthropic's
// encrypted reasoning: both are appended to r.Dropped.
func (Codec) EncodeRequest(dst []byte, r *dialect.Request) ([]byte, error) {
	dropped(r)
	body := generateRequest{Contents: make([]content, 0, len(r.Messages))}
	if len(r.System) > 0 {
		sys := &content{}
		for i := range r.System {
			if r.System[i].Kind == dialect.BlockText {
				sys.Parts = append(sys.Parts, part{Text: &r.System[i].Text})
			}
		}
		if len(sys.Parts) > 0 {
			body.SystemInstruction = sys
		}
	}
	names := map[string]string{} // tool use id → name, from the history
	for i := range r.Messages {
		m := &r.Messages[i]
		c := content{Role: "user", Parts: make([]part, 0, len(m.Content))}
		if m.Role == dialect.RoleAssistant {
			c.Role = "model"
		}
		sig := "" // a signature waiting for the next part
		for j := range m.Content {
			b := &m.Content[j]
			if b.Kind == dialect.BlockThinking && b.Text == "" {
				sig = b.Signature
				continue
			}
			parts, err := encodeBlock(c.Parts, b, names)
			if err != nil {
				return dst, err
			}
			if sig != "" && len(parts) > len(c.Parts) && parts[len(c.Parts)].ThoughtSignature == "" {
				parts[len(c.Parts)].ThoughtSignature = sig
				sig = ""
			}
			c.Parts = parts
		}
		if sig != "" {
			empty := ""
			c.Parts = append(c.Parts, part{Text: &empty, ThoughtSignature: sig})
		}
		// A turn's function responses must come in one content, as its
		// calls came: contents of one role in a row are merged.
		if n := len(body.Contents); n > 0 && body.Contents[n-1].Role == c.Role {
			body.Contents[n-1].Parts = append(body.Contents[n-1].Parts, c.Parts...)
		} else if len(c.Parts) > 0 {
			body.Contents = append(body.Contents, c)
		}
	}
	encodeTools(&body, r)
	encodeGeneration(&body, r)
	b, err := json.Marshal(&body)
	if err != nil {
		return dst, badRequest("", err.Error())
	}
	return append(dst, b...), nil
}

// dropped records in r what Gemini takes no input for: cache
// breakpoints and redacted (encrypted) reasoning.
func dropped(r *dialect.Request) {
	cache := false
	for i := range r.System {
		cache = cache || r.System[i].CacheControl != nil
	}
	for i := range r.Tools {
		cache = cache || r.Tools[i].CacheControl != nil
	}
	redacted := false
	for i := range r.Messages {
		for j := range r.Messages[i].Content {
			b := &r.Messages[i].Content[j]
			cache = cache || b.CacheControl != nil
			redacted = redacted || b.Kind == dialect.BlockRedactedThinking
		}
	}
	if cache {
		r.Drop("cache_control")
	}
	if redacted {
		r.Drop("redacted_thinking")
	}
}

// encodeBlock appends the parts of one block.
func encodeBlock(parts []part, b *dialect.Block, names map[string]string) ([]part, error) {
	switch b.Kind {
	case dialect.BlockText:
		return append(parts, part{Text: &b.Text}), nil
	case dialect.BlockImage:
		p, err := encodeImage(b.Image)
		return append(parts, p), err
	case dialect.BlockToolUse:
		names[b.ToolID] = b.ToolName
		args := b.Input
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		sig := b.Signature
		if sig == "" {
			sig = SignatureOf(b.ToolID)
		}
		return append(parts, part{FunctionCall: &functionCall{Name: b.ToolName, Args: args}, ThoughtSignature: sig}), nil
	case dialect.BlockToolResult:
		name := names[b.ToolID]
		if name == "" {
			name = b.ToolName
		}
		if name == "" {
			return parts, badRequest("tool_call_id", "the tool result "+b.ToolID+" answers no tool call of the conversation")
		}
		var text strings.Builder
		var images []part
		for i := range b.Content {
			switch c := &b.Content[i]; c.Kind {
			case dialect.BlockText:
				text.WriteString(c.Text)
			case dialect.BlockImage:
				p, err := encodeImage(c.Image)
				if err != nil {
					return parts, err
				}
				images = append(images, p)
			}
		}
		key := "content"
		if b.IsError {
			key = "error"
		}
		parts = append(parts, part{FunctionResponse: &functionResponse{Name: name, Response: map[string]any{key: resultValue(text.String())}}})
		return append(parts, images...), nil
	case dialect.BlockThinking:
		return append(parts, part{Text: &b.Text, Thought: true, ThoughtSignature: b.Signature}), nil
	case dialect.BlockRedactedThinking:
		return parts, nil // Anthropic's encrypted reasoning means nothing to Gemini
	}
	return parts, badRequest("", "a content block of an unknown kind")
}

// resultValue is a tool result's text, as the JSON it holds if it is a
// JSON object or array, else as a string.
func resultValue(s string) any {
	t := strings.TrimSpace(s)
	if len(t) > 0 && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	return s
}

// encodeImage converts an image: inline bytes, or a file Gemini can read
// (a gs:// object or a file of the Files API).
func encodeImage(img *dialect.Image) (part, error) {
	switch {
	case img == nil:
		return part{}, badRequest("image_url", "an image block without an image")
	case img.Data != "":
		if img.MediaType == "" {
			return part{}, badRequest("image_url", "an image without its media type")
		}
		return part{InlineData: &blob{MimeType: img.MediaType, Data: img.Data}}, nil
	case strings.HasPrefix(img.URL, "gs://"), strings.HasPrefix(img.URL, BaseURL+"/"):
		return part{FileData: &fileData{MimeType: img.MediaType, FileURI: img.URL}}, nil
	}
	return part{}, badRequest("image_url", "gemini takes images as bytes, gs:// or Files API URIs, not other urls")
}

// encodeTools writes the function declarations and calling mode.
func encodeTools(body *generateRequest, r *dialect.Request) {
	if len(r.Tools) > 0 {
		g := toolGroup{FunctionDeclarations: make([]functionDeclaration, 0, len(r.Tools))}
		for i := range r.Tools {
			t := &r.Tools[i]
			g.FunctionDeclarations = append(g.FunctionDeclarations, functionDeclaration{Name: t.Name, Description: t.Description, ParametersJSONSchema: t.Schema})
		}
		body.Tools = []toolGroup{g}
	}
	tc := r.ToolChoice
	if tc == nil {
		return
	}
	cfg := &toolConfig{}
	switch tc.Mode {
	case dialect.ToolNone:
		cfg.FunctionCallingConfig.Mode = "NONE"
	case dialect.ToolAny:
		cfg.FunctionCallingConfig.Mode = "ANY"
	case dialect.ToolNamed:
		cfg.FunctionCallingConfig.Mode = "ANY"
		cfg.FunctionCallingConfig.AllowedFunctionNames = []string{tc.Name}
	default:
		cfg.FunctionCallingConfig.Mode = "AUTO"
	}
	body.ToolConfig = cfg
	if tc.NoParallel {
		r.Unsupported = append(r.Unsupported, "parallel_tool_calls")
	}
}

// encodeGeneration writes the generation config.
func encodeGeneration(body *generateRequest, r *dialect.Request) {
	g := &generationConfig{MaxOutputTokens: r.MaxTokens, Temperature: r.Temperature, TopP: r.TopP, TopK: r.TopK, StopSequences: r.Stop}
	if rf := r.ResponseFormat; rf != nil {
		g.ResponseMimeType = "application/json"
		if rf.Type == "json_schema" {
			g.ResponseJSONSchema = rf.Schema
		}
	}
	if rs := r.Reasoning; rs != nil {
		tc := &thinkingConfig{}
		switch {
		case rs.Disabled:
			zero := int64(0)
			tc.ThinkingBudget = &zero
		case rs.BudgetTokens > 0:
			tc.IncludeThoughts = true
			tc.ThinkingBudget = &rs.BudgetTokens
		default:
			tc.IncludeThoughts = true
			tc.ThinkingLevel = rs.Effort
		}
		g.ThinkingConfig = tc
	}
	if g.MaxOutputTokens != 0 || g.Temperature != nil || g.TopP != nil || g.TopK != nil || len(g.StopSequences) > 0 ||
		g.ResponseMimeType != "" || g.ThinkingConfig != nil {
		body.GenerationConfig = g
	}
}
