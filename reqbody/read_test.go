package reqbody

import (
	"bytes"
	"context"
	"errors"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/chatproxy"
	"github.com/caddy-air/caddy-air/providers"
)

// bufferCount counts the pooled buffers taken and returned, per class,
// while a test runs.
type bufferCount struct {
	mu       sync.Mutex
	got, put [len(bodyPools)]int
}

// countBuffers installs a bufferCount for the test's duration, and a
// budget of limit bytes.
func countBuffers(t *testing.T, limit int64) *bufferCount {
	t.Helper()
	bc := new(bufferCount)
	savedGot, savedPut, savedBudget := bufferGot, bufferPut, bodies
	t.Cleanup(func() { bufferGot, bufferPut, bodies = savedGot, savedPut, savedBudget })
	bufferGot = func(c int) { bc.mu.Lock(); bc.got[c]++; bc.mu.Unlock() }
	bufferPut = func(c int) { bc.mu.Lock(); bc.put[c]++; bc.mu.Unlock() }
	bodies = newBudget(limit)
	return bc
}

// outstanding is the number of buffers taken and not returned.
func (bc *bufferCount) outstanding() int {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	n := 0
	for c := range bc.got {
		n += bc.got[c] - bc.put[c]
	}
	return n
}

// check fails t unless every buffer taken was returned exactly once and
// the budget holds nothing.
func (bc *bufferCount) check(t *testing.T, what string) {
	t.Helper()
	bc.mu.Lock()
	defer bc.mu.Unlock()
	for c := range bc.got {
		if bc.got[c] != bc.put[c] {
			t.Errorf("%s: class %d: %d buffers taken, %d returned", what, c, bc.got[c], bc.put[c])
		}
	}
	if used := bodies.used.Load(); used != 0 {
		t.Errorf("%s: the budget holds %d bytes, want 0", what, used)
	}
}

// postRequest returns a POST with body and the declared length.
func postRequest(body io.Reader, declared int64) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", body)
	r.ContentLength = declared
	return r
}

func TestReadBodyBudget(t *testing.T) {
	bc := countBuffers(t, 64<<10)

	// A body that declares 16 MiB and sends 5 bytes holds one small buffer:
	// its declaration takes nothing ahead of the bytes.
	short, err := Read(httptest.NewRecorder(), postRequest(strings.NewReader("short"), 16<<20), 32<<20)
	if err != nil || string(short.Bytes()) != "short" {
		t.Fatalf("short body: %v", err)
	}
	if used := bodies.used.Load(); used != minBodyBuffer {
		t.Fatalf("a 5-byte body declared as 16 MiB holds %d bytes of the budget, want %d", used, minBodyBuffer)
	}

	// A 40 KiB body grows its buffer to 64 KiB, which does not fit beside
	// the short body's: 503 with Retry-After, and nothing stays charged.
	big := strings.Repeat("a", 40<<10)
	_, err = Read(httptest.NewRecorder(), postRequest(strings.NewReader(big), -1), 1<<20)
	var e *apierror.Error
	if !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable || e.RetryAfter <= 0 {
		t.Fatalf("over the budget: %v, want a 503 with Retry-After", err)
	}
	if used := bodies.used.Load(); used != minBodyBuffer {
		t.Fatalf("a refused body left %d bytes charged, want 0", used-minBodyBuffer)
	}

	// The short body is released, and the big body fits.
	short.Release()
	b, err := Read(httptest.NewRecorder(), postRequest(strings.NewReader(big), -1), 1<<20)
	if err != nil || !bytes.Equal(b.Bytes(), []byte(big)) {
		t.Fatalf("within the budget: %v", err)
	}
	if used := bodies.used.Load(); used != 64<<10 {
		t.Fatalf("a 40 KiB body holds %d bytes, want 64 KiB", used)
	}
	// The budget is spent: the next body, however small, gets 503.
	if _, err = Read(httptest.NewRecorder(), postRequest(strings.NewReader("x"), 1), 1<<20); !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable {
		t.Fatalf("budget spent: %v, want 503", err)
	}
	b.Release()

	// A body too large for its limit (413, declared or not) or aborted by
	// its client gives back what it held at once.
	for i, tc := range []struct {
		body     io.Reader
		declared int64
		status   int
	}{
		{strings.NewReader(strings.Repeat("b", 8<<10)), -1, http.StatusRequestEntityTooLarge},
		{strings.NewReader(strings.Repeat("b", 8<<10)), 8 << 10, http.StatusRequestEntityTooLarge},
		{io.MultiReader(strings.NewReader("partial"), errReader{}), -1, http.StatusBadRequest},
		{io.MultiReader(strings.NewReader(strings.Repeat("c", 5<<10)), errReader{}), 6 << 10, http.StatusBadRequest},
	} {
		_, err := Read(httptest.NewRecorder(), postRequest(tc.body, tc.declared), 6<<10)
		if !errors.As(err, &e) || e.Status != tc.status {
			t.Errorf("Test %d: %v, want %d", i, err, tc.status)
		}
		if used := bodies.used.Load(); used != 0 {
			t.Errorf("Test %d: a failed read left %d bytes charged", i, used)
		}
	}
	bc.check(t, "after every body")
}

// TestReadBodyGrowth checks that a buffer grows only when full, whatever
// the client declares (issue #15: 2,000 clients declaring 16 MiB and
// sending nothing must not take 32 GiB), eightfold toward a declared length
// and capped at its class, doubling without one.
func TestReadBodyGrowth(t *testing.T) {
	for i, tc := range []struct {
		size, declared int
		wantGets       int // buffers taken from the pools, the first 512 bytes
		wantCap        int // of the last buffer
	}{
		// 512 bytes, 4, 32, then the declared class of 128 KiB.
		{size: 100 << 10, declared: 100 << 10, wantGets: 4, wantCap: 128 << 10},
		// 512 bytes, 4, 32, 256 KiB, then the declared class of 1 MiB.
		{size: 1 << 20, declared: 1 << 20, wantGets: 5, wantCap: 1 << 20},
		// Just over 1 MiB: the last step stops at the 1.25 MiB class.
		{size: 1<<20 + 1, declared: 1<<20 + 1, wantGets: 5, wantCap: 1<<20 + 1<<18},
		// Without a declared length it doubles: 512 bytes to 2 MiB.
		{size: 1<<20 + 1, declared: -1, wantGets: 13, wantCap: 2 << 20},
		// A declaration larger than the body takes nothing ahead of it.
		{size: 10, declared: 16 << 20, wantGets: 1, wantCap: 512},
		{size: 5000, declared: 16 << 20, wantGets: 3, wantCap: 32 << 10},
		{size: 512, declared: 512, wantGets: 1, wantCap: 512},
		{size: 513, declared: -1, wantGets: 2, wantCap: 1 << 10},
	} {
		bc := countBuffers(t, 64<<20)
		data := bytes.Repeat([]byte{'x'}, tc.size)
		b, err := Read(httptest.NewRecorder(), postRequest(bytes.NewReader(data), int64(tc.declared)), 16<<20)
		if err != nil || !bytes.Equal(b.Bytes(), data) {
			t.Fatalf("Test %d: %v", i, err)
		}
		gets := 0
		for _, n := range bc.got {
			gets += n
		}
		if bc.got[0] != 1 || gets != tc.wantGets {
			t.Errorf("Test %d: buffers taken by class %v, want %d in all, the first of 512 bytes", i, bc.got, tc.wantGets)
		}
		if c := cap(b.Bytes()); c != tc.wantCap {
			t.Errorf("Test %d: the body ends in a buffer of %d bytes, want %d", i, c, tc.wantCap)
		}
		if used := bodies.used.Load(); used != int64(cap(b.Bytes())) {
			t.Errorf("Test %d: the budget holds %d bytes for a buffer of %d", i, used, cap(b.Bytes()))
		}
		b.Release()
		bc.check(t, "after release")
	}
}

func TestRequestBodyReleasedOnce(t *testing.T) {
	bc := countBuffers(t, 1<<20)
	b, err := Read(httptest.NewRecorder(), postRequest(strings.NewReader("{}"), 2), 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	// Two upstream requests still read it when the handler lets go.
	b.Pin()
	b.Pin()
	b.Release()
	b.Release() // the handler's deferred release after an early one
	b.Unpin()
	if bc.outstanding() != 1 || bodies.used.Load() == 0 {
		t.Fatalf("the buffer was returned while a holder remained")
	}
	b.Unpin()
	bc.check(t, "after the last holder")
	defer func() {
		if recover() == nil {
			t.Error("a body released once too often did not panic")
		}
		bc.check(t, "after a release too many")
	}()
	b.Unpin()
}

func TestRequestBodyReserve(t *testing.T) {
	for i, tc := range []struct {
		limit    int64 // of the budget
		reserve  int
		ok       bool
		wantSize int
	}{
		{limit: 1 << 20, reserve: minBodyBuffer, ok: true, wantSize: minBodyBuffer},
		{limit: 1 << 20, reserve: minBodyBuffer + 40, ok: true, wantSize: 2 * minBodyBuffer},
		{limit: 1 << 20, reserve: 5 * minBodyBuffer, ok: true, wantSize: 8 * minBodyBuffer},
		// The budget covers one doubling, not two: the body moved anyway.
		{limit: 3 * minBodyBuffer, reserve: 3 * minBodyBuffer, ok: false, wantSize: 2 * minBodyBuffer},
	} {
		bc := countBuffers(t, tc.limit)
		data := bytes.Repeat([]byte{'y'}, minBodyBuffer)
		b, err := Read(httptest.NewRecorder(), postRequest(bytes.NewReader(data), minBodyBuffer), 1<<20)
		if err != nil {
			t.Fatalf("Test %d: %v", i, err)
		}
		if ok := b.reserve(tc.reserve); ok != tc.ok {
			t.Errorf("Test %d: reserve(%d) = %v", i, tc.reserve, ok)
		}
		if got := b.Bytes(); !bytes.Equal(got, data) || cap(got) != tc.wantSize {
			t.Errorf("Test %d: after reserve(%d): %d bytes in a buffer of %d, want %d in %d", i, tc.reserve, len(got), cap(got), len(data), tc.wantSize)
		}
		if used := bodies.used.Load(); used != int64(tc.wantSize) {
			t.Errorf("Test %d: the budget holds %d bytes for a buffer of %d", i, used, tc.wantSize)
		}
		if n := bc.outstanding(); n != 1 {
			t.Errorf("Test %d: %d buffers out, want 1", i, n)
		}
		b.Release()
		bc.check(t, "after release")
	}
}

// TestRequestBodyExchange sends bodies upstream through chatproxy as the
// air_chat handler does and checks that each buffer returns to its pool
// once, and the budget is given back, whatever the exchange's end.
func TestRequestBodyExchange(t *testing.T) {
	var failing bool
	var mu sync.Mutex
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ := io.ReadAll(r.Body)
		mu.Lock()
		fail := failing
		mu.Unlock()
		switch {
		case fail:
			http.Error(w, `{"error":{"message":"down"}}`, http.StatusBadGateway)
		case r.Header.Get("X-Air-Request-Id") == "abort":
			<-r.Context().Done()
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"id":"x","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1},"len":` + itoa(len(got)) + `}`))
		}
	}))
	defer upstream.Close()
	refused := httptest.NewServer(http.NotFoundHandler())
	refusedURL := refused.URL
	refused.Close()

	payload := []byte(`{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("hi ", 50_000) + `"}]}`)
	proxy := &chatproxy.Proxy{Transport: &http.Transport{}}
	for i, tc := range []struct {
		name   string
		urls   []string
		fail   bool
		abort  bool
		limit  int64
		status int
	}{
		{name: "success", urls: []string{upstream.URL}, status: 200},
		{name: "413", urls: []string{upstream.URL}, limit: 1 << 10, status: 413},
		{name: "upstream failure, retried", urls: []string{upstream.URL, upstream.URL}, fail: true, status: 502},
		{name: "no upstream", urls: []string{refusedURL, refusedURL}, status: 503},
		{name: "client abort", urls: []string{upstream.URL}, abort: true, status: 499},
	} {
		bc := countBuffers(t, 8<<20)
		mu.Lock()
		failing = tc.fail
		mu.Unlock()
		limit := tc.limit
		if limit == 0 {
			limit = 1 << 20
		}
		ctx, cancel := context.WithCancel(context.Background())
		r := postRequest(bytes.NewReader(payload), int64(len(payload))).WithContext(ctx)
		w := httptest.NewRecorder()
		status := func() int {
			b, err := Read(w, r, limit)
			if err != nil {
				var e *apierror.Error
				if !errors.As(err, &e) {
					t.Fatalf("%s: %v is not an API error", tc.name, err)
				}
				return e.Status
			}
			defer b.Release()
			id := "ok"
			if tc.abort {
				id = "abort"
				time.AfterFunc(50*time.Millisecond, cancel)
			}
			res := proxy.Serve(w, r, &chatproxy.Call{
				Wire:      openai.Wire,
				Provider:  &providers.Provider{Name: "p", BaseURLs: tc.urls, Retries: len(tc.urls) - 1, Timeout: 5 * time.Second},
				Path:      "/chat/completions",
				Body:      b.Bytes(),
				BodyPin:   b,
				RequestID: id,
			})
			defer res.Close()
			if res.Held != nil {
				res.Held.Release(w)
			}
			return res.Status
		}()
		cancel()
		if status != tc.status {
			t.Errorf("Test %d (%s): status %d, want %d", i, tc.name, status, tc.status)
		}
		// Transports may close a request body after RoundTrip returns.
		for deadline := time.Now().Add(5 * time.Second); bc.outstanding() > 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		bc.check(t, tc.name)
	}
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		if n /= 10; n == 0 {
			return string(b[i:])
		}
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

func BenchmarkReadBody(b *testing.B) {
	saved := bodies
	b.Cleanup(func() { bodies = saved })
	bodies = newBudget(DefaultMaxBuffered)
	for _, size := range []int{1 << 10, 200 << 10, 1 << 20} {
		name := itoa(size>>10) + "KiB"
		if size >= 1<<20 {
			name = itoa(size>>20) + "MiB"
		}
		// With a declared length the buffer is sized at once; without one
		// (chunked), it grows from 512 bytes through the pools.
		for _, declared := range []bool{true, false} {
			sub := name
			if !declared {
				sub += "/chunked"
			}
			b.Run(sub, func(b *testing.B) {
				data := bytes.Repeat([]byte("a"), size)
				rd := bytes.NewReader(data)
				r := postRequest(nil, int64(size))
				if !declared {
					r.ContentLength = -1
				}
				r.Body = io.NopCloser(rd)
				w := httptest.NewRecorder()
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					rd.Reset(data)
					body, err := Read(w, r, 16<<20)
					if err != nil {
						b.Fatal(err)
					}
					body.Release()
				}
			})
		}
	}
}

// TestBodyClasses: a body just over a power of two takes a buffer at most
// a quarter larger than it (from 256 KiB on), every class is pooled, and
// a body of unknown length grows through classes.
func TestBodyClasses(t *testing.T) {
	if len(classSizes) != numClasses || classSizes[0] != minBodyBuffer || classSizes[numClasses-1] != maxPooledBody {
		t.Fatalf("classes %v", classSizes)
	}
	for i, tc := range []struct{ n, want int }{
		{1, 512},
		{513, 1 << 10},
		{4 << 10, 4 << 10},
		{100 << 10, 128 << 10},
		{256<<10 + 1, 320 << 10},
		{1<<20 + 5000, 1<<20 + 1<<18}, // the bench's "1 MiB" conversation
		{3 << 20, 3 << 20},
		{15<<20 + 1, 16 << 20},
	} {
		c := classFor(tc.n)
		if c == unpooled || classSize(c) != tc.want {
			t.Errorf("Test %d: %d bytes: class %d, want a buffer of %d", i, tc.n, c, tc.want)
		}
	}
	if c := classFor(maxPooledBody + 1); c != unpooled {
		t.Errorf("past the largest class: class %d", c)
	}
	for n := minBodyBuffer; n < maxPooledBody; n *= 2 {
		if c := classFor(nextSize(n)); c == unpooled || classSize(c) != nextSize(n) {
			t.Errorf("growth from %d to %d leaves the classes", n, nextSize(n))
		}
	}
}

// trickle is a body that sends its first 512 bytes at once, and the rest
// piece bytes a read after a pause longer than slowBodyAfter, as a client
// that trickles its body does. Before each read it notes the most the
// budget held beyond what had arrived.
type trickle struct {
	data   []byte
	off    int
	piece  int
	paused bool
	excess int64 // the most bodies.used exceeded the bytes read by
}

func (r *trickle) Read(p []byte) (int, error) {
	r.excess = max(r.excess, bodies.used.Load()-int64(r.off))
	if r.off == len(r.data) {
		return 0, io.EOF
	}
	n := min(len(p), len(r.data)-r.off)
	if r.off >= minBodyBuffer {
		if !r.paused {
			time.Sleep(slowBodyAfter + 10*time.Millisecond)
			r.paused = true
		}
		n = min(n, r.piece)
	}
	copy(p, r.data[r.off:r.off+n])
	r.off += n
	return n, nil
}

// TestReadBodySlow: a body that trickles in, declared at 16 MiB, holds at
// most a chunk beyond what arrived while it arrives (an eightfold buffer
// held 32 KiB for 4 KiB), and ends whole in one buffer of its class, with
// every chunk returned.
func TestReadBodySlow(t *testing.T) {
	for i, size := range []int{600, 5000, 20 << 10, 100<<10 + 7} {
		bc := countBuffers(t, 64<<20)
		data := make([]byte, size)
		for j := range data {
			data[j] = byte('a' + j%26)
		}
		r := &trickle{data: data, piece: 1000}
		b, err := Read(httptest.NewRecorder(), postRequest(r, 16<<20), 16<<20)
		if err != nil || !bytes.Equal(b.Bytes(), data) {
			t.Fatalf("Test %d: %v (or the body differs)", i, err)
		}
		if limit := int64(minBodyBuffer + slowChunk); r.excess > limit {
			t.Errorf("Test %d: while the body arrived the budget held up to %d bytes beyond it, want ≤ %d", i, r.excess, limit)
		}
		if c, want := cap(b.Bytes()), classSize(classFor(size)); c != want {
			t.Errorf("Test %d: the body ends in a buffer of %d bytes, want its class's %d", i, c, want)
		}
		if used := bodies.used.Load(); used != int64(cap(b.Bytes())) {
			t.Errorf("Test %d: the budget holds %d bytes for a buffer of %d", i, used, cap(b.Bytes()))
		}
		b.Release()
		bc.check(t, "after release")
	}
}

// TestReadBodySlowLimits: a trickled body past the limit is refused, and
// one past the budget is refused as busy, with nothing left held.
func TestReadBodySlowLimits(t *testing.T) {
	bc := countBuffers(t, 64<<20)
	data := bytes.Repeat([]byte{'x'}, 10<<10)
	_, err := Read(httptest.NewRecorder(), postRequest(&trickle{data: data, piece: 1000}, -1), 8<<10)
	var ae *apierror.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("a trickled body over the limit: %v, want 413", err)
	}
	bc.check(t, "after the refusal")
	bc = countBuffers(t, 6<<10)
	if _, err := Read(httptest.NewRecorder(), postRequest(&trickle{data: data, piece: 1000}, -1), 16<<20); !errors.Is(err, ErrBusy) {
		t.Errorf("a trickled body over the budget: %v, want ErrBusy", err)
	}
	bc.check(t, "after the busy refusal")
}
