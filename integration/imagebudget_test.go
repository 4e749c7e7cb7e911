package integration

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestImageAnswersOverBodyBudget checks that an OpenAI Images answer is
// held within max_buffered_bodies: one that does not fit fails its task,
// and the budget is given back for the next create.
func TestImageAnswersOverBodyBudget(t *testing.T) {
	big := make([]byte, 3<<20)
	_, _ = rand.Read(big)
	small := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR-a-tiny-png")
	var answers atomic.Int32
	mux := http.NewServeMux()
	upstream := httptest.NewServer(mux)
	defer upstream.Close()
	mux.HandleFunc("POST /v1/images/generations", func(w http.ResponseWriter, r *http.Request) {
		img := small
		if answers.Add(1) == 1 {
			img = big
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"created":1,"data":[{"b64_json":%q}]}`, base64.StdEncoding.EncodeToString(img))
	})
	startGateway(t, gatewayOptions{
		Extra: "max_request_body 1MiB\n\t\tmax_buffered_bodies 2MiB",
		Providers: fmt.Sprintf(`provider bigimages {
			protocol openai
			base_url %s/v1
			api_key big-key
		}`, upstream.URL),
		Models: `model big-image bigimages {
			kind image
		}`,
		Prices: `{"currency":"USD","models":{"big-image":{"image":"0.01"}}}`,
	})
	key, _ := createKey(t, "bigpainter")
	status, task, raw := createTask(t, key, `{"model":"big-image","prompt":"noise"}`)
	if status != http.StatusAccepted || task.Status != "failed" || !strings.Contains(task.Error, "max_buffered_bodies") {
		t.Fatalf("create with a 4 MiB answer: %d %s, want a failed task naming max_buffered_bodies", status, raw)
	}
	status, task, raw = createTask(t, key, `{"model":"big-image","prompt":"a dot"}`)
	if status != http.StatusAccepted || task.Status != "succeeded" || task.Output == nil {
		t.Fatalf("create with a small answer after it: %d %s, want it succeeded", status, raw)
	}
}
