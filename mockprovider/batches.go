package mockprovider

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
)

// batchDuration is how long a mock batch runs before it completes.
const batchDuration = 3 * time.Second

// batchStore keeps the files uploaded for batches and the batches, in
// memory, as OpenAI's Files and Batch APIs show them.
type batchStore struct {
	mu      sync.Mutex
	files   map[string][]byte
	batches map[string]*mockBatch
}

// failLine is the text that makes a line of a mock batch fail: it goes to
// the batch's error file instead of its output.
const failLine = "please fail this one"

// mockBatch is a batch of the mock provider.
type mockBatch struct {
	id, endpoint, input string
	created             time.Time
	cancelled           time.Time
	lines               [][]byte
	output, errors      string
}

// batchRoute returns the function answering the Files and Batch
// endpoint rest, or nil.
func (h *Handler) batchRoute(r *http.Request, rest string) http.HandlerFunc {
	switch {
	case rest == "/files" && r.Method == http.MethodPost:
		return h.uploadFile
	case rest == "/batches" && r.Method == http.MethodPost:
		return h.createBatch
	case strings.HasPrefix(rest, "/files/file-") && strings.HasSuffix(rest, "/content"):
		id := strings.TrimSuffix(rest[len("/files/"):], "/content")
		return func(w http.ResponseWriter, r *http.Request) { h.fileContent(w, r, id) }
	case strings.HasPrefix(rest, "/batches/"):
		id, sub, _ := strings.Cut(rest[len("/batches/"):], "/")
		if sub == "cancel" && r.Method == http.MethodPost {
			return func(w http.ResponseWriter, r *http.Request) { h.batch(w, r, id, true) }
		}
		if sub == "" && r.Method == http.MethodGet {
			return func(w http.ResponseWriter, r *http.Request) { h.batch(w, r, id, false) }
		}
	}
	return nil
}

// uploadFile answers POST /v1/files (multipart: purpose, file).
func (h *Handler) uploadFile(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	if err := r.ParseMultipartForm(8 << 20); err != nil {
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "file", "a multipart body with a file is required")
		return
	}
	f, fh, err := r.FormFile("file")
	if err != nil {
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "file", "file: required")
		return
	}
	defer f.Close()
	data, _ := io.ReadAll(f)
	id := newID("file-", 24)
	h.batchStore().mu.Lock()
	h.batchStore().files[id] = data
	h.batchStore().mu.Unlock()
	writeMockJSON(w, map[string]any{"id": id, "object": "file", "bytes": len(data), "created_at": h.clock().Unix(),
		"filename": fh.Filename, "purpose": r.FormValue("purpose"), "status": "processed"})
}

// createBatch answers POST /v1/batches.
func (h *Handler) createBatch(w http.ResponseWriter, r *http.Request) {
	body, status, err := readBody(w, r)
	if err != nil {
		writeOpenAIError(w, status, "invalid_request_error", "", "", err.Error())
		return
	}
	in := gjson.GetBytes(body, "input_file_id").String()
	bs := h.batchStore()
	bs.mu.Lock()
	defer bs.mu.Unlock()
	data, ok := bs.files[in]
	if !ok {
		writeOpenAIError(w, http.StatusNotFound, "invalid_request_error", "", "input_file_id", "No such file: "+in)
		return
	}
	b := &mockBatch{id: newID("batch_", 24), endpoint: gjson.GetBytes(body, "endpoint").String(), input: in, created: h.clock()}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
			b.lines = append(b.lines, append([]byte(nil), line...))
		}
	}
	bs.batches[b.id] = b
	writeMockJSON(w, h.batchView(b))
}

// batch answers GET /v1/batches/{id} and POST /v1/batches/{id}/cancel.
func (h *Handler) batch(w http.ResponseWriter, _ *http.Request, id string, cancel bool) {
	bs := h.batchStore()
	bs.mu.Lock()
	defer bs.mu.Unlock()
	b, ok := bs.batches[id]
	if !ok {
		writeOpenAIError(w, http.StatusNotFound, "invalid_request_error", "", "", "No such batch: "+id)
		return
	}
	if cancel && b.cancelled.IsZero() {
		b.cancelled = h.clock()
	}
	writeMockJSON(w, h.batchView(b))
}

// done is how many of b's lines have completed at now.
func (b *mockBatch) done(now time.Time) int {
	if !b.cancelled.IsZero() && b.cancelled.Before(now) {
		now = b.cancelled
	}
	n := int(int64(len(b.lines)) * int64(now.Sub(b.created)) / int64(batchDuration))
	return min(max(n, 0), len(b.lines))
}

// batchView is b as the API shows it; it writes the output file once b
// ended. The store's lock is held.
func (h *Handler) batchView(b *mockBatch) map[string]any {
	now := h.clock()
	done := b.done(now)
	status := "in_progress"
	switch {
	case !b.cancelled.IsZero():
		status = "cancelled"
	case done == len(b.lines):
		status = "completed"
	}
	v := map[string]any{"id": b.id, "object": "batch", "endpoint": b.endpoint, "input_file_id": b.input,
		"completion_window": "24h", "status": status, "created_at": b.created.Unix(),
		"request_counts": map[string]int{"total": len(b.lines), "completed": done, "failed": 0},
		"output_file_id": nil, "error_file_id": nil}
	if status == "in_progress" {
		return v
	}
	if b.output == "" {
		var out, errs bytes.Buffer
		for i, line := range b.lines[:done] {
			if bytes.Contains(line, []byte(failLine)) {
				errs.Write(batchErrorLine(line))
				errs.WriteByte('\n')
				continue
			}
			out.Write(h.batchLine(b, i, line))
			out.WriteByte('\n')
		}
		b.output = newID("file-", 24)
		h.batchStore().files[b.output] = out.Bytes()
		if errs.Len() > 0 {
			b.errors = newID("file-", 24)
			h.batchStore().files[b.errors] = errs.Bytes()
		}
	}
	failed := bytes.Count(h.batchStore().files[b.errors], []byte("\n"))
	v["request_counts"] = map[string]int{"total": len(b.lines), "completed": done - failed, "failed": failed}
	v["output_file_id"] = b.output
	if b.errors != "" {
		v["error_file_id"] = b.errors
	}
	return v
}

// batchLine is the output line of request line, the i-th of b.
func (h *Handler) batchLine(b *mockBatch, i int, line []byte) []byte {
	body := gjson.GetBytes(line, "body")
	model := body.Get("model").String()
	prompt := max(int64(len(body.Raw)/4), 1)
	var resp map[string]any
	if b.endpoint == "/v1/embeddings" {
		resp = map[string]any{"object": "list", "model": model,
			"data":  []any{map[string]any{"object": "embedding", "index": 0, "embedding": []float64{0.1, 0.2, 0.3}}},
			"usage": map[string]int64{"prompt_tokens": prompt, "total_tokens": prompt}}
	} else {
		completion := int64(7)
		resp = map[string]any{"id": newID("chatcmpl-", 24), "object": "chat.completion", "created": h.clock().Unix(), "model": model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": fmt.Sprintf("answer %d of the batch", i+1)}}},
			"usage": map[string]int64{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}}
	}
	out, _ := json.Marshal(map[string]any{"id": newID("batch_req_", 24), "custom_id": gjson.GetBytes(line, "custom_id").String(),
		"response": map[string]any{"status_code": 200, "request_id": newID("req_", 32), "body": resp}, "error": nil})
	return out
}

// batchErrorLine is the error-file line of request line, which failed.
func batchErrorLine(line []byte) []byte {
	out, _ := json.Marshal(map[string]any{"id": newID("batch_req_", 24), "custom_id": gjson.GetBytes(line, "custom_id").String(),
		"response": map[string]any{"status_code": 400, "request_id": newID("req_", 32),
			"body": map[string]any{"error": map[string]any{"message": "the request asked to fail", "type": "invalid_request_error", "param": nil, "code": nil}}},
		"error": nil})
	return out
}

// fileContent answers GET /v1/files/{id}/content.
func (h *Handler) fileContent(w http.ResponseWriter, _ *http.Request, id string) {
	bs := h.batchStore()
	bs.mu.Lock()
	data, ok := bs.files[id]
	bs.mu.Unlock()
	if !ok {
		writeOpenAIError(w, http.StatusNotFound, "invalid_request_error", "", "", "No such file: "+id)
		return
	}
	w.Header().Set("Content-Type", "application/jsonl")
	_, _ = w.Write(data)
}

// writeMockJSON answers v as JSON.
func writeMockJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
