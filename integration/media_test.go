package integration

import (
	"bytes"
	"net/http"
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
