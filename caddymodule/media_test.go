package caddymodule

import (
	"net/http"
	"testing"
)

// TestMediaHeaders: every media answer forbids script and sniffing; a file
// stored under a type that is not a safe image or video type (SVG, HTML,
// from before types were checked) is an attachment of octets.
func TestMediaHeaders(t *testing.T) {
	for i, tc := range []struct {
		stored, wantType, wantDisposition string
	}{
		{"image/png", "image/png", ""},
		{"video/mp4", "video/mp4", ""},
		{"image/webp; q=1", "image/webp", ""},
		{"image/svg+xml", "application/octet-stream", "attachment"},
		{"text/html; charset=utf-8", "application/octet-stream", "attachment"},
		{"application/octet-stream", "application/octet-stream", "attachment"},
		{"", "application/octet-stream", "attachment"},
	} {
		h := http.Header{}
		setMediaHeaders(h, tc.stored, `"e"`)
		if h.Get("Content-Type") != tc.wantType || h.Get("Content-Disposition") != tc.wantDisposition {
			t.Errorf("Test %d: stored %q: Content-Type %q, Content-Disposition %q; want %q, %q",
				i, tc.stored, h.Get("Content-Type"), h.Get("Content-Disposition"), tc.wantType, tc.wantDisposition)
		}
		if h.Get("Content-Security-Policy") != "default-src 'none'; sandbox" || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("ETag") != `"e"` {
			t.Errorf("Test %d: stored %q: CSP %q, nosniff %q, ETag %q", i, tc.stored,
				h.Get("Content-Security-Policy"), h.Get("X-Content-Type-Options"), h.Get("ETag"))
		}
	}
}
