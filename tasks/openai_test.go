package tasks

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/store/badger"
)

// mediaID returns the id at the end of a re-hosted URL, failing if the URL
// is not under the test media base.
func mediaID(t *testing.T, u string) string {
	t.Helper()
	if !strings.HasPrefix(u, testMediaBase+"/") {
		t.Fatalf("output URL %q is not re-hosted under %s", u, testMediaBase)
	}
	return strings.TrimPrefix(u, testMediaBase+"/")
}

func TestOpenAIImageURL(t *testing.T) {
	e := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "dall-e-3", Kind: providers.KindImage, UpstreamModel: "dall-e-3-2024"})
	e.mux.HandleFunc("POST /v1/images/generations", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, `{"created":1,"data":[{"url":"`+e.srv.URL+`/files/img-1","revised_prompt":"a cat"}]}`)
	})
	e.mux.HandleFunc("GET /files/img-1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/webp")
		_, _ = w.Write(webpBytes)
	})
	s := e.service(nil)
	ctx := context.Background()

	tk, aerr := s.Create(ctx, alice, []byte(`{"model":"dall-e-3","prompt":"a cat","negative_prompt":"dogs","quality":"hd","style":{"x":[1,2]}}`), testMediaBase)
	if aerr != nil {
		t.Fatal(aerr)
	}
	if tk.Status != StatusSucceeded || tk.Output == nil {
		t.Fatalf("create: status %q error %q, want succeeded with output", tk.Status, tk.Error)
	}
	ct, data, err := readMedia(s, mediaID(t, tk.Output.ImageURL))
	if err != nil || ct != "image/webp" || !bytes.Equal(data, webpBytes) {
		t.Fatalf("media: %q %q %v, want the downloaded image/webp bytes", ct, data, err)
	}

	sent := e.requests("POST", "/v1/images/generations")
	if len(sent) != 1 {
		t.Fatalf("upstream got %d image requests, want 1", len(sent))
	}
	body := sent[0].body
	for _, c := range []struct{ path, want string }{
		{"model", `"dall-e-3-2024"`},
		{"prompt", `"a cat"`},
		{"size", `"1024x1024"`},
		{"quality", `"hd"`},
		{"style", `{"x":[1,2]}`},
	} {
		if got := gjson.GetBytes(body, c.path).Raw; got != c.want {
			t.Errorf("upstream body %s = %s, want %s (body %s)", c.path, got, c.want, body)
		}
	}
	if gjson.GetBytes(body, "negative_prompt").Exists() {
		t.Errorf("negative_prompt forwarded to OpenAI, which rejects it: %s", body)
	}
	if got := sent[0].header.Get("Authorization"); got != "Bearer sk-upstream-1" {
		t.Errorf("Authorization = %q", got)
	}

	// The create answer is the contract's create view, with the result.
	v, _ := json.Marshal(tk.CreateView())
	for _, f := range []string{"id", "object", "status", "model", "type", "created_at", "output.image_url"} {
		if !gjson.GetBytes(v, f).Exists() {
			t.Errorf("create view lacks %s: %s", f, v)
		}
	}
	if gjson.GetBytes(v, "progress").Exists() || gjson.GetBytes(v, "user").Exists() {
		t.Errorf("create view has extra fields: %s", v)
	}
	if got := gjson.GetBytes(v, "model").String(); got != "dall-e-3" {
		t.Errorf("view model = %q, want the client's model id", got)
	}
	if got := e.biller.charges(); len(got) != 1 || got[0].Images != 1 || got[0].TaskID != tk.ID || got[0].User != "alice" || got[0].KeyID != "key_a" {
		t.Errorf("charges = %+v, want one of 1 image for alice", got)
	}
}

func TestOpenAIImageBase64(t *testing.T) {
	e := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "gpt-image-1", Kind: providers.KindImage})
	b64 := base64.StdEncoding.EncodeToString(pngBytes)
	e.mux.HandleFunc("POST /v1/images/generations", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, `{"created":1,"data":[{"b64_json":"`+b64+`"},{"b64_json":"`+b64+`"}],"usage":{"input_tokens":10,"output_tokens":20,"total_tokens":30}}`)
	})
	s := e.service(nil)
	ctx := context.Background()
	tk, aerr := s.Create(ctx, alice, []byte(`{"model":"gpt-image-1","prompt":"two cats","n":2,"size":"1536x1024"}`), testMediaBase)
	if aerr != nil {
		t.Fatal(aerr)
	}
	if tk.Status != StatusSucceeded || len(tk.Output.ImageURLs) != 2 || tk.Output.ImageURL != tk.Output.ImageURLs[0] {
		t.Fatalf("create = %+v output %+v, want 2 images", tk, tk.Output)
	}
	if tk.Output.ImageURLs[0] == tk.Output.ImageURLs[1] {
		t.Fatal("two images share a URL")
	}
	for _, u := range tk.Output.ImageURLs {
		ct, data, err := readMedia(s, mediaID(t, u))
		if err != nil || ct != "image/png" || !bytes.Equal(data, pngBytes) {
			t.Fatalf("media %s: %q %q %v, want the decoded PNG", u, ct, data, err)
		}
	}
	if e.count("GET", "/") != 0 {
		t.Error("base64 images were downloaded")
	}
	if got := e.biller.charges(); len(got) != 1 || got[0].Images != 2 || got[0].Kind != "image" {
		t.Errorf("charges = %+v, want one of 2 images", got)
	}
}

func TestOpenAIImageErrors(t *testing.T) {
	for i, c := range []struct {
		status    int
		body      string
		wantError string
	}{
		{400, `{"error":{"message":"Your request was rejected by the safety system.","type":"invalid_request_error","code":"content_policy_violation"}}`, "ContentPolicyViolation: Your request was rejected by the safety system."},
		{400, `{"error":{"message":"Request was blocked.","type":"image_generation_user_error","code":"moderation_blocked"}}`, "ContentPolicyViolation: Request was blocked."},
		{400, `{"error":{"message":"Invalid size '7x7'.","type":"invalid_request_error","param":"size","code":null}}`, "InvalidParameter: Invalid size '7x7'."},
		{500, `{"error":{"message":"The server had an error.","type":"server_error","code":null}}`, "UpstreamError: server_error: The server had an error."},
		{401, `{"error":{"message":"Incorrect API key provided: sk-upst***","type":"invalid_request_error","code":"invalid_api_key"}}`, "UpstreamError: the provider rejected the gateway's credentials"},
		{429, `{"error":{"message":"Rate limit reached.","type":"requests","code":"rate_limit_exceeded"}}`, "RateLimited: Rate limit reached."},
		// A 403 refuses the request: its words reach the client, scrubbed.
		{403, `{"error":{"message":"Project proj_AbCdEf123456 in org-GhIjKl789012 cannot use dall-e-3","type":"invalid_request_error","code":"model_not_found"}}`,
			"UpstreamError: model_not_found: Project [redacted] in [redacted] cannot use dall-e-3"},
	} {
		e := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "dall-e-3", Kind: providers.KindImage})
		e.mux.HandleFunc("POST /v1/images/generations", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, c.status, c.body)
		})
		s := e.service(nil)
		tk, aerr := s.Create(context.Background(), alice, []byte(`{"model":"dall-e-3","prompt":"x"}`), testMediaBase)
		if aerr != nil {
			t.Fatalf("Test %d: %v", i, aerr)
		}
		if tk.Status != StatusFailed || tk.Error != c.wantError || tk.CompletedAt == nil || tk.Output != nil {
			t.Errorf("Test %d: status %q error %q, want failed with %q", i, tk.Status, tk.Error, c.wantError)
		}
		if len(e.biller.charges()) != 0 {
			t.Errorf("Test %d: a failed task was billed", i)
		}
		if got, _ := s.Get(context.Background(), alice, tk.ID); got == nil || got.Error != c.wantError {
			t.Errorf("Test %d: stored task %+v", i, got)
		}
	}
}

// fakeOpenAIVideo is an OpenAI Videos upstream whose job state the test
// sets.
type fakeOpenAIVideo struct {
	mu   sync.Mutex
	body string // the video object returned by GET /videos/{id}
}

func (f *fakeOpenAIVideo) set(body string) {
	f.mu.Lock()
	f.body = body
	f.mu.Unlock()
}

func (f *fakeOpenAIVideo) install(e *env) {
	f.set(`{"id":"video_123","object":"video","status":"queued","progress":0,"seconds":"8"}`)
	e.mux.HandleFunc("POST /v1/videos", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, `{"id":"video_123","object":"video","model":"sora-2","status":"queued","progress":0,"created_at":1712697600,"seconds":"8","size":"1280x720"}`)
	})
	e.mux.HandleFunc("GET /v1/videos/video_123", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		writeJSON(w, 200, f.body)
	})
	e.mux.HandleFunc("GET /v1/videos/video_123/content", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sk-upstream-1" {
			writeJSON(w, 401, `{"error":{"message":"no key"}}`)
			return
		}
		w.Header().Set("Content-Type", "video/mp4")
		_, _ = w.Write(mp4Bytes)
	})
}

func TestOpenAIVideo(t *testing.T) {
	e := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "sora-2", Kind: providers.KindVideo})
	f := &fakeOpenAIVideo{}
	f.install(e)
	s := e.service(nil)
	e.run(s)
	ctx := context.Background()

	tk, aerr := s.Create(ctx, alice, []byte(`{"model":"sora-2","prompt":"a wave","seconds":8,"size":"1280x720","negative_prompt":"x"}`), testMediaBase)
	if aerr != nil {
		t.Fatal(aerr)
	}
	if tk.Status != StatusRunning || tk.Output != nil {
		t.Fatalf("create status %q, want running", tk.Status)
	}
	body := e.requests("POST", "/v1/videos")[0].body
	if got := gjson.GetBytes(body, "seconds").Raw; got != `"8"` {
		t.Errorf("seconds sent as %s, want the string \"8\" the Videos API takes", got)
	}
	if gjson.GetBytes(body, "size").String() != "1280x720" || gjson.GetBytes(body, "model").String() != "sora-2" || gjson.GetBytes(body, "negative_prompt").Exists() {
		t.Errorf("upstream body %s", body)
	}

	f.set(`{"id":"video_123","object":"video","status":"in_progress","progress":40,"seconds":"8"}`)
	waitFor(t, "progress 40", func() bool {
		got, _ := s.Get(ctx, alice, tk.ID)
		return got.Progress == 40 && got.Status == StatusRunning
	})
	if e.count("GET", "/v1/videos/video_123/content") != 0 {
		t.Fatal("content downloaded before completion")
	}

	f.set(`{"id":"video_123","object":"video","status":"completed","progress":100,"seconds":"8","completed_at":1712698000}`)
	done := waitStatus(t, s, alice, tk.ID, StatusSucceeded)
	if done.Progress != 100 || done.CompletedAt == nil || done.Output == nil || done.Output.ImageURL != "" {
		t.Fatalf("done = %+v", done)
	}
	ct, data, err := readMedia(s, mediaID(t, done.Output.VideoURL))
	if err != nil || ct != "video/mp4" || !bytes.Equal(data, mp4Bytes) {
		t.Fatalf("media: %q %v, want the re-hosted mp4", ct, err)
	}
	waitBilled(t, s, tk.ID)
	if got := e.biller.charges(); len(got) != 1 || got[0].VideoSeconds != 8 || got[0].Kind != "video" || got[0].Images != 0 {
		t.Errorf("charges = %+v, want one of 8 video seconds", got)
	}

	v, _ := json.Marshal(done.QueryView())
	if gjson.GetBytes(v, "completed_at").String() == "" || gjson.GetBytes(v, "output.video_url").String() == "" || gjson.GetBytes(v, "progress").Int() != 100 {
		t.Errorf("query view %s", v)
	}
}

func TestOpenAIVideoFailure(t *testing.T) {
	for i, c := range []struct {
		video     string
		wantError string
	}{
		{`{"id":"video_123","object":"video","status":"failed","progress":0,"error":{"code":"moderation_blocked","message":"Your prompt was blocked."}}`, "ContentPolicyViolation: Your prompt was blocked."},
		{`{"id":"video_123","object":"video","status":"failed","progress":30,"error":{"code":"internal_error","message":"Generation failed."}}`, "UpstreamError: internal_error: Generation failed."},
		{`{"id":"video_123","object":"video","status":"failed","error":{"code":"invalid_prompt","message":"Prompt too long."}}`, "InvalidParameter: Prompt too long."},
	} {
		e := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "sora-2", Kind: providers.KindVideo})
		f := &fakeOpenAIVideo{}
		f.install(e)
		f.set(c.video)
		s := e.service(nil)
		e.run(s)
		tk, aerr := s.Create(context.Background(), alice, []byte(`{"model":"sora-2","prompt":"a wave"}`), testMediaBase)
		if aerr != nil {
			t.Fatalf("Test %d: %v", i, aerr)
		}
		got := waitStatus(t, s, alice, tk.ID, StatusFailed)
		if got.Error != c.wantError || got.CompletedAt == nil || got.Output != nil {
			t.Errorf("Test %d: error %q, want %q", i, got.Error, c.wantError)
		}
		waitFor(t, "running index to empty", func() bool { return runningCount(t, e) == 0 })
		if n := len(e.biller.charges()); n != 0 {
			t.Errorf("Test %d: failed task billed %d times", i, n)
		}
	}
}

// runningCount counts the entries of the running index.
func runningCount(t *testing.T, e *env) int {
	t.Helper()
	n := 0
	err := e.db.Scan(context.Background(), []byte("tr/"), badger.ScanOptions{KeysOnly: true}, func(k, v []byte) error {
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSubmitFailoverAndPollSameAccount(t *testing.T) {
	e := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "sora-2", Kind: providers.KindVideo})
	f := &fakeOpenAIVideo{}
	f.install(e)
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	p := e.table.Provider("up")
	p.BaseURLs = []string{dead.URL + "/v1", e.srv.URL + "/v1"}
	p.APIKeys = []string{"sk-dead", "sk-upstream-1"}
	p.Retries = 1
	s := e.service(nil)
	e.run(s)
	tk, aerr := s.Create(context.Background(), alice, []byte(`{"model":"sora-2","prompt":"x"}`), testMediaBase)
	if aerr != nil || tk.Status != StatusRunning {
		t.Fatalf("create: %v %+v", aerr, tk)
	}
	f.set(`{"id":"video_123","object":"video","status":"completed","progress":100}`)
	waitStatus(t, s, alice, tk.ID, StatusSucceeded)
	for _, r := range e.requests("GET", "/v1/videos/") {
		if r.header.Get("Authorization") != "Bearer sk-upstream-1" {
			t.Errorf("%s polled with %q, not the key the job was created with", r.path, r.header.Get("Authorization"))
		}
	}
}
