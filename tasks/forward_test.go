package tasks

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/providers"
)

// TestForwardBody: the upstream gets the client's members untouched, in
// order, with the documented edits only.
func TestForwardBody(t *testing.T) {
	video := forwardEdits{model: "sora-2", drop: membersOf(memberNegativePrompt, memberSeed, memberN), seconds: 8}
	image := forwardEdits{model: "gpt-image-1", drop: membersOf(memberNegativePrompt, memberSeed), defaultSize: "1024x1024"}
	for i, tc := range []struct {
		body string
		e    forwardEdits
		want string
	}{
		{`{"model":"my-video","prompt":"a wave","seconds":8,"size":"1280x720","negative_prompt":"x","seed":3}`, video,
			`{"model":"sora-2","prompt":"a wave","seconds":"8","size":"1280x720"}`},
		// Members the gateway does not know pass byte for byte, nested
		// values and spacing inside them included.
		{`{ "prompt" : "a \"quoted\" wave\n", "extra": {"a": [1, 2, {"b": null}]}, "model": "m", "seconds": "8" }`, video,
			`{"prompt" : "a \"quoted\" wave\n", "extra": {"a": [1, 2, {"b": null}]},"model":"sora-2","seconds":"8"}`},
		// The duration billed is sent as seconds, whichever name the
		// client gave it.
		{`{"model":"v","prompt":"p","duration":8,"x":1}`, video, `{"model":"sora-2","prompt":"p","seconds":"8","x":1}`},
		{`{"model":"v","prompt":"p","duration":"8","seconds":8}`, video, `{"model":"sora-2","prompt":"p","seconds":"8"}`},
		// A missing model is added; an escaped key is still the model.
		{`{"prompt":"p"}`, video, `{"prompt":"p","model":"sora-2","seconds":"8"}`},
		{`{"mod\u0065l":"m","prompt":"p","seconds":8}`, video, `{"model":"sora-2","prompt":"p","seconds":"8"}`},
		// Duplicates of edited members leave one.
		{`{"model":"a","n":1,"model":"b","n":2,"prompt":"p","seconds":8}`, video, `{"model":"sora-2","prompt":"p","seconds":"8"}`},
		// Images: size added when missing, kept when given; seconds is
		// not theirs to quote.
		{`{"model":"img","prompt":"p","n":2}`, image, `{"model":"gpt-image-1","prompt":"p","n":2,"size":"1024x1024"}`},
		{`{"model":"img","prompt":"p","size":"512x512","seconds":3}`, image, `{"model":"gpt-image-1","prompt":"p","size":"512x512","seconds":3}`},
		{`{}`, image, `{"model":"gpt-image-1","size":"1024x1024"}`},
	} {
		ub, err := forwardBody([]byte(tc.body), 128, tc.e)
		if err != nil {
			t.Errorf("Test %d: %v", i, err)
			continue
		}
		got := ub.Bytes()
		if int64(len(got)) != ub.n {
			t.Errorf("Test %d: length %d, but %d bytes", i, ub.n, len(got))
		}
		if string(got) != tc.want {
			t.Errorf("Test %d:\n got %s\nwant %s", i, got, tc.want)
		}
		if !json.Valid(got) {
			t.Errorf("Test %d: invalid JSON %s", i, got)
		}
	}
	for i, bad := range []string{`[1]`, `"x"`, `{"a":`, `{"a":1}}`} {
		if got, err := forwardBody([]byte(bad), 128, video); err == nil {
			t.Errorf("bad %d: %s gave %s, want an error", i, bad, got.Bytes())
		}
	}
	deep := `{"a":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`
	if _, err := forwardBody([]byte(deep), 128, video); err == nil {
		t.Error("a body deeper than the limit was forwarded")
	}
}

// TestForwardBodyNoCopy: a large body is forwarded without a copy: what
// forwardBody allocates does not grow with the body.
func TestForwardBodyNoCopy(t *testing.T) {
	e := forwardEdits{model: "sora-2", drop: membersOf(memberNegativePrompt, memberSeed, memberN), seconds: 8}
	body := []byte(`{"model":"m","prompt":"` + strings.Repeat("a wave, ", 128<<10) + `","seconds":8,"size":"1280x720","seed":1}`)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const calls = 10
	for range calls {
		if _, err := forwardBody(body, 128, e); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / calls; per > 4<<10 {
		t.Errorf("forwarding a %d KiB body allocated %d bytes per call, want a few hundred", len(body)>>10, per)
	}
}

// countPin counts the holders of a body.
type countPin struct{ n atomic.Int32 }

func (p *countPin) Pin()   { p.n.Add(1) }
func (p *countPin) Unpin() { p.n.Add(-1) }

// TestExchangePinsBody: the upstream receives the edited body whole, with
// its length, and every pin the upstream request took is let go once the
// transport is done with it.
func TestExchangePinsBody(t *testing.T) {
	var got []byte
	var length int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		length = r.ContentLength
		w.Write([]byte(`{"id":"v1","status":"queued"}`))
	}))
	defer srv.Close()
	pin := &countPin{}
	body, err := forwardBody([]byte(`{"model":"m","prompt":"a wave","seconds":8,"seed":3}`), 128,
		forwardEdits{model: "sora-2", drop: membersOf(memberSeed), seconds: 8})
	if err != nil {
		t.Fatal(err)
	}
	body.pin = pin
	c := &call{client: srv.Client(), p: &providers.Provider{Protocol: providers.ProtocolOpenAI}, attempt: providers.Attempt{BaseURL: srv.URL}}
	status, _, _, err := exchange(context.Background(), c, http.MethodPost, "/videos", nil, body)
	if err != nil || status != http.StatusOK {
		t.Fatalf("exchange: %d, %v", status, err)
	}
	const want = `{"model":"sora-2","prompt":"a wave","seconds":"8"}`
	if string(got) != want || length != int64(len(want)) {
		t.Errorf("upstream got %q (Content-Length %d), want %q (%d)", got, length, want, len(want))
	}
	// The transport closes the body right after writing it, maybe just
	// after the answer came back.
	for deadline := time.Now().Add(5 * time.Second); pin.n.Load() != 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if n := pin.n.Load(); n != 0 {
		t.Errorf("%d pins left on the body after the exchange", n)
	}
}

// BenchmarkForwardBody forwards a video request with a 200 KiB prompt:
// what it allocates does not grow with the body.
func BenchmarkForwardBody(b *testing.B) {
	e := forwardEdits{model: "sora-2", drop: membersOf(memberNegativePrompt, memberSeed, memberN), seconds: 8}
	body := []byte(`{"model":"m","prompt":"` + strings.Repeat("a wave, ", 25<<10) + `","seconds":8,"size":"1280x720","seed":1}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := forwardBody(body, 128, e); err != nil {
			b.Fatal(err)
		}
	}
}
