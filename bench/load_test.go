package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"
)

// TestConstantRate checks that every request is sent once and that
// non-2xx answers, answers without choices and truncated streams count as
// errors.
func TestConstantRate(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1)
		if r.Header.Get("Authorization") != "Bearer k" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/stream") {
			if i%4 == 0 {
				w.Write([]byte("data: {}\n\n")) // truncated: no [DONE]
				return
			}
			w.Write([]byte("data: {}\n\ndata: [DONE]\n\n"))
			return
		}
		switch i % 5 {
		case 0:
			w.WriteHeader(http.StatusBadGateway)
		case 1:
			w.Write([]byte(`{"error":{}}`))
		default:
			w.Write([]byte(`{"choices":[]}`))
		}
	}))
	defer srv.Close()
	client := newClient(4)
	for i, tc := range []struct {
		req        request
		ok, errors int
	}{
		{request{URL: srv.URL + "/json", Key: "k"}, 12, 8},
		{request{URL: srv.URL + "/stream", Key: "k", Stream: true}, 15, 5},
		{request{URL: srv.URL + "/json", Key: "wrong"}, 0, 20},
	} {
		n.Store(0)
		res := constantRate(context.Background(), client, tc.req, 200, 100*time.Millisecond, 4, 10*time.Second)
		if res.OK != tc.ok || res.Errors != tc.errors || len(res.Latencies) != tc.ok {
			t.Errorf("Test %d: ok %d errors %d latencies %d, want %d, %d, %d (first error %q)",
				i, res.OK, res.Errors, len(res.Latencies), tc.ok, tc.errors, tc.ok, res.FirstError)
		}
		if tc.errors > 0 && res.FirstError == "" {
			t.Errorf("Test %d: errors without a first error", i)
		}
	}
}

func TestReadBodyKeepsTail(t *testing.T) {
	long := strings.Repeat("data: {\"x\":1}\n\n", 10000) + "data: [DONE]\n\n"
	got, events, err := readBody(iotest.OneByteReader(strings.NewReader(long)), true)
	if err != nil {
		t.Fatal(err)
	}
	if events != 10001 {
		t.Errorf("counted %d events, want 10001 (read a byte at a time: the blank lines span reads)", events)
	}
	if len(got) > 256 || !strings.HasSuffix(string(got), "data: [DONE]\n\n") {
		t.Errorf("kept %d bytes ending %q, want at most 256 ending with [DONE]", len(got), got[max(len(got)-20, 0):])
	}
}
