package mockprovider

import (
	"net/http"
	"strings"

	"github.com/tidwall/gjson"
)

// moderationCategories are the categories of an OpenAI moderation result,
// and the word that flags each in the mock.
var moderationCategories = [...]struct{ name, word string }{
	{"harassment", "idiot"}, {"harassment/threatening", "threaten"}, {"hate", "hateful"},
	{"hate/threatening", "hateful threat"}, {"illicit", "illicit"}, {"illicit/violent", "weapon"},
	{"self-harm", "self-harm"}, {"self-harm/intent", "self-harm intent"}, {"self-harm/instructions", "self-harm how"},
	{"sexual", "sexual"}, {"sexual/minors", "sexual minors"}, {"violence", "kill"}, {"violence/graphic", "gore"},
}

// moderationResult is one input's result.
type moderationResult struct {
	Flagged    bool                `json:"flagged"`
	Categories map[string]bool     `json:"categories"`
	Scores     map[string]float64  `json:"category_scores"`
	Applied    map[string][]string `json:"category_applied_input_types"`
}

// moderations answers POST /v1/moderations as OpenAI does: one result
// per input (a string, an array of strings, or an array of text and
// image_url parts, which make one input together), each category flagged
// when the input's text contains its word (violence: "kill"). model
// defaults to omni-moderation-latest.
func (h *Handler) moderations(w http.ResponseWriter, r *http.Request) {
	body, status, err := readBody(w, r)
	if err != nil {
		typ, code := openAIStatusError(status)
		writeOpenAIError(w, status, typ, code, "", err.Error())
		return
	}
	if msg := h.bodyError(body, "We could not parse the JSON body of your request."); msg != "" {
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "", msg)
		return
	}
	req := gjson.ParseBytes(body)
	model := req.Get("model").Str
	if model == "" {
		model = "omni-moderation-latest"
	}
	texts, images, ok := moderationInputs(req.Get("input"))
	if !ok {
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "input",
			"input must be a string, an array of strings, or an array of text and image_url parts")
		return
	}
	results := make([]moderationResult, len(texts))
	for i, text := range texts {
		results[i] = moderate(strings.ToLower(text), images)
	}
	writeJSON(w, map[string]any{"id": newID("modr-", 24), "model": model, "results": results})
}

// moderationInputs returns the texts to moderate (one per result) and
// whether the input had images.
func moderationInputs(in gjson.Result) (texts []string, images, ok bool) {
	switch {
	case in.Type == gjson.String:
		return []string{in.Str}, false, true
	case !in.IsArray() || len(in.Array()) == 0:
		return nil, false, false
	}
	var parts []string
	ok = true
	in.ForEach(func(_, v gjson.Result) bool {
		switch {
		case v.Type == gjson.String && parts == nil:
			texts = append(texts, v.Str)
		case v.IsObject() && texts == nil && v.Get("type").Str == "text":
			parts = append(parts, v.Get("text").Str)
		case v.IsObject() && texts == nil && v.Get("type").Str == "image_url":
			images = true
		default:
			ok = false
		}
		return ok
	})
	if parts != nil || images && texts == nil {
		texts = []string{strings.Join(parts, " ")}
	}
	return texts, images, ok
}

// moderate scores one lowercased text.
func moderate(text string, images bool) moderationResult {
	res := moderationResult{Categories: map[string]bool{}, Scores: map[string]float64{}, Applied: map[string][]string{}}
	types := []string{"text"}
	if images {
		types = append(types, "image")
	}
	for _, c := range moderationCategories {
		hit := strings.Contains(text, c.word)
		res.Categories[c.name], res.Scores[c.name], res.Applied[c.name] = hit, 0.0001, types
		if hit {
			res.Scores[c.name], res.Flagged = 0.97, true
		}
	}
	return res
}
