package integration

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// TestMetricsCountReads: a read (the models list or a model, a task or the
// task list, a stored response) moves air_requests_total once, with its
// outcome and status, under the model it read when it names one; a refused
// read is counted as rejected with its reason; neither observes a request
// duration, which is the latency of work asked of a model.
func TestMetricsCountReads(t *testing.T) {
	startGateway(t, gatewayOptions{Prices: respPrices})
	key, _ := createKey(t, "reads")
	status, _, body := call(t, http.MethodPost, "/v1/responses", key, `{"model":"mock-gpt","input":"hi"}`)
	resp := gjson.GetBytes(body, "id").Str
	if status != http.StatusOK || resp == "" {
		t.Fatalf("creating a response: %d %s", status, body)
	}
	status, _, body = call(t, http.MethodPost, "/v1/tasks", key, `{"model":"mock-image","prompt":"a lighthouse","size":"256x256"}`)
	task := gjson.GetBytes(body, "id").Str
	if status/100 != 2 || task == "" {
		t.Fatalf("creating a task: %d %s", status, body)
	}
	req := func(op, endpoint, model, outcome, status string) []string {
		return []string{`operation="` + op + `"`, `endpoint="` + endpoint + `"`, `model="` + model + `"`,
			`outcome="` + outcome + `"`, `status="` + status + `"`}
	}
	for i, tc := range []struct {
		name, method, path string
		header             []string
		status             int
		series             []string
		rejection          string
	}{
		{"models list", "GET", "/v1/models", nil, 200, req("list_models", "models", "unknown", "ok", "200"), ""},
		{"models list, Anthropic's", "GET", "/v1/models", []string{"Anthropic-Version", "2023-06-01"}, 200,
			req("list_models", "models", "unknown", "ok", "200"), ""},
		{"a model", "GET", "/v1/models/mock-gpt", nil, 200, req("list_models", "models", "mock-gpt", "ok", "200"), ""},
		{"an unknown model", "GET", "/v1/models/gpt-nonexistent", nil, 404,
			req("list_models", "models", "unknown", "rejected", "404"), "invalid_request"},
		{"models, wrong method", "PUT", "/v1/models", nil, 405, req("list_models", "models", "unknown", "rejected", "405"), "invalid_request"},
		{"a task", "GET", "/v1/tasks/" + task, nil, 200, req("generate_content", "tasks", "mock-image", "ok", "200"), ""},
		{"a task, HEAD", "HEAD", "/v1/tasks/" + task, nil, 200, req("generate_content", "tasks", "mock-image", "ok", "200"), ""},
		{"the task list", "GET", "/v1/tasks", nil, 200, req("generate_content", "tasks", "unknown", "ok", "200"), ""},
		{"an unknown task", "GET", "/v1/tasks/task_nonexistent", nil, 404,
			req("generate_content", "tasks", "unknown", "rejected", "404"), "invalid_request"},
		{"a bad task list limit", "GET", "/v1/tasks?limit=0", nil, 400,
			req("generate_content", "tasks", "unknown", "rejected", "400"), "invalid_request"},
		{"a stored response", "GET", "/v1/responses/" + resp, nil, 200, req("chat", "responses", "mock-gpt", "ok", "200"), ""},
		{"its input items", "GET", "/v1/responses/" + resp + "/input_items", nil, 200, req("chat", "responses", "mock-gpt", "ok", "200"), ""},
		{"an unknown response", "GET", "/v1/responses/resp_nonexistent", nil, 404,
			req("chat", "responses", "unknown", "rejected", "404"), "invalid_request"},
	} {
		before := scrapeMetrics(t)
		status, _, raw := call(t, tc.method, tc.path, key, "", tc.header...)
		if status != tc.status {
			t.Errorf("Test %d (%s): status %d, want %d: %s", i, tc.name, status, tc.status, raw)
			continue
		}
		var after scrape
		deadline := time.Now().Add(5 * time.Second)
		for {
			after = scrapeMetrics(t)
			if after.delta(before, "air_requests_total") >= 1 || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if d := after.delta(before, "air_requests_total"); d != 1 {
			t.Errorf("Test %d (%s): air_requests_total grew by %v, want 1", i, tc.name, d)
		}
		if d := after.delta(before, "air_requests_total", tc.series...); d != 1 {
			t.Errorf("Test %d (%s): air_requests_total{%s} grew by %v, want 1", i, tc.name, strings.Join(tc.series, ","), d)
		}
		want := 0.0
		if tc.rejection != "" {
			want = 1
		}
		if d := after.delta(before, "air_rejections_total", `reason="`+tc.rejection+`"`); tc.rejection != "" && d != want {
			t.Errorf("Test %d (%s): air_rejections_total{reason=%q} grew by %v, want 1", i, tc.name, tc.rejection, d)
		}
		if d := after.delta(before, "air_rejections_total"); d != want {
			t.Errorf("Test %d (%s): air_rejections_total grew by %v, want %v", i, tc.name, d, want)
		}
		if d := after.delta(before, "gen_ai_server_request_duration_seconds_count"); d != 0 {
			t.Errorf("Test %d (%s): a read observed %v request durations, want none", i, tc.name, d)
		}
	}
}
