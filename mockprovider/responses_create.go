package mockprovider

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// respRequest is what the mock reads from a create request.
type respRequest struct {
	mockFields
	model, instructions, prev string
	stream, background, store bool
	maxOutput                 int64
	input                     []json.RawMessage
	promptBytes               int
	echo                      string
	backgroundDelay           time.Duration
}

// parseResponses reads a create request; param and msg describe an
// invalid one.
func (h *Handler) parseResponses(body []byte) (req respRequest, param, msg string) {
	if msg := h.bodyError(body, "We could not parse the JSON body of your request."); msg != "" {
		return req, "", msg
	}
	req.mockFields = h.defaultMockFields()
	req.store = true
	var input gjson.Result
	gjson.ParseBytes(body).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model":
			req.model = v.Str
		case "input":
			input = v
		case "instructions":
			req.instructions = v.Str
			req.promptBytes += len(v.Str)
		case "stream":
			req.stream = v.Bool()
		case "background":
			req.background = v.Bool()
		case "store":
			req.store = v.Type != gjson.False
		case "previous_response_id":
			req.prev = v.Str
		case "max_output_tokens":
			req.maxOutput = v.Int()
		case "mock_background_ms":
			req.backgroundDelay = time.Duration(max(v.Int(), 0)) * time.Millisecond
		default:
			req.readMockField(k.Str, v)
		}
		return true
	})
	if req.model == "" {
		return req, "model", "Missing required parameter: 'model'."
	}
	switch {
	case input.Type == gjson.String:
		req.promptBytes += len(input.Str)
		req.echo = echoOf(input.Str)
		item, _ := json.Marshal(map[string]any{"id": newID("msg_", 24), "type": "message", "role": "user",
			"content": []map[string]string{{"type": "input_text", "text": input.Str}}})
		req.input = []json.RawMessage{item}
	case input.IsArray():
		input.ForEach(func(_, item gjson.Result) bool {
			n, _, text := openAIContent(item.Get("content"))
			req.promptBytes += n + 16
			if text != "" {
				req.echo = echoOf(text)
			}
			req.input = append(req.input, json.RawMessage(item.Raw))
			return true
		})
	case req.prev == "":
		return req, "input", "Missing required parameter: 'input'."
	}
	return req, "", ""
}

// createResponse answers POST /v1/responses.
func (h *Handler) createResponse(w http.ResponseWriter, r *http.Request) {
	body, status, err := readBody(w, r)
	if err != nil {
		writeOpenAIError(w, status, "invalid_request_error", "", "", err.Error())
		return
	}
	req, param, msg := h.parseResponses(body)
	if refusedOpenAI(w, req.status, param, msg) {
		return
	}
	now := h.clock()
	resp := &mockResponse{ID: newID("resp_", 32), Object: "response", CreatedAt: now.Unix(), Status: "completed",
		Background: req.background, Model: req.model, ParallelToolCalls: true, Store: req.store,
		Temperature: 1, TopP: 1, Text: json.RawMessage(`{"format":{"type":"text"}}`), ToolChoice: "auto",
		Tools: []struct{}{}, Truncation: "disabled", input: req.input}
	if req.instructions != "" {
		resp.Instructions = &req.instructions
	}
	if req.maxOutput > 0 {
		resp.MaxOutputTokens = &req.maxOutput
	}
	u := &resp.usage
	u.InputTokens = promptTokens(req.promptBytes, 0)
	if req.prev != "" {
		prev, ok := h.responses.view(req.prev, now, nil)
		if !ok {
			writeOpenAIError(w, http.StatusNotFound, "invalid_request_error", "previous_response_not_found", "previous_response_id",
				"Previous response with id '"+req.prev+"' not found.")
			return
		}
		resp.PreviousResponseID = &req.prev
		u.InputTokens += prev.usage.TotalTokens
		u.InputTokensDetails.CachedTokens = prev.usage.InputTokens
	}
	m := strings.ToLower(req.model)
	var reasoning string
	if strings.Contains(m, "reason") || strings.Contains(m, "think") {
		reasoning = reasoningText(req.echo)
		resp.Output = append(resp.Output, respItem{ID: newID("rs_", 32), Type: "reasoning",
			Summary: []respContent{{Type: "summary_text", Text: reasoning}}})
	}
	reasoning, text, _ := applyBudget(reasoning, replyText(req.echo, req.chunks), req.maxOutput)
	if len(resp.Output) > 0 {
		resp.Output[0].Summary[0].Text = reasoning
	}
	resp.Output = append(resp.Output, toolItems(req.charges, req.echo)...)
	resp.Output = append(resp.Output, respItem{ID: newID("msg_", 32), Type: "message", Status: "completed", Role: "assistant",
		Content: []respContent{{Type: "output_text", Text: text, Annotations: []struct{}{}}}})
	u.OutputTokensDetails.ReasoningTokens = textTokens(reasoning)
	u.OutputTokens = textTokens(text) + u.OutputTokensDetails.ReasoningTokens
	u.TotalTokens = u.InputTokens + u.OutputTokens
	if req.background {
		resp.Status, resp.ready = "queued", now.Add(req.backgroundDelay)
		for i := range resp.Output {
			resp.Output[i].Status = "in_progress"
		}
	} else {
		resp.complete()
	}
	if req.store || req.background {
		h.responses.put(resp)
	}
	out := *resp
	if req.background {
		out.Output = []respItem{}
	}
	if !req.usage {
		out.Usage = nil
	}
	if req.stream && !req.background {
		h.streamResponse(w, r, &req, &out, text)
		return
	}
	writeJSON(w, &out)
}

// streamResponse streams resp as OpenAI does: response.created and
// response.in_progress, the output items opened, text deltas, items
// closed, and response.completed with the usage.
func (h *Handler) streamResponse(w http.ResponseWriter, r *http.Request, req *respRequest, resp *mockResponse, text string) {
	s := newSSE(w, r, req.delay)
	defer s.close()
	seq := 0
	send := func(typ string, fields map[string]any) bool {
		fields["type"], fields["sequence_number"] = typ, seq
		seq++
		data, _ := json.Marshal(fields)
		b := append(s.begin(), "event: "...)
		b = append(b, typ...)
		b = append(b, "\ndata: "...)
		b = append(b, data...)
		return s.emit(append(b, "\n\n"...))
	}
	start := *resp
	start.Status, start.Output, start.Usage = "in_progress", []respItem{}, nil
	if !send("response.created", map[string]any{"response": &start}) || !send("response.in_progress", map[string]any{"response": &start}) {
		return
	}
	for i, item := range resp.Output {
		if item.Type != "message" {
			if !send("response.output_item.added", map[string]any{"output_index": i, "item": item}) ||
				!send("response.output_item.done", map[string]any{"output_index": i, "item": item}) {
				return
			}
			continue
		}
		open := item
		open.Status, open.Content = "in_progress", []respContent{}
		part := respContent{Type: "output_text", Text: "", Annotations: []struct{}{}}
		if !send("response.output_item.added", map[string]any{"output_index": i, "item": open}) ||
			!send("response.content_part.added", map[string]any{"item_id": item.ID, "output_index": i, "content_index": 0, "part": part}) {
			return
		}
		bounds := wordBounds(text, req.chunks)
		for j := 0; j+1 < len(bounds); j++ {
			if !send("response.output_text.delta", map[string]any{"item_id": item.ID, "output_index": i, "content_index": 0,
				"delta": text[bounds[j]:bounds[j+1]], "logprobs": []struct{}{}}) {
				return
			}
		}
		part.Text = text
		if !send("response.output_text.done", map[string]any{"item_id": item.ID, "output_index": i, "content_index": 0, "text": text, "logprobs": []struct{}{}}) ||
			!send("response.content_part.done", map[string]any{"item_id": item.ID, "output_index": i, "content_index": 0, "part": part}) ||
			!send("response.output_item.done", map[string]any{"output_index": i, "item": item}) {
			return
		}
	}
	send("response.completed", map[string]any{"response": resp})
}
