package tasks

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/providers"
)

func TestCreateRejectsDeepBodies(t *testing.T) {
	const tooDeep = "the request body nests deeper than the limit of 128 levels"
	nested := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for i, c := range []struct {
		body     string
		maxDepth int
		status   int
		message  string // "" when the task is created
	}{
		{strings.Repeat("[", 16<<20), 0, 400, tooDeep},
		{strings.Repeat(`{"a":`, 3<<20), 0, 400, tooDeep},
		{`{"model":"dall-e-3","prompt":"x","style":` + strings.Repeat("[", 16<<20-64), 0, 400, tooDeep},
		{`{"model":"dall-e-3","prompt":"x","style":` + nested(128) + `}`, 0, 400, tooDeep},
		{`{"model":"dall-e-3","prompt":"x","style":` + nested(127) + `}`, 0, 200, ""},
		{`{"model":"dall-e-3","prompt":"x","style":[[1]]}`, 2, 400, "the request body nests deeper than the limit of 2 levels"},
		{`{"model":"dall-e-3","prompt":"` + strings.Repeat("[", 1<<20) + `"}`, 0, 200, ""},
		{`{"model":"dall-e-3","prompt":"x"`, 0, 400, "the request body must be a JSON object"},
	} {
		e := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "dall-e-3", Kind: providers.KindImage})
		e.mux.HandleFunc("POST /v1/images/generations", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, `{"created":1,"data":[{"b64_json":"`+pngB64+`"}]}`)
		})
		s := e.service(func(cfg *Config) { cfg.MaxJSONDepth = c.maxDepth })
		tk, aerr := s.Create(context.Background(), alice, []byte(c.body), testMediaBase)
		switch {
		case c.message == "" && aerr != nil:
			t.Errorf("Test %d: refused: %v", i, aerr)
		case c.message == "" && tk.Status != StatusSucceeded:
			t.Errorf("Test %d: status %q error %q", i, tk.Status, tk.Error)
		case c.message == "":
		case aerr == nil:
			t.Errorf("Test %d: created, want %d %q", i, c.status, c.message)
		case aerr.Status != c.status || aerr.Message != c.message:
			t.Errorf("Test %d: got %d %q, want %d %q", i, aerr.Status, aerr.Message, c.status, c.message)
		case e.count(http.MethodPost, "/v1/") != 0:
			t.Errorf("Test %d: a refused body reached the upstream", i)
		}
	}
}

// TestDeepUpstreamAnswers has providers answer with JSON nested far past
// the limit: the answer is not read, and the task fails as for any answer
// the gateway cannot understand.
func TestDeepUpstreamAnswers(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 100_000) + "1" + strings.Repeat("}", 100_000)
	for i, c := range []struct {
		protocol, model, kind, path string
		status                      int
		body, want                  string
	}{
		{providers.ProtocolOpenAI, "dall-e-3", providers.KindImage, "POST /v1/images/generations", 200,
			`{"created":1,"data":[{"url":` + deep + `}]}`,
			"UpstreamError: the provider sent an unexpected answer (nested deeper than the limit of 128 levels)"},
		{providers.ProtocolOpenAI, "dall-e-3", providers.KindImage, "POST /v1/images/generations", 400,
			`{"error":{"message":"bad","code":` + deep + `}}`,
			"InvalidParameter: the provider answered HTTP 400"},
		{providers.ProtocolOpenAI, "sora-2", providers.KindVideo, "POST /v1/videos", 200,
			`{"id":"video_1","status":"queued","x":` + deep + `}`,
			"UpstreamError: the provider sent an unexpected answer (nested deeper than the limit of 128 levels)"},
		{providers.ProtocolDashScope, "wanx-v1", providers.KindImage, "POST /api/v1/services/aigc/text2image/image-synthesis", 200,
			`{"output":{"task_status":"PENDING","task_id":"t1","x":` + strings.Repeat("[", 100_000) + `}}`,
			"UpstreamError: the provider sent an unexpected answer (nested deeper than the limit of 128 levels)"},
	} {
		e := newEnv(t, c.protocol, &providers.Route{Pattern: c.model, Kind: c.kind})
		e.mux.HandleFunc(c.path, func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, c.status, c.body)
		})
		s := e.service(nil)
		tk, aerr := s.Create(context.Background(), alice, []byte(`{"model":"`+c.model+`","prompt":"x"}`), testMediaBase)
		if aerr != nil {
			t.Errorf("Test %d: %v", i, aerr)
			continue
		}
		if tk.Status != StatusFailed || tk.Error != c.want {
			t.Errorf("Test %d: status %q error %q, want failed with %q", i, tk.Status, tk.Error, c.want)
		}
	}
}
