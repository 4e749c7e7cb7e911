package integration

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// BenchmarkRequestLogs measures a chat request through the in-process
// gateway (a 4 KiB prompt; a plain answer and a streamed one) with
// request logs off and on for its key: the difference is logging's cost
// per request (capture, reassembly, redaction and the background store
// write, which shares the two cores).
//
//	unshare -n bash -c 'ip link set lo up && go test -p 1 -run "^$" -bench BenchmarkRequestLogs ./integration/'
func BenchmarkRequestLogs(b *testing.B) {
	up := &upstream{}
	up.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !gjson.GetBytes(body, "stream").Bool() {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, recJSONResponse)
			return
		}
		sseWrite(w, reasoningStream...)
	}))
	b.Cleanup(up.Close)
	startGateway(b, recOptions(up))
	offKey, _ := createKey(b, "bench-off")
	onKey, onID := createKey(b, "bench-on")
	if status := adminJSON(b, http.MethodPatch, "/air/keys/"+onID, `{"log_requests":true}`, nil); status != http.StatusOK {
		b.Fatalf("PATCH: %d", status)
	}
	prompt := strings.Repeat("lorem ipsum ", 4096/12)
	for _, mode := range []struct{ name, body string }{
		{"plain", `{"model":"rec-model","messages":[{"role":"user","content":"` + prompt + `"}]}`},
		{"stream", `{"model":"rec-model","stream":true,"messages":[{"role":"user","content":"` + prompt + `"}]}`},
	} {
		for _, k := range []struct{ name, key string }{{"off", offKey}, {"on", onKey}} {
			b.Run(mode.name+"/"+k.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if status, _, raw := call(b, http.MethodPost, "/v1/chat/completions", k.key, mode.body); status != http.StatusOK {
						b.Fatalf("%d %s", status, raw)
					}
				}
			})
		}
	}
}
