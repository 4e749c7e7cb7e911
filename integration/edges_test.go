package integration

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// edgesConfig is Caddyfile.example, as quickstartConfig writes it, at
// debug level and with a handle_errors route that marks the access log
// entry of every request whose handler returned an error.
func edgesConfig(t *testing.T, dataDir string) string {
	t.Helper()
	path := quickstartConfig(t, dataDir, "")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(src), "\tadmin "+procAdminAddr+"\n", "\tadmin "+procAdminAddr+"\n\tdebug\n", 1)
	const siteLog = "\tlog {\n\t\timport air_redact\n\t}\n}"
	if !strings.Contains(cfg, siteLog) {
		t.Fatalf("Caddyfile.example has no site log block %q", siteLog)
	}
	cfg = strings.Replace(cfg, siteLog, "\thandle_errors {\n\t\tlog_append air_error_route {err.status_code}\n\t}\n"+siteLog, 1)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// rawRequest writes req on a new connection to the process and returns
// the response it reads. The write runs beside the read, so that a server
// that answers before reading the whole request is heard.
func rawRequest(t *testing.T, req string) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", "localhost:"+procHTTPPort)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	go func() { _, _ = io.WriteString(conn, req) }()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer to %.60q: %v", req, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the body of the answer to %.60q: %v", req, err)
	}
	return resp, body
}

// accessLogEntry returns the access log entry of the first request to uri
// (as the request line had it) with the given status.
func accessLogEntry(t *testing.T, p *process, uri string, status int) map[string]any {
	t.Helper()
	var entry map[string]any
	eventually(t, 10*time.Second, "the access log entry of "+uri, func() bool {
		for _, line := range strings.Split(p.log.String(), "\n") {
			if !strings.Contains(line, `"uri":"`+uri+`"`) || !strings.Contains(line, `"logger":"http.log.access`) {
				continue
			}
			entry = nil
			if json.Unmarshal([]byte(line), &entry) == nil && entry["status"] == float64(status) {
				return true
			}
		}
		return false
	})
	return entry
}

// TestEdgeErrorsAreJSON runs Caddyfile.example as a process and checks that
// every error answer under /v1/ is JSON in the protocol's shape, including
// those that Go's HTTP server writes before any handler runs and those for
// paths Caddy cleaned; that handler errors reach handle_errors while the
// client keeps the JSON body; and that no credential reaches the logs, at
// debug level.
func TestEdgeErrorsAreJSON(t *testing.T) {
	dataDir := t.TempDir()
	cfg := edgesConfig(t, dataDir)
	p := startProcess(t, cfg, dataDir)
	key := lastLine(caddyCLI(t, "air", "key", "create", "--user", "edge", "--config", cfg))
	if !strings.HasPrefix(key, "sk-air-") {
		t.Fatalf("no key: %q", key)
	}
	unknownKey := "sk-air-" + strings.Repeat("Q", 43)
	secrets := []string{key, unknownKey, "azure-secret-0123456789", "goog-secret-0123456789", "mock-upstream-key"}

	t.Run("handle_errors runs, the client keeps the JSON error", func(t *testing.T) {
		status, _, body := callURL(t, http.MethodGet, p.url("/v1/models?edge=401"), "", "", "x-api-key", unknownKey)
		if e := decodeError(t, body); status != http.StatusUnauthorized || e.Error.Type != "invalid_request_error" || e.code() != "invalid_api_key" {
			t.Fatalf("unknown key: %d %s", status, body)
		}
		entry := accessLogEntry(t, p, "/v1/models?edge=401", http.StatusUnauthorized)
		if entry["air_error_route"] != float64(http.StatusUnauthorized) {
			t.Errorf("access log air_error_route = %v, want 401: handle_errors did not run", entry["air_error_route"])
		}
		// Anthropic's shape on /v1/messages, also for its 401.
		status, _, body = callURL(t, http.MethodPost, p.url("/v1/messages"), "", `{"model":"mock-claude","max_tokens":8,"messages":[{"role":"user","content":"x"}]}`,
			"x-api-key", unknownKey, "anthropic-version", "2023-06-01")
		if status != http.StatusUnauthorized || gjson.GetBytes(body, "type").Str != "error" || gjson.GetBytes(body, "error.type").Str != "authentication_error" {
			t.Errorf("messages with an unknown key: %d %s", status, body)
		}
	})

	t.Run("credentials never reach the logs", func(t *testing.T) {
		chat := `{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`
		for _, h := range [][]string{
			{"Authorization", "Bearer " + key},
			{"x-api-key", key},
			{"Authorization", "Bearer " + unknownKey},
			{"api-key", "azure-secret-0123456789"},
			{"x-goog-api-key", "goog-secret-0123456789"},
		} {
			callURL(t, http.MethodPost, p.url("/v1/chat/completions"), "", chat, h...)
			callURL(t, http.MethodGet, p.url("/v1/nothing-here"), "", "", h...)
		}
		// Through the mock-anthropic provider, whose upstream key travels
		// as x-api-key through this same Caddy (and its access log).
		status, _, body := callURL(t, http.MethodPost, p.url("/v1/messages"), "", `{"model":"mock-claude","max_tokens":8,"messages":[{"role":"user","content":"x"}]}`,
			"x-api-key", key, "anthropic-version", "2023-06-01", "api-key", "azure-secret-0123456789")
		if status != http.StatusOK {
			t.Fatalf("messages: %d %s", status, body)
		}
		accessLogEntry(t, p, "/mock/v1/messages", http.StatusOK)
		logs := p.log.String()
		if !strings.Contains(logs, `"X-Api-Key":"REDACTED"`) {
			t.Errorf("no redacted X-Api-Key in the logs: the test did not see the headers it means to check")
		}
		for _, line := range strings.Split(logs, "\n") {
			// At debug level Caddy logs the http app's config as it is
			// (http.auto_https "adjusted config"), air_mock's literal
			// api_key included; docs/operations/logs.md says to keep secrets in
			// handler config out of literals. Provider keys live in the
			// air app, which no log shows.
			if strings.Contains(line, `"msg":"adjusted config"`) {
				line = strings.ReplaceAll(line, `"api_key":"mock-upstream-key"`, "")
			}
			for _, s := range secrets {
				if strings.Contains(line, s) {
					t.Errorf("the logs contain the secret %q: %.300s", s, line)
				}
			}
		}
	})

	t.Run("unknown paths", func(t *testing.T) {
		status, _, body := callURL(t, http.MethodGet, p.url("/v1/nope"), key, "")
		if e := decodeError(t, body); status != http.StatusNotFound || e.code() != "unknown_url" {
			t.Errorf("/v1/nope: %d %s", status, body)
		}
		status, _, body = callURL(t, http.MethodGet, p.url("/v1/messages/batches"), key, "")
		if status != http.StatusNotFound || gjson.GetBytes(body, "error.type").Str != "not_found_error" {
			t.Errorf("/v1/messages/batches: %d %s", status, body)
		}
		// Go clients clean paths; a raw request line keeps the dots, and
		// Caddy cleans /v1/tasks/../../x to /x.
		resp, body := rawRequest(t, "GET /v1/tasks/../../x HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
		if e := decodeError(t, body); resp.StatusCode != http.StatusNotFound || e.code() != "unknown_url" || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("/v1/tasks/../../x: %d %v %s", resp.StatusCode, resp.Header, body)
		}
	})

	t.Run("requests Go's HTTP server refuses", func(t *testing.T) {
		for i, tc := range []struct {
			req    string
			status int
		}{
			// Caddy's default max_header_size is 16 KiB, and Go's server
			// reads 4 KiB more before it refuses.
			{"GET /v1/models HTTP/1.1\r\nHost: localhost\r\nX-Big: " + strings.Repeat("a", 21<<10) + "\r\n\r\n", http.StatusRequestHeaderFieldsTooLarge},
			{"POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 12abc\r\n\r\n{}", http.StatusBadRequest},
			{"POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}", http.StatusBadRequest},
		} {
			resp, body := rawRequest(t, tc.req)
			e := decodeError(t, body)
			if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != "application/json" || e.Error.Type != "invalid_request_error" {
				t.Errorf("Test %d: %d %v %s", i, resp.StatusCode, resp.Header, body)
			}
		}
		// Headers under the limit reach the handlers.
		if resp, body := rawRequest(t, "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nX-Big: "+strings.Repeat("a", 15<<10)+"\r\n\r\n"); resp.StatusCode == http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("15 KiB of headers: %d %s", resp.StatusCode, body)
		}
	})
}
