package tasks

import (
	"context"
	"encoding/base64"
	"net/http"
	"testing"

	"github.com/caddy-air/caddy-air/providers"
)

// TestCallCredentials: every request of a task to its provider (the
// create, the polls, the download of an OpenAI video's content) carries
// the credentials the provider's dialect sets (upstream.NewRequest): a
// bearer key for openai and dashscope, whatever a provider's endpoint
// sets when it has one.
func TestCallCredentials(t *testing.T) {
	bearer := http.Header{"Authorization": {"Bearer sk-upstream-1"}}
	twoKeys := http.Header{"Authorization": {"Bearer sk-upstream-1"}, "Api-Key": {"sk-upstream-1"}}
	for i, c := range []struct {
		protocol, model, kind string
		endpoint              providers.Endpoint
		body                  string
		want                  http.Header
		paths                 []string // the requests the task makes, each checked
	}{
		{providers.ProtocolOpenAI, "sora-2", providers.KindVideo, nil, `{"model":"sora-2","prompt":"a wave","seconds":8}`, bearer,
			[]string{"POST /v1/videos", "GET /v1/videos/video_123", "GET /v1/videos/video_123/content"}},
		{providers.ProtocolOpenAI, "sora-2", providers.KindVideo, twoKeyHeaders{}, `{"model":"sora-2","prompt":"a wave","seconds":8}`, twoKeys,
			[]string{"POST /v1/videos", "GET /v1/videos/video_123", "GET /v1/videos/video_123/content"}},
		{providers.ProtocolOpenAI, "dall-e-3", providers.KindImage, nil, `{"model":"dall-e-3","prompt":"a cat"}`, bearer,
			[]string{"POST /v1/images/generations"}},
		{providers.ProtocolOpenAI, "dall-e-3", providers.KindImage, twoKeyHeaders{}, `{"model":"dall-e-3","prompt":"a cat"}`, twoKeys,
			[]string{"POST /v1/images/generations"}},
		{providers.ProtocolDashScope, "wan2.2-t2v-plus", providers.KindVideo, nil, `{"model":"wan2.2-t2v-plus","prompt":"a wave","duration":5}`, bearer,
			[]string{"POST /api/v1/services/aigc/video-generation/video-synthesis", "GET /api/v1/tasks/ds-task-1"}},
		{providers.ProtocolDashScope, "wanx2.1-t2i-turbo", providers.KindImage, twoKeyHeaders{}, `{"model":"wanx2.1-t2i-turbo","prompt":"a cat"}`, twoKeys,
			[]string{"POST /api/v1/services/aigc/text2image/image-synthesis", "GET /api/v1/tasks/ds-task-1"}},
	} {
		e := newEnv(t, c.protocol, &providers.Route{Pattern: c.model, Kind: c.kind})
		e.table.Provider("up").Endpoint = c.endpoint
		switch {
		case c.protocol == providers.ProtocolDashScope:
			f := &fakeDashScope{}
			f.install(e)
			f.setScript(`{"output":{"task_id":"ds-task-1","task_status":"SUCCEEDED","video_url":"https://oss.example/v.mp4",` +
				`"results":[{"url":"https://oss.example/i.png"}]},"usage":{"video_duration":5}}`)
		case c.kind == providers.KindVideo:
			f := &fakeOpenAIVideo{}
			f.install(e)
			f.set(`{"id":"video_123","object":"video","status":"completed","progress":100,"seconds":"8"}`)
		default:
			e.mux.HandleFunc("POST /v1/images/generations", func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, 200, `{"created":1,"data":[{"b64_json":"`+base64.StdEncoding.EncodeToString(pngBytes)+`"}]}`)
			})
		}
		s := e.service(nil)
		e.run(s)
		tk, aerr := s.Create(context.Background(), alice, []byte(c.body), testMediaBase)
		if aerr != nil {
			t.Fatalf("Test %d: %v", i, aerr)
		}
		waitStatus(t, s, alice, tk.ID, StatusSucceeded)
		e.mu.Lock()
		seen := map[string]bool{}
		for _, r := range e.reqs {
			seen[r.method+" "+r.path] = true
			for k := range c.want {
				if got := r.header.Values(k); len(got) != 1 || got[0] != c.want.Get(k) {
					t.Errorf("Test %d: %s %s carried %s %q, want %q", i, r.method, r.path, k, got, c.want.Get(k))
				}
			}
		}
		e.mu.Unlock()
		for _, p := range c.paths {
			if !seen[p] {
				t.Errorf("Test %d: no %s among the provider's requests", i, p)
			}
		}
	}
}
