package caddymodule

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/apierror"
)

func TestRespondError(t *testing.T) {
	for i, tc := range []struct {
		path, errType string
		err           error
		status        int
	}{
		{"/v1/chat/completions", "invalid_request_error", apierror.Unauthorized("invalid API key"), 401},
		{"/v1/messages", "authentication_error", apierror.Unauthorized("invalid API key"), 401},
		{"/v1/tasks", "invalid_request_error", apierror.NotFound("model_not_found", "no such model"), 404},
		{"/v1/messages", "not_found_error", apierror.NotFound("model_not_found", "no such model"), 404},
		{"/v1/messages", "overloaded_error", errBodiesBusy, 503},
		{"/v1/tasks", "server_error", errors.New("disk on fire"), 500},
		{"/v1/messages", "api_error", errors.New("disk on fire"), 500},
	} {
		rec := httptest.NewRecorder()
		err := respondError(rec, httptest.NewRequest(http.MethodPost, tc.path, nil), tc.err)
		var he caddyhttp.HandlerError
		if !errors.As(err, &he) || he.StatusCode != tc.status || !errors.Is(err, tc.err) {
			t.Errorf("Test %d: returned %#v, want a HandlerError with status %d wrapping %v", i, err, tc.status, tc.err)
		}
		if rec.Code != tc.status || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("Test %d: answered %d %q", i, rec.Code, rec.Header().Get("Content-Type"))
		}
		body := rec.Body.String()
		typ := gjson.Get(body, "error.type").Str
		if anthropicShaped(httptest.NewRequest(http.MethodGet, tc.path, nil)) && gjson.Get(body, "type").Str != "error" {
			t.Errorf("Test %d: %s is not in Anthropic's shape", i, body)
		}
		if typ != tc.errType {
			t.Errorf("Test %d: error type %q, want %q: %s", i, typ, tc.errType, body)
		}
		if strings.Contains(body, "disk on fire") {
			t.Errorf("Test %d: the body reveals an internal error: %s", i, body)
		}
	}
}

// bodyRequest returns a POST with body whose context the caller ends.
func bodyRequest(t *testing.T, body io.Reader) (*http.Request, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/chat/completions", body), cancel
}

func TestReadBodyBudget(t *testing.T) {
	saved := bodies
	t.Cleanup(func() { bodies = saved })
	bodies = newBodyBudget(64 << 10)

	// A body that declares 16 MiB and sends 5 bytes holds one small buffer.
	r, endSmall := bodyRequest(t, strings.NewReader("short"))
	r.ContentLength = 16 << 20
	got, err := readBody(httptest.NewRecorder(), r, 32<<20)
	if err != nil || string(got) != "short" {
		t.Fatalf("short body: %q, %v", got, err)
	}
	if used := bodies.used.Load(); used != minBodyBuffer {
		t.Fatalf("a 5-byte body declared as 16 MiB holds %d bytes of the budget, want %d", used, minBodyBuffer)
	}

	// A 40 KiB body grows its buffer to 64 KiB, which does not fit beside
	// the short body's: 503 with Retry-After, and nothing stays charged.
	big := strings.Repeat("a", 40<<10)
	r2, endBig := bodyRequest(t, strings.NewReader(big))
	_, err = readBody(httptest.NewRecorder(), r2, 1<<20)
	var e *apierror.Error
	if !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable || e.RetryAfter <= 0 {
		t.Fatalf("over the budget: %v, want a 503 with Retry-After", err)
	}
	if used := bodies.used.Load(); used != minBodyBuffer {
		t.Fatalf("a refused body left %d bytes charged, want %d", used-minBodyBuffer, 0)
	}

	// The short request ends: its charge is released, and the big body fits.
	endSmall()
	waitUsed(t, 0)
	r3, _ := bodyRequest(t, strings.NewReader(big))
	if got, err = readBody(httptest.NewRecorder(), r3, 1<<20); err != nil || len(got) != len(big) {
		t.Fatalf("within the budget: %d bytes, %v", len(got), err)
	}
	if used := bodies.used.Load(); used != 64<<10 {
		t.Fatalf("a 40 KiB body holds %d bytes, want 64 KiB", used)
	}
	// The budget is spent: the next body, however small, gets 503.
	r4, _ := bodyRequest(t, strings.NewReader("x"))
	if _, err = readBody(httptest.NewRecorder(), r4, 1<<20); !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable {
		t.Fatalf("budget spent: %v, want 503", err)
	}
	endBig()

	// A body too large for its limit (413) or aborted by its client gives
	// back what it held at once.
	for i, rd := range []io.Reader{
		strings.NewReader(strings.Repeat("b", 8<<10)),
		io.MultiReader(strings.NewReader("partial"), errReader{}),
	} {
		saved := bodies.used.Load()
		r, _ := bodyRequest(t, rd)
		if _, err := readBody(httptest.NewRecorder(), r, 1<<10); err == nil {
			t.Errorf("Test %d: read succeeded", i)
		}
		if used := bodies.used.Load(); used != saved {
			t.Errorf("Test %d: a failed read left %d bytes charged", i, used-saved)
		}
	}
}

// waitUsed waits for the budget's AfterFunc releases to reach want; they
// run on their own goroutine once a request's context ends.
func waitUsed(t *testing.T, want int64) {
	t.Helper()
	for range 1_000_000 {
		if bodies.used.Load() == want {
			return
		}
		goruntime.Gosched()
	}
	t.Fatalf("the budget holds %d bytes after the request ended, want %d", bodies.used.Load(), want)
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }
