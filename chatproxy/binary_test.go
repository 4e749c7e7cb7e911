package chatproxy

import (
	"bytes"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServeBinaryForwardsAsItArrives sends a large audio answer whose
// upstream waits, after its first 512 KiB, until the client has them: a
// Binary call forwards them before the end (holding at most its pooled
// buffer), and the whole file arrives intact. Held whole up to 1 MiB (as
// a JSON answer is), the client would get nothing before the end and the
// upstream would wait in vain.
func TestServeBinaryForwardsAsItArrives(t *testing.T) {
	const first = 512 << 10
	audio := bytes.Repeat([]byte{0xFF, 0xFB, 0x90, 0xC4}, (first+first/2)/4)
	got := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "audio/mpeg")
		_, _ = w.Write(audio[:first])
		w.(http.Flusher).Flush()
		select {
		case <-got:
		case <-r.Context().Done():
			return
		case <-time.After(20 * time.Second):
			t.Error("the client never got the first part of the audio")
			return
		}
		_, _ = w.Write(audio[first:])
	})
	body := `{"model":"tts","input":"hello","voice":"alloy"}`
	url, results := gateway(t, func() *Call {
		in, e := openai.InspectSpeech([]byte(body), 0)
		if e != nil {
			t.Fatal(e.Message)
		}
		return &Call{Wire: openai.Wire, Provider: provider("openai", 0, up.URL), Path: "/audio/speech", Body: []byte(body),
			Inspected: in, ClientHeader: http.Header{}, RequestID: "req-1", Binary: true}
	})
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "audio/mpeg" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, ct)
	}
	// Most of the first part arrives while the upstream waits: all but
	// the pooled buffer's worth.
	head := make([]byte, first-bufSize)
	if _, err := io.ReadFull(resp.Body, head); err != nil {
		t.Fatal(err)
	}
	close(got)
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(append(head, rest...), audio) {
		t.Fatalf("the audio arrived changed: %d bytes of %d", len(head)+len(rest), len(audio))
	}
	if res := <-results; res.Outcome != OutcomeOK || res.BytesOut != int64(len(audio)) {
		t.Fatalf("result %+v", res)
	}
}
