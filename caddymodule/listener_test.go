package caddymodule

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

func TestRewritePlainError(t *testing.T) {
	const hdrs = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
	for i, tc := range []struct {
		in      string
		status  int // 0: passed through unchanged
		code    string
		message string
	}{
		{"HTTP/1.1 431 Request Header Fields Too Large" + hdrs + "431 Request Header Fields Too Large", 431, "request_header_fields_too_large", "431 Request Header Fields Too Large"},
		{"HTTP/1.1 400 Bad Request" + hdrs + "400 Bad Request", 400, "bad_request", "400 Bad Request"},
		{"HTTP/1.1 400 Bad Request: missing required Host header" + hdrs + "400 Bad Request: missing required Host header", 400, "bad_request", "400 Bad Request: missing required Host header"},
		{"HTTP/1.1 501 Not Implemented" + hdrs + "Unsupported transfer encoding", 501, "not_implemented", "Unsupported transfer encoding"},
		// A handler's response: headers sorted, with a Date.
		{"HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nDate: Mon, 23 Nov 2026 15:00:00 GMT\r\n\r\nno", 0, "", ""},
		{"HTTP/1.1 200 OK" + hdrs + "fine", 0, "", ""},
		{"some body bytes HTTP/1.1 400 Bad Request" + hdrs, 0, "", ""},
		{"HTTP/1.1 400 Bad\r\nRequest" + hdrs, 0, "", ""},
		{"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n", 0, "", ""},
	} {
		out, ok := rewritePlainError([]byte(tc.in))
		if tc.status == 0 {
			if ok {
				t.Errorf("Test %d: rewrote %q into %q", i, tc.in, out)
			}
			continue
		}
		if !ok {
			t.Errorf("Test %d: %q not rewritten", i, tc.in)
			continue
		}
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(out)), nil)
		if err != nil {
			t.Fatalf("Test %d: %q: %v", i, out, err)
		}
		body, _ := io.ReadAll(resp.Body)
		var e struct {
			Error struct{ Message, Type, Code string }
		}
		if err := json.Unmarshal(body, &e); err != nil || resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != "application/json" || !resp.Close {
			t.Errorf("Test %d: %d %v %s (%v)", i, resp.StatusCode, resp.Header, body, err)
		}
		if e.Error.Type != "invalid_request_error" || e.Error.Code != tc.code || e.Error.Message != tc.message {
			t.Errorf("Test %d: error %+v, want code %q, message %q", i, e.Error, tc.code, tc.message)
		}
	}
}
