package tasks

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/providers"
)

// TestAnswerBounds checks that an upstream answer beyond its bound fails the
// task with a clear error instead of being read whole.
func TestAnswerBounds(t *testing.T) {
	huge := func(n int) string { return `{"id":"video_1","status":"queued","pad":"` + strings.Repeat("x", n) + `"}` }
	for i, tc := range []struct {
		model, path, body string
		wantOK            bool
	}{
		{"sora-2", "POST /v1/videos", huge(maxJSONBody - 100), true},
		{"sora-2", "POST /v1/videos", huge(maxJSONBody), false},
		// One image may take far more than a status, but not without end.
		{"gpt-image-1", "POST /v1/images/generations", `{"data":[{"b64_json":"` + base64.StdEncoding.EncodeToString(pngBytes) + strings.Repeat("A", 4<<20) + `"}]}`, true},
		{"gpt-image-1", "POST /v1/images/generations", `{"data":[{"b64_json":"` + strings.Repeat("A", maxImageJSONB64+maxJSONBody) + `"}]}`, false},
	} {
		e := newEnv(t, providers.ProtocolOpenAI,
			&providers.Route{Pattern: "gpt-image-1", Kind: providers.KindImage},
			&providers.Route{Pattern: "sora-2", Kind: providers.KindVideo})
		e.mux.HandleFunc(tc.path, func(w http.ResponseWriter, r *http.Request) {
			// Streamed, with no declared length: only the bound stops it.
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.Copy(w, strings.NewReader(tc.body))
		})
		s := e.service(nil)
		tk, aerr := s.Create(context.Background(), alice, []byte(`{"model":"`+tc.model+`","prompt":"x"}`), testMediaBase)
		if aerr != nil {
			t.Fatalf("Test %d: %v", i, aerr)
		}
		tooLarge := tk.Status == StatusFailed && strings.Contains(tk.Error, "exceeds the gateway's limit")
		if tc.wantOK == tooLarge {
			t.Errorf("Test %d: %s answer of %d bytes: status %q, error %q", i, tc.path, len(tc.body), tk.Status, tk.Error)
		}
	}
}
