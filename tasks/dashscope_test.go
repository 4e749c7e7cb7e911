package tasks

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/providers"

	"github.com/caddy-air/caddy-air/internal/fakeclock"
)

// fakeDashScope is a DashScope async upstream: creation answers PENDING,
// then each query answers the next scripted body (the last one repeats).
type fakeDashScope struct {
	mu     sync.Mutex
	script []string
	polls  int
}

func (f *fakeDashScope) setScript(bodies ...string) {
	f.mu.Lock()
	f.script = bodies
	f.mu.Unlock()
}

func (f *fakeDashScope) install(e *env) {
	create := func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-DashScope-Async") != "enable" {
			writeJSON(w, 400, `{"request_id":"r0","code":"InvalidParameter","message":"current user api does not support synchronous calls"}`)
			return
		}
		if r.Header.Get("Authorization") != "Bearer sk-upstream-1" {
			writeJSON(w, 401, `{"request_id":"r0","code":"InvalidApiKey","message":"Invalid API-key provided."}`)
			return
		}
		writeJSON(w, 200, `{"output":{"task_status":"PENDING","task_id":"ds-task-1"},"request_id":"r1"}`)
	}
	e.mux.HandleFunc("POST /api/v1/services/aigc/text2image/image-synthesis", create)
	e.mux.HandleFunc("POST /api/v1/services/aigc/video-generation/video-synthesis", create)
	e.mux.HandleFunc("GET /api/v1/tasks/ds-task-1", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		body := f.script[min(f.polls, len(f.script)-1)]
		f.polls++
		writeJSON(w, 200, body)
	})
}

const (
	dsPending = `{"request_id":"r2","output":{"task_id":"ds-task-1","task_status":"PENDING","submit_time":"2025-01-01 10:00:00.000"}}`
	dsRunning = `{"request_id":"r3","output":{"task_id":"ds-task-1","task_status":"RUNNING","submit_time":"2025-01-01 10:00:00.000","scheduled_time":"2025-01-01 10:00:01.000"}}`
)

func TestDashScopeImage(t *testing.T) {
	e := newEnv(t, providers.ProtocolDashScope, &providers.Route{Pattern: "wanx-v1", Kind: providers.KindImage, UpstreamModel: "wanx2.1-t2i-turbo", Sizes: []string{"1024x1024", "1024x768"}})
	f := &fakeDashScope{}
	f.install(e)
	f.setScript(dsRunning, `{"request_id":"r4","output":{"task_id":"ds-task-1","task_status":"SUCCEEDED","results":[{"url":"https://dashscope-result.oss.example/1.png"},{"code":"DataInspectionFailed","message":"blocked"},{"url":"https://dashscope-result.oss.example/2.png"}]},"usage":{"image_count":2}}`)
	s := e.service(nil)
	ctx := context.Background()

	// No poller runs: the create itself polls until the image is ready.
	tk, aerr := s.Create(ctx, alice, []byte(`{"model":"wanx-v1","prompt":"a lake","negative_prompt":"people","size":"1024x768","n":3,"seed":42,"prompt_extend":true,"watermark":false}`), testMediaBase)
	if aerr != nil {
		t.Fatal(aerr)
	}
	if tk.Status != StatusSucceeded || tk.Output == nil {
		t.Fatalf("create: status %q error %q, want succeeded", tk.Status, tk.Error)
	}
	want := []string{"https://dashscope-result.oss.example/1.png", "https://dashscope-result.oss.example/2.png"}
	if tk.Output.ImageURL != want[0] || len(tk.Output.ImageURLs) != 2 || tk.Output.ImageURLs[1] != want[1] {
		t.Errorf("output %+v, want the DashScope URLs as they are", tk.Output)
	}

	body := e.requests("POST", "/api/v1/services/aigc/text2image/image-synthesis")[0].body
	for i, c := range []struct{ path, want string }{
		{"model", `"wanx2.1-t2i-turbo"`},
		{"input.prompt", `"a lake"`},
		{"input.negative_prompt", `"people"`},
		{"parameters.size", `"1024*768"`},
		{"parameters.n", `3`},
		{"parameters.seed", `42`},
		{"parameters.prompt_extend", `true`},
		{"parameters.watermark", `false`},
	} {
		if got := gjson.GetBytes(body, c.path).Raw; got != c.want {
			t.Errorf("Test %d: upstream %s = %s, want %s (body %s)", i, c.path, got, c.want, body)
		}
	}
	if gjson.GetBytes(body, "prompt").Exists() || gjson.GetBytes(body, "size").Exists() {
		t.Errorf("client fields leaked to the top level: %s", body)
	}
	if got := e.biller.charges(); len(got) != 1 || got[0].Images != 2 {
		t.Errorf("charges = %+v, want 2 delivered images", got)
	}
	if runningCount(t, e) != 0 {
		t.Error("a finished image task stays in the running index")
	}
}

func TestDashScopeImageFailure(t *testing.T) {
	for i, c := range []struct {
		script    string
		wantError string
	}{
		{`{"request_id":"r","output":{"task_id":"ds-task-1","task_status":"FAILED","code":"DataInspectionFailed","message":"Input data may contain inappropriate content."}}`, "ContentPolicyViolation: Input data may contain inappropriate content."},
		{`{"request_id":"r","output":{"task_id":"ds-task-1","task_status":"FAILED","code":"InternalError.Algo","message":"algorithm error"}}`, "UpstreamError: InternalError.Algo: algorithm error"},
		{`{"request_id":"r","output":{"task_id":"ds-task-1","task_status":"SUCCEEDED","results":[{"code":"DataInspectionFailed","message":"Output data may contain inappropriate content."}]}}`, "ContentPolicyViolation: Output data may contain inappropriate content."},
	} {
		e := newEnv(t, providers.ProtocolDashScope, &providers.Route{Pattern: "wanx-v1", Kind: providers.KindImage})
		f := &fakeDashScope{}
		f.install(e)
		f.setScript(dsPending, c.script)
		s := e.service(nil)
		tk, aerr := s.Create(context.Background(), alice, []byte(`{"model":"wanx-v1","prompt":"x"}`), testMediaBase)
		if aerr != nil {
			t.Fatalf("Test %d: %v", i, aerr)
		}
		if tk.Status != StatusFailed || tk.Error != c.wantError {
			t.Errorf("Test %d: status %q error %q, want failed %q", i, tk.Status, tk.Error, c.wantError)
		}
		if len(e.biller.charges()) != 0 {
			t.Errorf("Test %d: failed image billed", i)
		}
	}
}

func TestDashScopeImageTimeout(t *testing.T) {
	e := newEnv(t, providers.ProtocolDashScope, &providers.Route{Pattern: "wanx-v1", Kind: providers.KindImage})
	e.table.Provider("up").Timeout = 300 * time.Millisecond
	f := &fakeDashScope{}
	f.install(e)
	f.setScript(dsRunning)
	s := e.service(nil)
	tk, aerr := s.Create(context.Background(), alice, []byte(`{"model":"wanx-v1","prompt":"x"}`), testMediaBase)
	if aerr != nil {
		t.Fatal(aerr)
	}
	if tk.Status != StatusFailed || tk.Error[:len(errTimeout)] != errTimeout {
		t.Errorf("status %q error %q, want failed with UpstreamTimeout", tk.Status, tk.Error)
	}
}

func TestDashScopeVideo(t *testing.T) {
	for i, c := range []struct {
		final      string
		wantStatus string
		wantError  string
		wantURL    string
		wantSecs   int64
	}{
		{`{"request_id":"r","output":{"task_id":"ds-task-1","task_status":"SUCCEEDED","video_url":"https://dashscope-result.oss.example/v.mp4"},"usage":{"video_duration":5,"video_ratio":"1280*720","video_count":1}}`, StatusSucceeded, "", "https://dashscope-result.oss.example/v.mp4", 5},
		{`{"request_id":"r","output":{"task_id":"ds-task-1","task_status":"SUCCEEDED","video_url":"https://dashscope-result.oss.example/v.mp4"},"usage":{"duration":10}}`, StatusSucceeded, "", "https://dashscope-result.oss.example/v.mp4", 10},
		{`{"request_id":"r","output":{"task_id":"ds-task-1","task_status":"SUCCEEDED","video_url":"https://dashscope-result.oss.example/v.mp4"}}`, StatusSucceeded, "", "https://dashscope-result.oss.example/v.mp4", 8},
		{`{"request_id":"r","output":{"task_id":"ds-task-1","task_status":"FAILED","code":"DataInspectionFailed","message":"Output data may contain inappropriate content."}}`, StatusFailed, "ContentPolicyViolation: Output data may contain inappropriate content.", "", 0},
		{`{"request_id":"r","output":{"task_id":"ds-task-1","task_status":"CANCELED"}}`, StatusFailed, "Canceled: the task was canceled at the provider", "", 0},
		{`{"request_id":"r","output":{"task_id":"ds-task-1","task_status":"UNKNOWN"}}`, StatusFailed, "TaskExpired: the provider no longer knows this task", "", 0},
	} {
		e := newEnv(t, providers.ProtocolDashScope, &providers.Route{Pattern: "wan2.2-t2v-plus", Kind: providers.KindVideo})
		f := &fakeDashScope{}
		f.install(e)
		f.setScript(dsPending, dsRunning, dsRunning, c.final)
		s := e.service(nil)
		e.run(s)
		tk, aerr := s.Create(context.Background(), alice, []byte(`{"model":"wan2.2-t2v-plus","prompt":"a wave","size":"1280x720","duration":8,"prompt_extend":false}`), testMediaBase)
		if aerr != nil {
			t.Fatalf("Test %d: %v", i, aerr)
		}
		if tk.Status != StatusRunning {
			t.Fatalf("Test %d: create status %q, want running", i, tk.Status)
		}
		body := e.requests("POST", "/api/v1/services/aigc/video-generation/video-synthesis")[0].body
		if gjson.GetBytes(body, "parameters.size").String() != "1280*720" || gjson.GetBytes(body, "parameters.duration").Raw != "8" || gjson.GetBytes(body, "parameters.prompt_extend").Raw != "false" {
			t.Errorf("Test %d: upstream body %s", i, body)
		}
		got := waitStatus(t, s, alice, tk.ID, c.wantStatus)
		if got.Error != c.wantError || got.CompletedAt == nil {
			t.Errorf("Test %d: error %q, want %q", i, got.Error, c.wantError)
		}
		if c.wantStatus == StatusSucceeded {
			if got.Output == nil || got.Output.VideoURL != c.wantURL || got.Progress != 100 {
				t.Errorf("Test %d: output %+v progress %d", i, got.Output, got.Progress)
			}
			waitBilled(t, s, tk.ID)
			if ch := e.biller.charges(); len(ch) != 1 || ch[0].VideoSeconds != c.wantSecs {
				t.Errorf("Test %d: charges %+v, want one of %d s", i, ch, c.wantSecs)
			}
			continue
		}
		waitFor(t, "running index to empty", func() bool { return runningCount(t, e) == 0 })
		if len(e.biller.charges()) != 0 {
			t.Errorf("Test %d: failed video billed", i)
		}
	}
}

func TestDashScopeRequestError(t *testing.T) {
	e := newEnv(t, providers.ProtocolDashScope, &providers.Route{Pattern: "wan2.2-t2v-plus", Kind: providers.KindVideo})
	e.mux.HandleFunc("POST /api/v1/services/aigc/video-generation/video-synthesis", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 400, `{"request_id":"r9","code":"InvalidParameter","message":"The size is not match the allowed size."}`)
	})
	s := e.service(nil)
	tk, aerr := s.Create(context.Background(), alice, []byte(`{"model":"wan2.2-t2v-plus","prompt":"x","size":"7x7"}`), testMediaBase)
	if aerr != nil {
		t.Fatal(aerr)
	}
	if tk.Status != StatusFailed || tk.Error != "InvalidParameter: The size is not match the allowed size." {
		t.Errorf("status %q error %q", tk.Status, tk.Error)
	}
	if runningCount(t, e) != 0 {
		t.Error("a failed create stays in the running index")
	}
}

func TestDerivedProgress(t *testing.T) {
	e := newEnv(t, providers.ProtocolDashScope, &providers.Route{Pattern: "wan2.2-t2v-plus", Kind: providers.KindVideo, TypicalDuration: 100 * time.Second})
	f := &fakeDashScope{}
	f.install(e)
	f.setScript(dsRunning)
	clock := fakeclock.New(time.Now())
	s := e.service(func(c *Config) { c.Clock = clock.Now; c.PollInterval = 40 * time.Millisecond })
	e.run(s)
	ctx := context.Background()
	tk, aerr := s.Create(ctx, alice, []byte(`{"model":"wan2.2-t2v-plus","prompt":"x"}`), testMediaBase)
	if aerr != nil {
		t.Fatal(aerr)
	}
	for i, c := range []struct {
		advance time.Duration
		want    int
	}{
		{50 * time.Second, 50},
		{25 * time.Second, 75},
		{500 * time.Second, 99},
	} {
		clock.Advance(c.advance)
		waitFor(t, "progress", func() bool {
			got, _ := s.Get(ctx, alice, tk.ID)
			return got.Progress == c.want
		})
		if got, _ := s.Get(ctx, alice, tk.ID); got.Status != StatusRunning {
			t.Errorf("Test %d: status %q", i, got.Status)
		}
	}
}
