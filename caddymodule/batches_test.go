package caddymodule

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestContentTypeFilesUpload: air_auth lets a multipart form through to
// a files upload only; every other body must still be JSON.
func TestContentTypeFilesUpload(t *testing.T) {
	for _, tc := range []struct {
		method, path, ctype string
		ok                  bool
	}{
		{http.MethodPost, "/v1/files", "multipart/form-data; boundary=x", true},
		{http.MethodPost, "/v1/files", "application/json", true},
		{http.MethodPost, "/v1/chat/completions", "multipart/form-data; boundary=x", false},
		{http.MethodPost, "/v1/batches", "multipart/form-data; boundary=x", false},
		{http.MethodPut, "/v1/files", "multipart/form-data; boundary=x", false},
		{http.MethodPost, "/v1/files", "text/plain", false},
	} {
		r := httptest.NewRequest(tc.method, tc.path, strings.NewReader("x"))
		r.Header.Set("Content-Type", tc.ctype)
		if e := checkContentType(r); (e == nil) != tc.ok {
			t.Errorf("%s %s %s: %v, want allowed %v", tc.method, tc.path, tc.ctype, e, tc.ok)
		}
	}
}
