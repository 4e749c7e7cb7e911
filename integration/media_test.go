package integration

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"
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
// with script, or JSON, as images, in base64 and by URL, cannot get them
// served on the gateway's origin (the console's): each such image request
// fails with 502, unbilled, while its PNG is served as image/png under a
// sandboxing CSP.
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
	mux.HandleFunc("GET /files/error.png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write([]byte(`{"error":{"message":"quota exceeded"}}`))
	})
	answers := map[string]string{
		"html-b64": fmt.Sprintf(`{"b64_json":%q}`, base64.StdEncoding.EncodeToString(html)),
		"svg-b64":  fmt.Sprintf(`{"b64_json":%q}`, base64.StdEncoding.EncodeToString(svg)),
		"svg-url":  fmt.Sprintf(`{"url":%q}`, upstream.URL+"/files/page.svg"),
		"html-url": fmt.Sprintf(`{"url":%q}`, upstream.URL+"/files/page.html"),
		"json-url": fmt.Sprintf(`{"url":%q}`, upstream.URL+"/files/error.png"),
		"png-b64":  fmt.Sprintf(`{"b64_json":%q}`, base64.StdEncoding.EncodeToString(png)),
	}
	mux.HandleFunc("POST /v1/images/generations", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Prompt string }
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"created":1,"data":[%s]}`, answers[req.Prompt])
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
	for _, prompt := range []string{"html-b64", "svg-b64", "svg-url", "html-url", "json-url"} {
		status, _, raw := call(t, http.MethodPost, "/v1/images/generations", key, `{"model":"evil-image","prompt":"`+prompt+`"}`)
		if status != http.StatusBadGateway || !strings.Contains(string(raw), "not an image") {
			t.Errorf("%s: %d %s, want 502: not an image", prompt, status, raw)
		}
	}
	status, _, raw := call(t, http.MethodPost, "/v1/images/generations", key, `{"model":"evil-image","prompt":"png-b64"}`)
	var out struct {
		Data []struct {
			B64JSON string `json:"b64_json"`
		}
	}
	if err := json.Unmarshal(raw, &out); status != http.StatusOK || err != nil || len(out.Data) != 1 || out.Data[0].B64JSON == "" {
		t.Fatalf("images: %d %v %s, want 1 image, in base64 as the provider answered", status, err, raw)
	}
	// The image is re-hosted all the same: the task's link.
	_, _, raw = call(t, http.MethodGet, "/v1/tasks?limit=1", key, "")
	status, _, raw = call(t, http.MethodGet, "/v1/tasks/"+gjson.GetBytes(raw, "data.0.id").Str, key, "")
	link := gjson.GetBytes(raw, "output.image_url").Str
	if status != http.StatusOK || link == "" {
		t.Fatalf("the task: %d %s", status, raw)
	}
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		status, h, _ := callURL(t, method, link, "", "")
		if status != http.StatusOK || h.Get("Content-Type") != "image/png" || h.Get("Content-Disposition") != "" ||
			h.Get("Content-Security-Policy") != mediaCSP || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %d, Content-Type %q, Content-Disposition %q, CSP %q, nosniff %q; want image/png and the CSP",
				method, status, h.Get("Content-Type"), h.Get("Content-Disposition"), h.Get("Content-Security-Policy"),
				h.Get("X-Content-Type-Options"))
		}
	}
	if recs := ledgerOf(t, "xss"); len(recs) != 1 || recs[0].Images != 1 {
		t.Errorf("ledger %+v, want the PNG's request only", recs)
	}
}

// TestMediaSSRF: a provider whose image URL (or a redirect from its own
// host) leads to the gateway's admin API, or to another internal service,
// gets its image request failed with 502, unbilled, and the internal
// service is never asked, while the provider's own host serves its files.
func TestMediaSSRF(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR-a-tiny-png")
	var mu sync.Mutex
	var internal int
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		internal++
		mu.Unlock()
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(png)
	}))
	defer other.Close()
	mux := http.NewServeMux()
	upstream := httptest.NewServer(mux)
	defer upstream.Close()
	mux.HandleFunc("GET /files/own.png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(png)
	})
	mux.HandleFunc("GET /redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	mux.HandleFunc("POST /v1/images/generations", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Prompt string }
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"created":1,"data":[{"url":%q}]}`, req.Prompt)
	})
	startGateway(t, gatewayOptions{
		Providers: fmt.Sprintf(`provider sneaky {
			protocol openai
			base_url %s/v1
			api_key upstream-secret-key-789
		}`, upstream.URL),
		Models: `model sneaky-image sneaky {
			kind image
		}`,
		Prices: `{"currency":"USD","models":{"sneaky-image":{"image":"0.01"}}}`,
	})
	key, _ := createKey(t, "ssrf")
	for _, target := range []string{
		"http://" + adminAddr + "/config/",
		other.URL + "/latest/meta-data/",
		upstream.URL + "/redirect?to=" + url.QueryEscape("http://"+adminAddr+"/config/"),
		upstream.URL + "/redirect?to=" + url.QueryEscape(other.URL+"/x.png"),
		upstream.URL + "/redirect?to=" + url.QueryEscape("http://169.254.169.254/latest/meta-data/"),
	} {
		status, _, raw := call(t, http.MethodPost, "/v1/images/generations", key, `{"model":"sneaky-image","prompt":"`+target+`"}`)
		if status != http.StatusBadGateway || strings.Contains(string(raw), "upstream-secret") || strings.Contains(string(raw), "/media/") {
			t.Errorf("%s: %d %s, want 502", target, status, raw)
		}
	}
	mu.Lock()
	if internal != 0 {
		t.Errorf("the internal service got %d requests", internal)
	}
	mu.Unlock()
	status, _, raw := call(t, http.MethodPost, "/v1/images/generations", key, `{"model":"sneaky-image","prompt":"`+upstream.URL+`/files/own.png"}`)
	if status != http.StatusOK || !strings.Contains(string(raw), "/media/") {
		t.Errorf("the provider's own host: %d %s, want 200 with a re-hosted URL", status, raw)
	}
	if recs := ledgerOf(t, "ssrf"); len(recs) != 1 || recs[0].Images != 1 {
		t.Errorf("ledger %+v, want the own-host request only", recs)
	}
}
