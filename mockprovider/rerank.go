package mockprovider

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"

	"github.com/tidwall/gjson"
)

// rerankResult is one document's place in a rerank answer.
type rerankResult struct {
	Index     int     `json:"index"`
	Relevance float64 `json:"relevance_score"`
	Document  any     `json:"document,omitempty"`
}

// rerank answers POST /v1/rerank as Jina (and vLLM) do, or, with cohere
// set, POST /v2/rerank as Cohere does: the documents (strings, or objects
// with a text) ranked by the share of the query's words each contains,
// the top_n first. Jina's answer reports usage.total_tokens (a quarter of
// the query and documents' bytes); Cohere's meta.billed_units.search_units
// (one per 100 documents).
func (h *Handler) rerank(w http.ResponseWriter, r *http.Request, cohere bool) {
	fail := func(status int, param, msg string) {
		if cohere {
			writeJSONStatus(w, status, map[string]string{"message": msg})
			return
		}
		writeOpenAIError(w, status, "invalid_request_error", "", param, msg)
	}
	body, status, err := readBody(w, r)
	if err != nil {
		fail(status, "", err.Error())
		return
	}
	if msg := h.bodyError(body, "invalid JSON body"); msg != "" {
		fail(http.StatusBadRequest, "", msg)
		return
	}
	req := gjson.ParseBytes(body)
	model, query, docs := req.Get("model").Str, req.Get("query"), req.Get("documents")
	switch {
	case model == "":
		fail(http.StatusBadRequest, "model", "model is required")
		return
	case query.Type != gjson.String || query.Str == "":
		fail(http.StatusBadRequest, "query", "query must be a non-empty string")
		return
	case !docs.IsArray() || len(docs.Array()) == 0 || len(docs.Array()) > 1000:
		fail(http.StatusBadRequest, "documents", "documents must be an array of 1 to 1000 documents")
		return
	}
	words := strings.Fields(strings.ToLower(query.Str))
	var results []rerankResult
	bytes := len(query.Str)
	ok := true
	docs.ForEach(func(k, d gjson.Result) bool {
		text := d.Str
		if d.IsObject() && !cohere {
			text = d.Get("text").Str
		} else if d.Type != gjson.String {
			ok = false
			return false
		}
		bytes += len(text)
		hits := 0
		lower := strings.ToLower(text)
		for _, w := range words {
			if strings.Contains(lower, w) {
				hits++
			}
		}
		res := rerankResult{Index: int(k.Int()), Relevance: float64(hits) / float64(len(words))}
		if req.Get("return_documents").Bool() && !cohere {
			res.Document = map[string]string{"text": text}
		}
		results = append(results, res)
		return true
	})
	if !ok {
		fail(http.StatusBadRequest, "documents", "each document must be a string")
		return
	}
	sort.SliceStable(results, func(i, j int) bool { return results[i].Relevance > results[j].Relevance })
	if n := req.Get("top_n"); n.Exists() && n.Int() > 0 && int(n.Int()) < len(results) {
		results = results[:n.Int()]
	}
	if cohere {
		units := (len(docs.Array()) + 99) / 100
		writeJSON(w, map[string]any{"id": newID("", 32), "results": results,
			"meta": map[string]any{"api_version": map[string]string{"version": "2"}, "billed_units": map[string]int{"search_units": units}}})
		return
	}
	tokens := max(bytes/4, 1)
	writeJSON(w, map[string]any{"model": model, "results": results, "usage": map[string]int{"total_tokens": tokens, "prompt_tokens": tokens}})
}

// writeJSONStatus writes v as JSON with status.
func writeJSONStatus(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// cohere answers Cohere's v2 API: POST /v2/rerank with the key as a
// bearer token, errors as {"message"}.
func (h *Handler) cohere(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Request-Id", newID("", 32))
	if !h.authorized(r) {
		writeJSONStatus(w, http.StatusUnauthorized, map[string]string{"message": "invalid api token"})
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeJSONStatus(w, http.StatusMethodNotAllowed, map[string]string{"message": "method not allowed"})
		return
	}
	w, finish := h.fault(w, r, false)
	if w == nil {
		return
	}
	defer finish()
	h.rerank(w, r, true)
}
