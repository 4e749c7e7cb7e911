package integration

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// TestMediaRangesAndValidators checks that re-hosted media are served like
// static files: byte ranges, validators and HEAD.
func TestMediaRangesAndValidators(t *testing.T) {
	startGateway(t, tasksOptions())
	key, _ := createKey(t, "ranger")
	status, task, raw := createTask(t, key, `{"model":"mock-image","prompt":"a striped fox","size":"512x512"}`)
	if status != http.StatusAccepted || task.Status != "succeeded" || task.Output == nil {
		t.Fatalf("create: %d %s", status, raw)
	}
	url := task.Output.ImageURL
	status, _, whole := fetchMedia(t, url)
	if status != http.StatusOK || len(whole) <= 1024 {
		t.Fatalf("whole media: %d, %d bytes; want 200 and more than 1024 bytes", status, len(whole))
	}

	status, h, part := callURL(t, http.MethodGet, url, "", "", "Range", "bytes=0-1023")
	if status != http.StatusPartialContent || !bytes.Equal(part, whole[:1024]) {
		t.Fatalf("Range bytes=0-1023: %d, %d bytes; want 206 and the first 1024 bytes", status, len(part))
	}
	if got, want := h.Get("Content-Range"), "bytes 0-1023/"+strconv.Itoa(len(whole)); got != want {
		t.Errorf("Content-Range = %q, want %q", got, want)
	}
	if h.Get("Content-Length") != "1024" {
		t.Errorf("Content-Length of the range = %q, want 1024", h.Get("Content-Length"))
	}

	status, h, body := callURL(t, http.MethodHead, url, "", "")
	etag := h.Get("ETag")
	if status != http.StatusOK || len(body) != 0 || h.Get("Accept-Ranges") != "bytes" || etag == "" {
		t.Fatalf("HEAD: %d, %d bytes, Accept-Ranges %q, ETag %q", status, len(body), h.Get("Accept-Ranges"), etag)
	}
	if h.Get("Content-Length") != strconv.Itoa(len(whole)) || h.Get("Content-Type") != "image/png" {
		t.Errorf("HEAD: Content-Length %q, Content-Type %q", h.Get("Content-Length"), h.Get("Content-Type"))
	}
	if h.Get("Cache-Control") != "private, max-age=3600" || h.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("HEAD: Cache-Control %q, X-Content-Type-Options %q", h.Get("Cache-Control"), h.Get("X-Content-Type-Options"))
	}
	if h.Get("Content-Security-Policy") != mediaCSP || h.Get("Content-Disposition") != "" {
		t.Errorf("HEAD: Content-Security-Policy %q, Content-Disposition %q; want %q and none", h.Get("Content-Security-Policy"), h.Get("Content-Disposition"), mediaCSP)
	}

	status, _, body = callURL(t, http.MethodGet, url, "", "", "If-None-Match", etag)
	if status != http.StatusNotModified || len(body) != 0 {
		t.Fatalf("If-None-Match with the ETag: %d, %d bytes; want 304", status, len(body))
	}
	status, _, body = callURL(t, http.MethodGet, url, "", "", "If-None-Match", `"another"`)
	if status != http.StatusOK || !bytes.Equal(body, whole) {
		t.Fatalf("If-None-Match with another ETag: %d; want 200 and the file", status)
	}

	status, _, body = callURL(t, http.MethodGet, baseURL+"/media/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "", "", "Range", "bytes=0-1023")
	if status != http.StatusNotFound || decodeError(t, body).code() != "media_not_found" {
		t.Fatalf("unknown media with a range: %d %s", status, body)
	}
}

// mediaCSP is the Content-Security-Policy of every /media answer.
const mediaCSP = "default-src 'none'; sandbox"

// TestMediaFromHostileProvider: a provider that hands over HTML and SVG
// with script as images, in base64 and by URL, cannot get them served as
// pages on the gateway's origin (the console's): they are stored and
// served as application/octet-stream attachments, under a sandboxing CSP,
// while its PNG is still served as image/png.
func TestMediaFromHostileProvider(t *testing.T) {
	html := []byte(`<html><script>fetch("/air/keys").then(r=>r.text()).then(alert)</script></html>`)
	svg := []byte(`<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(document.cookie)</script></svg>`)
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR-a-tiny-png")
	mux := http.NewServeMux()
	upstream := httptest.NewServer(mux)
	defer upstream.Close()
	mux.HandleFunc("GET /files/page.svg", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/svg+xml")
		_, _ = w.Write(svg)
	})
	mux.HandleFunc("GET /files/page.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(html)
	})
	mux.HandleFunc("POST /v1/images/generations", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"created":1,"data":[{"b64_json":%q},{"b64_json":%q},{"url":%q},{"url":%q},{"b64_json":%q}]}`,
			base64.StdEncoding.EncodeToString(html), base64.StdEncoding.EncodeToString(svg),
			upstream.URL+"/files/page.svg", upstream.URL+"/files/page.html", base64.StdEncoding.EncodeToString(png))
	})
	startGateway(t, gatewayOptions{
		Providers: fmt.Sprintf(`provider hostile {
			protocol openai
			base_url %s/v1
			api_key hostile-key
		}`, upstream.URL),
		Models: `model evil-image hostile {
			kind image
		}`,
		Prices: `{"currency":"USD","models":{"evil-image":{"image":"0.01"}}}`,
	})
	key, _ := createKey(t, "xss")
	status, _, raw := call(t, http.MethodPost, "/v1/images/generations", key, `{"model":"evil-image","prompt":"x"}`)
	if status != http.StatusOK {
		t.Fatalf("images: %d %s", status, raw)
	}
	var out struct{ Data []struct{ URL string } }
	if err := json.Unmarshal(raw, &out); err != nil || len(out.Data) != 5 {
		t.Fatalf("images: %v %s, want 5 images", err, raw)
	}
	for i, want := range []struct{ ctype, disposition string }{
		{"application/octet-stream", "attachment"}, // HTML in base64
		{"application/octet-stream", "attachment"}, // SVG in base64
		{"application/octet-stream", "attachment"}, // SVG declared image/svg+xml
		{"application/octet-stream", "attachment"}, // HTML declared text/html
		{"image/png", ""},
	} {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			status, h, _ := callURL(t, method, out.Data[i].URL, "", "")
			if status != http.StatusOK || h.Get("Content-Type") != want.ctype || h.Get("Content-Disposition") != want.disposition ||
				h.Get("Content-Security-Policy") != mediaCSP || h.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("Test %d: %s: %d, Content-Type %q, Content-Disposition %q, CSP %q, nosniff %q; want %s, %q and the CSP",
					i, method, status, h.Get("Content-Type"), h.Get("Content-Disposition"), h.Get("Content-Security-Policy"),
					h.Get("X-Content-Type-Options"), want.ctype, want.disposition)
			}
		}
	}
}
