package mockprovider

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/maphash"
	"math"
	"net/http"

	"github.com/tidwall/gjson"
)

// defaultEmbeddingDims is the length of a mock embedding when the request
// sets no dimensions.
const defaultEmbeddingDims = 8

// embedding is one item of an embeddings answer. Embedding is a []float32,
// or a base64 string of little-endian float32s for encoding_format base64.
type embedding struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

// embeddings answers POST /v1/embeddings as OpenAI does: one repeatable
// unit vector per input (a string, an array of strings, an array of token
// ids or an array of such arrays), in the encoding asked for, with
// usage.prompt_tokens a quarter of the input's bytes (a token id counts as
// one token).
func (h *Handler) embeddings(w http.ResponseWriter, r *http.Request) {
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
	model, input := req.Get("model"), req.Get("input")
	if model.Type != gjson.String || model.Str == "" {
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "model", "you must provide a model parameter")
		return
	}
	inputs, tokens, ok := embeddingInputs(input)
	if !ok {
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "input",
			"input must be a non-empty string, array of strings, array of token ids or array of token id arrays")
		return
	}
	dims := defaultEmbeddingDims
	if d := req.Get("dimensions"); d.Exists() {
		if d.Type != gjson.Number || d.Int() < 1 || d.Int() > 4096 {
			writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "dimensions", "dimensions must be an integer from 1 to 4096")
			return
		}
		dims = int(d.Int())
	}
	format := req.Get("encoding_format").Str
	if format != "" && format != "float" && format != "base64" {
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "encoding_format", "encoding_format must be float or base64")
		return
	}
	data := make([]embedding, len(inputs))
	for i, in := range inputs {
		vec := h.vector(in, dims)
		data[i] = embedding{Object: "embedding", Index: i, Embedding: vec}
		if format == "base64" {
			b := make([]byte, 4*len(vec))
			for j, f := range vec {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(f))
			}
			data[i].Embedding = base64.StdEncoding.EncodeToString(b)
		}
	}
	out, _ := json.Marshal(map[string]any{
		"object": "list",
		"data":   data,
		"model":  model.Str,
		"usage":  map[string]int64{"prompt_tokens": tokens, "total_tokens": tokens},
	})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// embeddingInputs returns the raw inputs of an embeddings request and their
// token count; ok is false for an empty or ill-typed input.
func embeddingInputs(input gjson.Result) (inputs []string, tokens int64, ok bool) {
	switch {
	case input.Type == gjson.String && input.Str != "":
		return []string{input.Str}, promptTokens(len(input.Str), 0), true
	case !input.IsArray():
		return nil, 0, false
	}
	items := input.Array()
	if len(items) == 0 {
		return nil, 0, false
	}
	if items[0].Type == gjson.Number { // one array of token ids
		return []string{input.Raw}, int64(len(items)), true
	}
	for _, it := range items {
		switch {
		case it.Type == gjson.String && it.Str != "":
			inputs = append(inputs, it.Str)
			tokens += promptTokens(len(it.Str), 0)
		case it.IsArray() && len(it.Array()) > 0:
			inputs = append(inputs, it.Raw)
			tokens += int64(len(it.Array()))
		default:
			return nil, 0, false
		}
	}
	return inputs, tokens, true
}

// vector returns the unit vector of dims dimensions for s: the same for
// the same s and dims while the process runs.
func (h *Handler) vector(s string, dims int) []float32 {
	vec := make([]float32, dims)
	var norm float64
	for i := range vec {
		x := maphash.String(h.seed, s+string(rune(i)))
		f := float64(int64(x%2001)-1000) / 1000
		vec[i], norm = float32(f), norm+f*f
	}
	if norm == 0 {
		vec[0], norm = 1, 1
	}
	for i := range vec {
		vec[i] = float32(float64(vec[i]) / math.Sqrt(norm))
	}
	return vec
}
