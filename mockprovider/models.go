package mockprovider

import (
	"net/http"
	"strconv"
	"time"
)

// mockModel is one model the mock lists.
type mockModel struct {
	id, display string
}

// models are the models GET /v1/models lists. The mock answers any model
// name; these are the ones the quickstart configures.
var models = []mockModel{
	{"mock-gpt", "Mock GPT"},
	{"mock-reasoner", "Mock Reasoner"},
	{"mock-claude", "Mock Claude"},
	{"mock-image", "Mock Image"},
	{"gpt-image-1", "Mock GPT Image 1"},
	{"dall-e-3", "Mock DALL·E 3"},
	{"mock-video", "Mock Video"},
	{"sora-2", "Mock Sora 2"},
}

// modelsCreated is the creation time the mock reports for its models.
var modelsCreated = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// appendModel appends one model in the OpenAI or the Anthropic shape.
func appendModel(b []byte, m mockModel, anthropic bool) []byte {
	if anthropic {
		b = append(b, `{"type":"model","id":`...)
		b = appendString(b, m.id)
		b = append(b, `,"display_name":`...)
		b = appendString(b, m.display)
		b = append(b, `,"created_at":"`...)
		b = modelsCreated.AppendFormat(b, time.RFC3339)
		return append(b, `"}`...)
	}
	b = append(b, `{"id":`...)
	b = appendString(b, m.id)
	b = append(b, `,"object":"model","created":`...)
	b = appendInt(b, modelsCreated.Unix())
	return append(b, `,"owned_by":"mock"}`...)
}

// listModels answers GET /v1/models, in Anthropic's shape when the request
// carries anthropic-version.
func (h *Handler) listModels(w http.ResponseWriter, r *http.Request) {
	anthropic := r.Header.Get("Anthropic-Version") != ""
	b := []byte(`{"object":"list","data":[`)
	if anthropic {
		b = []byte(`{"data":[`)
	}
	for i, m := range models {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendModel(b, m, anthropic)
	}
	if anthropic {
		b = append(b, `],"has_more":false,"first_id":`...)
		b = appendString(b, models[0].id)
		b = append(b, `,"last_id":`...)
		b = appendString(b, models[len(models)-1].id)
		b = append(b, '}')
	} else {
		b = append(b, `]}`...)
	}
	writeRaw(w, b)
}

// getModel answers GET /v1/models/{id}.
func (h *Handler) getModel(w http.ResponseWriter, r *http.Request, id string) {
	for _, m := range models {
		if m.id == id {
			writeRaw(w, appendModel(nil, m, r.Header.Get("Anthropic-Version") != ""))
			return
		}
	}
	writeOpenAIError(w, http.StatusNotFound, "invalid_request_error", "model_not_found", "model",
		"The model '"+id+"' does not exist or you do not have access to it.")
}

// writeRaw answers 200 with the JSON body b.
func writeRaw(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}
