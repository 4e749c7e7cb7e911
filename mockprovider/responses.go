package mockprovider

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
)

// The mock's OpenAI Responses API: POST /v1/responses (JSON, stream and
// background), GET and DELETE /v1/responses/{id}, POST
// /v1/responses/{id}/cancel and GET /v1/responses/{id}/input_items.
// Responses are kept in memory (the newest maxResponses) by the handler
// that created them, so that a request for one sent to another mock
// instance gets 404, as a real provider's other account would answer.
//
// Usage: input_tokens is the prompt estimate (a quarter of its bytes) plus
// the whole previous response (its input and output) when
// previous_response_id continues one, of which that previous response's
// input tokens are reported as cached (input_tokens_details.cached_tokens).
// A model whose name contains "reason" or "think" reports reasoning
// tokens, which output_tokens includes. A background response
// (background: true) is "queued" until mock_background_ms (default 0)
// after its creation, then "completed" when retrieved.

// maxResponses bounds the responses a mock keeps.
const maxResponses = 10000

// mockResponse is a stored response.
type mockResponse struct {
	ID                 string           `json:"id"`
	Object             string           `json:"object"`
	CreatedAt          int64            `json:"created_at"`
	Status             string           `json:"status"`
	Background         bool             `json:"background"`
	Error              *json.RawMessage `json:"error"`
	IncompleteDetails  *json.RawMessage `json:"incomplete_details"`
	Instructions       *string          `json:"instructions"`
	MaxOutputTokens    *int64           `json:"max_output_tokens"`
	Model              string           `json:"model"`
	Output             []respItem       `json:"output"`
	ParallelToolCalls  bool             `json:"parallel_tool_calls"`
	PreviousResponseID *string          `json:"previous_response_id"`
	Store              bool             `json:"store"`
	Temperature        float64          `json:"temperature"`
	Text               json.RawMessage  `json:"text"`
	ToolChoice         string           `json:"tool_choice"`
	Tools              []struct{}       `json:"tools"`
	TopP               float64          `json:"top_p"`
	Truncation         string           `json:"truncation"`
	Usage              *respUsage       `json:"usage"`
	Metadata           struct{}         `json:"metadata"`

	ready time.Time         // when a background response completes
	usage respUsage         // the usage it reports once complete
	input []json.RawMessage // its input items
}

// respItem is an output item: a reasoning summary, an assistant message
// or a built-in tool's call.
type respItem struct {
	ID      string        `json:"id"`
	Type    string        `json:"type"`
	Status  string        `json:"status,omitempty"`
	Role    string        `json:"role,omitempty"`
	Content []respContent `json:"content,omitempty"`
	Summary []respContent `json:"summary,omitempty"`
	// Action is a web_search_call's search.
	Action *respAction `json:"action,omitempty"`
	// Queries are a file_search_call's queries.
	Queries []string `json:"queries,omitempty"`
	// ContainerID and Code are a code_interpreter_call's.
	ContainerID string `json:"container_id,omitempty"`
	Code        string `json:"code,omitempty"`
	// Result is an image_generation_call's base64 image.
	Result string `json:"result,omitempty"`
}

// respAction is a web_search_call's action.
type respAction struct {
	Type  string `json:"type"`
	Query string `json:"query"`
}

// toolItems returns the built-in tool calls that c asks an answer to
// report (mock_web_searches, mock_file_searches, mock_code_sessions,
// mock_image_calls), about the prompt's echo: code sessions make two
// calls each in one container.
func toolItems(c charges, echo string) []respItem {
	var items []respItem
	for range c.searches {
		items = append(items, respItem{ID: newID("ws_", 32), Type: "web_search_call", Status: "completed",
			Action: &respAction{Type: "search", Query: echo}})
	}
	for range c.fileSearches {
		items = append(items, respItem{ID: newID("fs_", 32), Type: "file_search_call", Status: "completed", Queries: []string{echo}})
	}
	for range c.codeSessions {
		cntr := newID("cntr_", 32)
		for _, code := range []string{"print(1)", "print(2)"} {
			items = append(items, respItem{ID: newID("ci_", 32), Type: "code_interpreter_call", Status: "completed",
				ContainerID: cntr, Code: code})
		}
	}
	for range c.imageCalls {
		items = append(items, respItem{ID: newID("ig_", 32), Type: "image_generation_call", Status: "completed",
			Result: base64.StdEncoding.EncodeToString(renderPNG(uint64(len(items)), 8, 8))})
	}
	return items
}

// respContent is a part of an output item.
type respContent struct {
	Type        string     `json:"type"`
	Text        string     `json:"text"`
	Annotations []struct{} `json:"annotations,omitempty"`
}

// respUsage is a Responses usage object.
type respUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int64 `json:"total_tokens"`
}

// respStore keeps the newest responses.
type respStore struct {
	mu    sync.Mutex
	byID  map[string]*mockResponse
	order []string
}

func (s *respStore) put(r *mockResponse) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID == nil {
		s.byID = make(map[string]*mockResponse)
	}
	if len(s.order) >= maxResponses {
		delete(s.byID, s.order[0])
		s.order = s.order[1:]
	}
	s.byID[r.ID] = r
	s.order = append(s.order, r.ID)
}

// view returns a copy of response id, completed if its time has come.
func (s *respStore) view(id string, now time.Time, fn func(r *mockResponse)) (mockResponse, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.byID[id]
	if !ok {
		return mockResponse{}, false
	}
	if r.Status == "queued" && !now.Before(r.ready) {
		r.complete()
	}
	if fn != nil {
		fn(r)
	}
	return *r, true
}

func (s *respStore) remove(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.byID[id]
	delete(s.byID, id)
	return ok
}

// complete marks r completed with its usage.
func (r *mockResponse) complete() {
	r.Status = "completed"
	for i := range r.Output {
		r.Output[i].Status = "completed"
	}
	u := r.usage
	r.Usage = &u
}

// responsesRoute returns the function answering a Responses path (rest is
// the path after "/v1"), or nil.
func (h *Handler) responsesRoute(r *http.Request, rest string) http.HandlerFunc {
	if rest == "/responses" {
		return func(w http.ResponseWriter, r *http.Request) {
			if allow(w, r, http.MethodPost, false) {
				h.createResponse(w, r)
			}
		}
	}
	id, sub, _ := strings.Cut(strings.TrimPrefix(rest, "/responses/"), "/")
	if id == "" {
		return nil
	}
	return func(w http.ResponseWriter, r *http.Request) {
		switch {
		case sub == "" && r.Method == http.MethodDelete:
			if !h.responses.remove(id) {
				respNotFound(w, id)
				return
			}
			writeJSON(w, map[string]any{"id": id, "object": "response", "deleted": true})
		case sub == "" && allow(w, r, http.MethodGet, false):
			h.getResponse(w, id, nil)
		case sub == "cancel" && allow(w, r, http.MethodPost, false):
			h.cancelResponse(w, id)
		case sub == "input_items" && allow(w, r, http.MethodGet, false):
			h.inputItems(w, id)
		case sub != "" && sub != "cancel" && sub != "input_items":
			h.notFound(w, r)
		}
	}
}

func respNotFound(w http.ResponseWriter, id string) {
	writeOpenAIError(w, http.StatusNotFound, "invalid_request_error", "", "", "Response with id '"+id+"' not found.")
}

func (h *Handler) getResponse(w http.ResponseWriter, id string, fn func(r *mockResponse)) {
	r, ok := h.responses.view(id, h.clock(), fn)
	if !ok {
		respNotFound(w, id)
		return
	}
	writeJSON(w, &r)
}

func (h *Handler) cancelResponse(w http.ResponseWriter, id string) {
	r, ok := h.responses.view(id, h.clock(), func(r *mockResponse) {
		if r.Background && (r.Status == "queued" || r.Status == "in_progress") {
			r.Status = "cancelled"
		}
	})
	switch {
	case !ok:
		respNotFound(w, id)
	case !r.Background:
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "", "Only background responses can be cancelled.")
	default:
		writeJSON(w, &r)
	}
}

func (h *Handler) inputItems(w http.ResponseWriter, id string) {
	r, ok := h.responses.view(id, h.clock(), nil)
	if !ok {
		respNotFound(w, id)
		return
	}
	data := r.input
	if data == nil {
		data = []json.RawMessage{}
	}
	list := map[string]any{"object": "list", "data": data, "has_more": false, "first_id": nil, "last_id": nil}
	if len(data) > 0 {
		list["first_id"] = gjson.GetBytes(data[0], "id").Str
		list["last_id"] = gjson.GetBytes(data[len(data)-1], "id").Str
	}
	writeJSON(w, list)
}

// writeJSON answers 200 with v as JSON.
func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeOpenAIError(w, http.StatusInternalServerError, "server_error", "", "", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
