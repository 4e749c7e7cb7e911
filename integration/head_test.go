package integration

import (
	"net/http"
	"testing"

	"github.com/tidwall/gjson"
)

// TestHeadOnGetEndpoints: every GET endpoint answers HEAD with GET's
// status and headers and no body, and other methods get 405 with
// `Allow: GET, HEAD`.
func TestHeadOnGetEndpoints(t *testing.T) {
	startGateway(t, gatewayOptions{Prices: respPrices})
	key, _ := createKey(t, "head")
	status, _, body := call(t, http.MethodPost, "/v1/responses", key, `{"model":"mock-gpt","input":"hi"}`)
	id := gjson.GetBytes(body, "id").Str
	if status != http.StatusOK || id == "" {
		t.Fatalf("creating a response: %d %s", status, body)
	}
	status, _, body = call(t, http.MethodPost, "/v1/tasks", key, `{"model":"mock-image","prompt":"a lighthouse","size":"256x256"}`)
	task := gjson.GetBytes(body, "id").Str
	if status/100 != 2 || task == "" {
		t.Fatalf("creating a task: %d %s", status, body)
	}
	for _, tc := range []struct {
		path   string
		header []string
	}{
		{"/v1/models", nil},
		{"/v1/models", []string{"Anthropic-Version", "2023-06-01"}},
		{"/v1/models/mock-gpt", nil},
		{"/v1/models/gpt-nonexistent", nil},
		{"/v1/responses/" + id, nil},
		{"/v1/responses/" + id + "/input_items", nil},
		{"/v1/tasks", nil},
		{"/v1/tasks/" + task, nil},
		{"/v1/tasks/task_nonexistent", nil},
	} {
		t.Run(tc.path, func(t *testing.T) {
			getStatus, getHeader, getBody := call(t, http.MethodGet, tc.path, key, "", tc.header...)
			status, header, body := call(t, http.MethodHead, tc.path, key, "", tc.header...)
			if status != getStatus || len(body) != 0 || len(getBody) == 0 {
				t.Fatalf("HEAD: %d with %d bytes, want GET's %d without its %d bytes", status, len(body), getStatus, len(getBody))
			}
			for _, h := range []string{"Content-Type", "Content-Length"} {
				if header.Get(h) != getHeader.Get(h) {
					t.Errorf("HEAD's %s %q, GET's %q", h, header.Get(h), getHeader.Get(h))
				}
			}
		})
	}
	for _, tc := range []struct{ path, allow string }{
		{"/v1/models", "GET, HEAD"},
		{"/v1/models/mock-gpt", "GET, HEAD"},
		{"/v1/responses/" + id + "/input_items", "GET, HEAD"},
		{"/v1/tasks", "GET, HEAD, POST"},
		{"/v1/tasks/" + task, "GET, HEAD"},
	} {
		status, header, body := call(t, http.MethodPut, tc.path, key, "")
		if status != http.StatusMethodNotAllowed || header.Get("Allow") != tc.allow {
			t.Errorf("PUT %s: %d, Allow %q (want %q): %s", tc.path, status, header.Get("Allow"), tc.allow, body)
		}
	}
}
