package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	_ "image/png"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/mockprovider"
)

// taskView is a task as the API returns it.
type taskView struct {
	ID          string  `json:"id"`
	Object      string  `json:"object"`
	Status      string  `json:"status"`
	Model       string  `json:"model"`
	Type        string  `json:"type"`
	Progress    *int    `json:"progress"`
	Error       string  `json:"error"`
	CreatedAt   string  `json:"created_at"`
	CompletedAt *string `json:"completed_at"`
	Output      *struct {
		ImageURL string `json:"image_url"`
		VideoURL string `json:"video_url"`
	} `json:"output"`
}

var isoMillis = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

func tasksOptions() gatewayOptions {
	return gatewayOptions{
		Extra:       "tasks {\n\t\t\tpoll_interval 200ms\n\t\t}",
		MockOptions: "video_duration 2s",
		Prices:      `{"currency":"USD","models":{"mock-image":{"image":"0.04"},"gpt-image-1":{"image":"0.05"},"mock-video":{"video_task":"0.5"}}}`,
	}
}

func createTask(t *testing.T, key, body string) (int, taskView, []byte) {
	t.Helper()
	status, _, raw := call(t, http.MethodPost, "/v1/tasks", key, body)
	var v taskView
	if status < 300 {
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("decoding task: %v: %s", err, raw)
		}
	}
	return status, v, raw
}

func getTask(t *testing.T, key, id string) (int, taskView, []byte) {
	t.Helper()
	status, _, raw := call(t, http.MethodGet, "/v1/tasks/"+id, key, "")
	var v taskView
	if status == http.StatusOK {
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("decoding task: %v: %s", err, raw)
		}
	}
	return status, v, raw
}

// fetchMedia GETs a media URL without any key and returns type and bytes.
func fetchMedia(t *testing.T, url string) (int, string, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), buf.Bytes()
}

func TestImageTasks(t *testing.T) {
	startGateway(t, tasksOptions())
	key, _ := createKey(t, "painter")
	for i, model := range []string{"mock-image", "gpt-image-1"} {
		status, task, raw := createTask(t, key, fmt.Sprintf(`{"model":%q,"prompt":"a red fox","size":"256x256","n":1}`, model))
		if status != http.StatusAccepted || task.Status != "succeeded" || task.Object != "task" || task.Type != "image" || task.Model != model {
			t.Fatalf("Test %d: create: %d %s", i, status, raw)
		}
		if !strings.HasPrefix(task.ID, "task_") || len(task.ID) < 20 || !isoMillis.MatchString(task.CreatedAt) {
			t.Fatalf("Test %d: id or timestamp: %s", i, raw)
		}
		if task.Output == nil || !strings.HasPrefix(task.Output.ImageURL, baseURL+"/media/") {
			t.Fatalf("Test %d: the image is not re-hosted by the gateway: %s", i, raw)
		}
		status, ctype, data := fetchMedia(t, task.Output.ImageURL)
		if status != http.StatusOK || ctype != "image/png" {
			t.Fatalf("Test %d: media: %d %s", i, status, ctype)
		}
		if _, _, err := image.Decode(bytes.NewReader(data)); err != nil {
			t.Fatalf("Test %d: media is not a PNG: %v", i, err)
		}
		status, got, raw := getTask(t, key, task.ID)
		if status != http.StatusOK || got.Status != "succeeded" || got.Progress == nil || *got.Progress != 100 || got.CompletedAt == nil || !isoMillis.MatchString(*got.CompletedAt) {
			t.Fatalf("Test %d: query: %d %s", i, status, raw)
		}
	}
	// Billed per image, once each.
	recs := waitLedger(t, "painter", 2)
	for _, r := range recs {
		if r.Endpoint != "tasks" || r.Images != 1 || !r.Priced {
			t.Fatalf("ledger %+v", r)
		}
	}
	status, _, _ := fetchMedia(t, baseURL+"/media/nonexistent0000000000")
	if status != http.StatusNotFound {
		t.Fatalf("unknown media: %d", status)
	}
}

func TestVideoTaskLifecycle(t *testing.T) {
	startGateway(t, tasksOptions())
	key, _ := createKey(t, "director")
	status, task, raw := createTask(t, key, `{"model":"mock-video","prompt":"waves at dusk","seconds":"4"}`)
	if status != http.StatusAccepted || task.Status != "running" || task.Type != "video" || task.Output != nil {
		t.Fatalf("create: %d %s", status, raw)
	}
	var created map[string]any
	_ = json.Unmarshal(raw, &created)
	for k := range created {
		switch k {
		case "id", "object", "status", "model", "type", "created_at":
		default:
			t.Errorf("the create response has field %q; the contract allows only id, object, status, model, type, created_at", k)
		}
	}
	last := -1
	var final taskView
	eventually(t, 30*time.Second, "the video task succeeds", func() bool {
		_, v, raw := getTask(t, key, task.ID)
		if v.Progress == nil || *v.Progress < last {
			t.Fatalf("progress went backwards or is missing: %s", raw)
		}
		last = *v.Progress
		if v.Status == "running" && v.CompletedAt != nil {
			t.Fatalf("a running task has completed_at: %s", raw)
		}
		final = v
		return v.Status == "succeeded"
	})
	if *final.Progress != 100 || final.CompletedAt == nil || final.Output == nil || final.Output.VideoURL == "" || final.Error != "" {
		t.Fatalf("finished task %+v", final)
	}
	status, ctype, data := fetchMedia(t, final.Output.VideoURL)
	if status != http.StatusOK || ctype != "video/mp4" || len(data) == 0 {
		t.Fatalf("video media: %d %s %d bytes", status, ctype, len(data))
	}
	recs := waitLedger(t, "director", 1)
	if recs[0].Endpoint != "tasks" || recs[0].Model != "mock-video" || !sameDecimal(recs[0].Cost, "0.5") {
		t.Fatalf("ledger %+v", recs[0])
	}

	// A failing video ends failed, with "<ErrorName>: <message>", unbilled.
	_, failing, _ := createTask(t, key, `{"model":"mock-video","prompt":"please fail this one"}`)
	eventually(t, 30*time.Second, "the video task fails", func() bool {
		_, v, _ := getTask(t, key, failing.ID)
		final = v
		return v.Status == "failed"
	})
	if !regexp.MustCompile(`^[A-Z][A-Za-z]+: .+`).MatchString(final.Error) || final.Output != nil || final.CompletedAt == nil {
		t.Fatalf("failed task %+v", final)
	}
	time.Sleep(time.Second)
	if n := len(ledgerOf(t, "director")); n != 1 {
		t.Fatalf("%d ledger records: a failed task must not be billed", n)
	}
}

func TestTaskListAndIsolation(t *testing.T) {
	startGateway(t, tasksOptions())
	alice, _ := createKey(t, "alice-tasks")
	alice2, _ := createKey(t, "alice-tasks") // another key of the same user
	bob, _ := createKey(t, "bob-tasks")
	var ids []string
	for i := 0; i < 5; i++ {
		k := alice
		if i%2 == 1 {
			k = alice2
		}
		_, task, raw := createTask(t, k, fmt.Sprintf(`{"model":"mock-image","prompt":"image %d"}`, i))
		if task.ID == "" {
			t.Fatalf("create: %s", raw)
		}
		ids = append(ids, task.ID)
		time.Sleep(5 * time.Millisecond)
	}
	list := func(key, query string) (int, []taskView, []byte) {
		status, _, raw := call(t, http.MethodGet, "/v1/tasks"+query, key, "")
		var l struct {
			Object string     `json:"object"`
			Data   []taskView `json:"data"`
		}
		if status == http.StatusOK {
			if err := json.Unmarshal(raw, &l); err != nil || l.Object != "list" {
				t.Fatalf("list: %v %s", err, raw)
			}
		}
		return status, l.Data, raw
	}
	_, all, raw := list(alice, "")
	if len(all) != 5 {
		t.Fatalf("alice sees %d tasks: %s", len(all), raw)
	}
	for i, v := range all {
		if v.ID != ids[len(ids)-1-i] {
			t.Fatalf("list order: position %d is %s, want %s (most recent first)", i, v.ID, ids[len(ids)-1-i])
		}
		if v.Output != nil || v.Progress == nil {
			t.Fatalf("list item %s has output or lacks progress: %s", v.ID, raw)
		}
	}
	if !strings.Contains(string(raw), `"completed_at":`) {
		t.Fatalf("list items lack completed_at: %s", raw)
	}
	_, two, _ := list(alice2, "?limit=2")
	if len(two) != 2 || two[0].ID != ids[4] {
		t.Fatalf("limit=2: %+v", two)
	}
	_, none, _ := list(bob, "")
	if len(none) != 0 {
		t.Fatalf("bob sees alice's tasks: %+v", none)
	}
	for i, q := range []string{"?limit=0", "?limit=101", "?limit=abc"} {
		if status, _, raw := list(alice, q); status != http.StatusBadRequest {
			t.Errorf("Test %d: %s: %d %s", i, q, status, raw)
		}
	}
	// Another user's task, an unknown one: the same 404.
	s1, _, raw1 := getTask(t, bob, ids[0])
	s2, _, raw2 := getTask(t, bob, "task_doesnotexist0000000000000")
	if s1 != http.StatusNotFound || s2 != http.StatusNotFound || decodeError(t, raw1).code() != decodeError(t, raw2).code() {
		t.Fatalf("isolation: %d %s / %d %s", s1, raw1, s2, raw2)
	}
}

func TestTaskValidation(t *testing.T) {
	startGateway(t, tasksOptions())
	key, _ := createKey(t, "validator")
	for i, tc := range []struct {
		body   string
		status int
		param  string
	}{
		{`{"model":"mock-image"`, 400, ""},
		{`{"model":"mock-image"}`, 400, "prompt"},
		{`{"model":"mock-image","prompt":""}`, 400, "prompt"},
		{`{"model":"mock-image","prompt":5}`, 400, "prompt"},
		{`{"prompt":"x"}`, 400, "model"},
		{`{"model":"mock-image","prompt":"x","size":"big"}`, 400, "size"},
		{`{"model":"mock-image","prompt":"x","size":"2048x2048"}`, 400, "size"},
		{`{"model":"mock-image","prompt":"x","n":0}`, 400, "n"},
		{`{"model":"mock-image","prompt":"x","n":5}`, 400, "n"},
		{`{"model":"mock-image","prompt":"x","seed":"abc"}`, 400, "seed"},
		{`{"model":"mock-image","prompt":"x","seed":1.5}`, 400, "seed"},
		{`{"model":"mock-gpt","prompt":"x"}`, 400, "model"},
		{`{"model":"no-such-model","prompt":"x"}`, 404, "model"},
		// A member the gateway reads, repeated: the provider would take
		// the last, past the n cap, the sizes and the budget.
		{`{"model":"mock-image","prompt":"x","size":"256x256","n":1,"n":5}`, 400, "n"},
		{`{"model":"mock-image","prompt":"x","size":"256x256","size":"2048x2048"}`, 400, "size"},
		{`{"model":"mock-image","model":"mock-gpt","prompt":"x"}`, 400, "model"},
	} {
		status, _, raw := createTask(t, key, tc.body)
		if status != tc.status {
			t.Errorf("Test %d: %s: status %d %s", i, tc.body, status, raw)
			continue
		}
		e := decodeError(t, raw)
		if tc.param != "" && (e.Error.Param == nil || *e.Error.Param != tc.param) {
			t.Errorf("Test %d: %s: param %v, want %s", i, tc.body, e.Error.Param, tc.param)
		}
	}
	_, _, raw := createTask(t, key, `{"model":"mock-gpt","prompt":"x"}`)
	if !strings.Contains(string(raw), "/v1/chat/completions") {
		t.Errorf("a chat model on /v1/tasks must point to the chat endpoint: %s", raw)
	}
	for i, tc := range []struct{ body, param string }{
		{`{"model":"mock-image","prompt":"x","size":"256x256","n":1,"n":4}`, "n"},
		{`{"model":"mock-image","prompt":"x","size":"256x256","\u006e":1,"n":4}`, "n"},
		{`{"model":"mock-image","prompt":"x","response_format":"url","response_format":"gif"}`, "response_format"},
	} {
		status, _, raw := call(t, http.MethodPost, "/v1/images/generations", key, tc.body)
		e := decodeError(t, raw)
		if status != http.StatusBadRequest || e.Error.Type != "invalid_request_error" || e.Error.Param == nil || *e.Error.Param != tc.param ||
			!strings.Contains(e.Error.Message, "more than once") {
			t.Errorf("images %d: %s: %d %s, want 400 about a repeated %s", i, tc.body, status, raw, tc.param)
		}
	}
	if n := len(ledgerOf(t, "validator")); n != 0 {
		t.Fatalf("invalid tasks left %d ledger records", n)
	}
	// A repeated member the gateway does not read passes to the provider.
	status, task, raw := createTask(t, key, `{"model":"mock-image","prompt":"x","size":"256x256","user":"a","user":"b"}`)
	if status != http.StatusAccepted || task.Status != "succeeded" {
		t.Fatalf("a repeated user: %d %s", status, raw)
	}
}

// TestTaskRateLimit checks that created tasks count against a key's
// requests per minute and that refused ones do not.
func TestTaskRateLimit(t *testing.T) {
	startGateway(t, tasksOptions())
	key, keyID := createKey(t, "limited-painter")
	if status := adminJSON(t, http.MethodPut, "/air/budgets/key/"+keyID, `{"rpm":2}`, nil); status != http.StatusOK {
		t.Fatalf("set rpm: %d", status)
	}
	image := `{"model":"mock-image","prompt":"a red fox","size":"256x256"}`
	for i, body := range []string{`{"model":"mock-image"}`, image, `{"model":"mock-image","prompt":"x","n":0}`, image} {
		status, _, raw := createTask(t, key, body)
		if want := []int{400, 202, 400, 202}[i]; status != want {
			t.Fatalf("Test %d: %s: status %d, want %d: %s", i, body, status, want, raw)
		}
	}
	status, hdr, raw := call(t, http.MethodPost, "/v1/tasks", key, image)
	if e := decodeError(t, raw); status != http.StatusTooManyRequests || e.code() != "rate_limit_exceeded" || hdr.Get("Retry-After") == "" {
		t.Fatalf("third task in a minute: %d %v %s", status, hdr, raw)
	}
	if n := len(waitLedger(t, "limited-painter", 2)); n != 2 {
		t.Fatalf("%d ledger records, want the 2 created tasks", n)
	}
}

func TestTaskTTL(t *testing.T) {
	o := tasksOptions()
	o.Extra = "tasks {\n\t\t\tttl 2s\n\t\t\tmedia_ttl 2s\n\t\t\tpoll_interval 200ms\n\t\t}"
	startGateway(t, o)
	key, _ := createKey(t, "ephemeral")
	_, task, raw := createTask(t, key, `{"model":"gpt-image-1","prompt":"short-lived"}`)
	if task.Output == nil {
		t.Fatalf("create: %s", raw)
	}
	if status, _, _ := fetchMedia(t, task.Output.ImageURL); status != http.StatusOK {
		t.Fatalf("fresh media: %d", status)
	}
	time.Sleep(3500 * time.Millisecond)
	if status, _, raw := getTask(t, key, task.ID); status != http.StatusNotFound {
		t.Fatalf("task after its TTL: %d %s", status, raw)
	}
	if status, _, _ := fetchMedia(t, task.Output.ImageURL); status != http.StatusNotFound {
		t.Fatalf("media after its TTL: %d", status)
	}
	_, _, raw = call(t, http.MethodGet, "/v1/tasks", key, "")
	if strings.Contains(string(raw), task.ID) {
		t.Fatalf("an expired task is still listed: %s", raw)
	}
}

// TestTasksSurviveKill kills the gateway process while video tasks run,
// starts it again on the same data dir, and checks that every task
// completes and is billed exactly once. The upstream (the mock provider,
// served by this test process) lives on across the gateway's restart, as a
// real provider would.
func TestTasksSurviveKill(t *testing.T) {
	upstream := httptest.NewServer(mockprovider.New(mockprovider.Config{APIKey: "ext-key", VideoDuration: 3 * time.Second}))
	defer upstream.Close()
	dataDir := t.TempDir()
	cfg := quickstartConfig(t, dataDir, fmt.Sprintf(`		tasks {
			poll_interval 200ms
		}
		provider ext {
			protocol openai
			base_url %s/v1
			api_key ext-key
		}
		model ext-video ext {
			kind video
			typical_duration 3s
		}`, upstream.URL))
	p := startProcess(t, cfg, dataDir)
	key := lastLine(caddyCLI(t, "air", "key", "create", "--user", "survivor", "--config", cfg))

	var ids []string
	for i := 0; i < 3; i++ {
		req, _ := http.NewRequest(http.MethodPost, p.url("/v1/tasks"), strings.NewReader(fmt.Sprintf(`{"model":"ext-video","prompt":"clip %d"}`, i)))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var v taskView
		_ = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted || v.Status != "running" {
			t.Fatalf("create: %d %+v", resp.StatusCode, v)
		}
		ids = append(ids, v.ID)
	}
	p.kill()

	p = startProcess(t, cfg, dataDir)
	for _, id := range ids {
		eventually(t, 60*time.Second, "task "+id+" succeeds after the restart", func() bool {
			status, body := getStatus(t, p.url("/v1/tasks/"+id), key)
			if status != http.StatusOK || strings.Contains(body, `"status":"failed"`) {
				t.Fatalf("task %s after restart: %d %s", id, status, body)
			}
			return strings.Contains(body, `"status":"succeeded"`)
		})
	}
	eventually(t, 10*time.Second, "every task billed", func() bool {
		return len(procLedger(t, "survivor")) >= len(ids)
	})
	// A second restart must not bill anything again.
	p.stop()
	p = startProcess(t, cfg, dataDir)
	time.Sleep(time.Second)
	recs := procLedger(t, "survivor")
	seen := map[string]int{}
	for _, r := range recs {
		seen[r.ID]++
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Fatalf("task %s billed %d times: %+v", id, seen[id], recs)
		}
	}
	if len(recs) != len(ids) {
		t.Fatalf("%d ledger records for %d tasks", len(recs), len(ids))
	}
}
