package tasks

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/providers"
)

// Files a hostile or compromised provider could hand over as images.
var (
	htmlBytes = []byte(`<html><script>fetch("/air/keys").then(r=>r.text()).then(alert)</script></html>`)
	svgBytes  = []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(document.cookie)</script></svg>`)
)

func TestSafeMediaType(t *testing.T) {
	for i, c := range []struct {
		in, want string
		safe     bool
	}{
		{"image/png", "image/png", true},
		{"IMAGE/JPEG; charset=binary", "image/jpeg", true},
		{"image/gif", "image/gif", true},
		{"image/webp", "image/webp", true},
		{"image/avif", "image/avif", true},
		{"video/mp4", "video/mp4", true},
		{"video/webm", "video/webm", true},
		{"video/quicktime", "video/quicktime", true},
		{"image/svg+xml", octetStream, false},
		{"text/html; charset=utf-8", octetStream, false},
		{"text/xml; charset=utf-8", octetStream, false},
		{"application/xhtml+xml", octetStream, false},
		{"image/x-unknown", octetStream, false},
		{"", octetStream, false},
		{"not a type", octetStream, false},
	} {
		got, safe := SafeMediaType(c.in)
		if got != c.want || safe != c.safe {
			t.Errorf("Test %d: SafeMediaType(%q) = %q, %v; want %q, %v", i, c.in, got, safe, c.want, c.safe)
		}
	}
}

// TestHostileMediaFails checks that an image a provider hands over in
// base64 or by URL is stored only as a safe image type, and that anything
// else (HTML, SVG, JSON, a video) fails the task, unbilled, with nothing
// stored, whatever type it declares.
func TestHostileMediaFails(t *testing.T) {
	avifBytes := []byte("\x00\x00\x00\x1cftypavif\x00\x00\x00\x00avifmif1miaf")
	for i, c := range []struct {
		declared string // for a download; "b64" means sent inline
		data     []byte
		want     string // the stored type; "" means the task fails
	}{
		{"image/svg+xml", svgBytes, ""},
		{"text/html", htmlBytes, ""},
		{"image/png", htmlBytes, ""},
		{"", htmlBytes, ""},
		{"application/octet-stream", svgBytes, ""},
		{"application/json", []byte(`{"error":{"message":"quota"}}`), ""},
		{"image/png", []byte(`{"error":{"message":"quota"}}`), ""},
		{"video/mp4", mp4Bytes, ""},
		{"image/png; charset=binary", pngBytes, "image/png"},
		{"application/octet-stream", pngBytes, "image/png"},
		{"image/avif", avifBytes, "image/avif"},
		{"b64", htmlBytes, ""},
		{"b64", svgBytes, ""},
		{"b64", mp4Bytes, ""},
		{"b64", pngBytes, "image/png"},
	} {
		e := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "dall-e-3", Kind: providers.KindImage})
		e.mux.HandleFunc("GET /files/x", func(w http.ResponseWriter, r *http.Request) {
			w.Header()["Content-Type"] = []string{c.declared}
			_, _ = w.Write(c.data)
		})
		e.mux.HandleFunc("POST /v1/images/generations", func(w http.ResponseWriter, r *http.Request) {
			item := `{"url":"` + e.srv.URL + `/files/x"}`
			if c.declared == "b64" {
				item = `{"b64_json":"` + base64.StdEncoding.EncodeToString(c.data) + `"}`
			}
			writeJSON(w, 200, `{"created":1,"data":[`+item+`]}`)
		})
		s := e.service(nil)
		tk, aerr := s.Create(context.Background(), alice, []byte(`{"model":"dall-e-3","prompt":"a cat"}`), testMediaBase)
		if aerr != nil {
			t.Fatal(aerr)
		}
		if c.want == "" {
			if tk.Status != StatusFailed || !strings.Contains(tk.Error, "not an image") {
				t.Errorf("Test %d: task %q (%q), want failed: not an image", i, tk.Status, tk.Error)
			}
			if ch := e.biller.charges(); len(ch) != 0 || countFiles(t, e) != 0 {
				t.Errorf("Test %d: charges %v and %d files stored for a failed task", i, ch, countFiles(t, e))
			}
			continue
		}
		if tk.Status != StatusSucceeded || tk.Output == nil {
			t.Errorf("Test %d: task %q (%q), want succeeded", i, tk.Status, tk.Error)
			continue
		}
		ct, _, err := readMedia(s, mediaID(t, tk.Output.ImageURL))
		if err != nil || ct != c.want {
			t.Errorf("Test %d: stored as %q (%v), want %q", i, ct, err, c.want)
		}
	}
}
