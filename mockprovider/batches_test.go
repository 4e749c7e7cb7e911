package mockprovider

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBatchWire runs a batch on the mock with a fake clock: uploaded as
// a multipart file, created, in progress with a share of its lines done,
// then completed with an output file of one OpenAI batch line per
// request; a batch cancelled part way keeps what completed.
func TestBatchWire(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	srv := httptest.NewServer(New(Config{APIKey: "k", Clock: clock}))
	defer srv.Close()
	do := func(method, path, ctype string, body io.Reader) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, body)
		req.Header.Set("Authorization", "Bearer k")
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, data)
		}
		v := map[string]any{"raw": string(data)}
		_ = json.Unmarshal(data, &v)
		return v
	}
	var in strings.Builder
	for i := range 10 {
		in.WriteString(`{"custom_id":"c` + string(rune('0'+i)) + `","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[{"role":"user","content":"hi"}]}}` + "\n")
	}
	upload := func() string {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		_ = mw.WriteField("purpose", "batch")
		fw, _ := mw.CreateFormFile("file", "in.jsonl")
		_, _ = io.WriteString(fw, in.String())
		_ = mw.Close()
		f := do(http.MethodPost, "/v1/files", mw.FormDataContentType(), &body)
		if f["object"] != "file" || f["purpose"] != "batch" || f["bytes"].(float64) != float64(in.Len()) {
			t.Fatalf("file %v", f)
		}
		return f["id"].(string)
	}
	create := func() string {
		b := do(http.MethodPost, "/v1/batches", "application/json", strings.NewReader(`{"input_file_id":"`+upload()+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`))
		if b["status"] != "in_progress" || b["output_file_id"] != nil {
			t.Fatalf("created %v", b)
		}
		return b["id"].(string)
	}
	id := create()
	advance(batchDuration / 2)
	if b := do(http.MethodGet, "/v1/batches/"+id, "", nil); b["status"] != "in_progress" || b["request_counts"].(map[string]any)["completed"].(float64) != 5 {
		t.Fatalf("half way: %v", b)
	}
	advance(batchDuration)
	b := do(http.MethodGet, "/v1/batches/"+id, "", nil)
	if b["status"] != "completed" || b["output_file_id"] == nil {
		t.Fatalf("after its duration: %v", b)
	}
	out := do(http.MethodGet, "/v1/files/"+b["output_file_id"].(string)+"/content", "", nil)["raw"].(string)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 10 {
		t.Fatalf("output has %d lines", len(lines))
	}
	var line struct {
		CustomID string `json:"custom_id"`
		Response struct {
			StatusCode int `json:"status_code"`
			Body       struct {
				Usage struct {
					PromptTokens     int `json:"prompt_tokens"`
					CompletionTokens int `json:"completion_tokens"`
				} `json:"usage"`
			} `json:"body"`
		} `json:"response"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &line); err != nil || line.CustomID != "c0" || line.Response.StatusCode != 200 ||
		line.Response.Body.Usage.PromptTokens == 0 || line.Response.Body.Usage.CompletionTokens == 0 {
		t.Fatalf("line %s: %v", lines[0], err)
	}

	id = create()
	advance(batchDuration * 3 / 10)
	do(http.MethodPost, "/v1/batches/"+id+"/cancel", "", nil)
	advance(batchDuration)
	b = do(http.MethodGet, "/v1/batches/"+id, "", nil)
	if done := b["request_counts"].(map[string]any)["completed"].(float64); b["status"] != "cancelled" || done != 3 {
		t.Fatalf("cancelled: %v", b)
	}
	out = do(http.MethodGet, "/v1/files/"+b["output_file_id"].(string)+"/content", "", nil)["raw"].(string)
	if n := strings.Count(out, "\n"); n != 3 {
		t.Fatalf("cancelled batch's output has %d lines, want 3", n)
	}
}
