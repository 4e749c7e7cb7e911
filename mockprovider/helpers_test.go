package mockprovider

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// testKey is the API key the test servers require.
const testKey = "test-key"

// newServer starts a mock mounted under /mock (so that base URLs end in
// /mock/v1) and returns its base URL.
func newServer(t *testing.T, c Config) string {
	t.Helper()
	if c.APIKey == "" {
		c.APIKey = testKey
	}
	srv := httptest.NewServer(New(c))
	t.Cleanup(srv.Close)
	return srv.URL + "/mock/v1"
}

// do sends a request with the test key and returns status, headers and body.
func do(t *testing.T, method, url, contentType, body string, header ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// post sends a JSON body.
func post(t *testing.T, url, body string, header ...string) (int, http.Header, string) {
	t.Helper()
	return do(t, http.MethodPost, url, "application/json", body, header...)
}

// sseEvent is one server-sent event.
type sseEvent struct {
	name, data string
}

// parseSSE splits an event stream into events, failing on malformed ones.
func parseSSE(t *testing.T, body string) []sseEvent {
	t.Helper()
	if !strings.HasSuffix(body, "\n\n") {
		t.Fatalf("stream does not end with a blank line: %q", body)
	}
	var events []sseEvent
	for _, raw := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		var ev sseEvent
		for _, line := range strings.Split(raw, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				ev.data = line[len("data: "):]
			default:
				t.Fatalf("malformed event line %q", line)
			}
		}
		events = append(events, ev)
	}
	return events
}
