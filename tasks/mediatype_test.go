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

// TestHostileMediaStoredAsOctets checks that images a provider hands over
// in base64 or by URL are stored as a safe image type or as
// application/octet-stream, never as HTML or SVG, whatever it declares.
func TestHostileMediaStoredAsOctets(t *testing.T) {
	e := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "dall-e-3", Kind: providers.KindImage})
	files := []struct {
		declared string
		data     []byte
		want     string
	}{
		{"image/svg+xml", svgBytes, octetStream},
		{"text/html", htmlBytes, octetStream},
		{"image/png", htmlBytes, "image/png"}, // served as an image, the browser shows no page
		{"", htmlBytes, octetStream},
		{"application/octet-stream", svgBytes, octetStream},
		{"image/png; charset=binary", pngBytes, "image/png"},
	}
	b64 := []struct {
		data []byte
		want string
	}{
		{htmlBytes, octetStream},
		{svgBytes, octetStream},
		{pngBytes, "image/png"},
		{mp4Bytes, "video/mp4"},
	}
	for i, f := range files {
		e.mux.HandleFunc("GET /files/"+string(rune('a'+i)), func(w http.ResponseWriter, r *http.Request) {
			w.Header()["Content-Type"] = []string{f.declared}
			_, _ = w.Write(f.data)
		})
	}
	e.mux.HandleFunc("POST /v1/images/generations", func(w http.ResponseWriter, r *http.Request) {
		var data []string
		for i := range files {
			data = append(data, `{"url":"`+e.srv.URL+"/files/"+string(rune('a'+i))+`"}`)
		}
		for _, f := range b64 {
			data = append(data, `{"b64_json":"`+base64.StdEncoding.EncodeToString(f.data)+`"}`)
		}
		writeJSON(w, 200, `{"created":1,"data":[`+strings.Join(data, ",")+`]}`)
	})
	s := e.service(nil)
	tk, aerr := s.Create(context.Background(), alice, []byte(`{"model":"dall-e-3","prompt":"a cat"}`), testMediaBase)
	if aerr != nil {
		t.Fatal(aerr)
	}
	if tk.Status != StatusSucceeded || tk.Output == nil || len(tk.Output.ImageURLs) != len(files)+len(b64) {
		t.Fatalf("create: %+v, want %d images", tk, len(files)+len(b64))
	}
	for i, u := range tk.Output.ImageURLs {
		var want string
		if i < len(files) {
			want = files[i].want
		} else {
			want = b64[i-len(files)].want
		}
		ct, _, err := readMedia(s, mediaID(t, u))
		if err != nil || ct != want {
			t.Errorf("Test %d: stored as %q (%v), want %q", i, ct, err, want)
		}
	}
}
