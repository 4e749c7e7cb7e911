package mediafs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func newStore(t testing.TB) (*Store, *clock, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "media")
	c := &clock{t: time.Now()}
	s, err := Open(Options{Dir: dir, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	return s, c, dir
}

// payload returns n reproducible pseudo-random bytes.
func payload(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, seed))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func put(t testing.TB, s *Store, id string, data []byte, expires time.Time) store.MediaInfo {
	t.Helper()
	info, err := s.Put(context.Background(), id, bytes.NewReader(data), store.MediaPut{ContentType: "video/mp4", Expires: expires, MaxBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// serve answers a request for id the way the air_media handler does; a
// file that cannot be opened fails the test and answers status 200 with
// no body.
func serve(t testing.TB, s *Store, id string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/media/"+id, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	m, err := s.Open(req.Context(), id)
	if err != nil {
		t.Errorf("open %s: %v", id, err)
		return w
	}
	defer m.Content.Close()
	w.Header().Set("Content-Type", m.ContentType)
	w.Header().Set("ETag", m.ETag())
	http.ServeContent(w, req, "", m.Created, m.Content)
	return w
}

func TestPutOpenServe(t *testing.T) {
	s, c, _ := newStore(t)
	data := payload(100_000, 1)
	info := put(t, s, "abc", data, c.now().Add(time.Hour))
	sum := sha256.Sum256(data)
	if info.Size != int64(len(data)) || info.SHA256 != hex.EncodeToString(sum[:]) || info.ContentType != "video/mp4" {
		t.Fatalf("info = %+v", info)
	}
	full := serve(t, s, "abc")
	if full.Code != http.StatusOK || !bytes.Equal(full.Body.Bytes(), data) || full.Header().Get("Accept-Ranges") != "bytes" {
		t.Fatalf("GET: %d, %d bytes, Accept-Ranges %q", full.Code, full.Body.Len(), full.Header().Get("Accept-Ranges"))
	}
	etag := full.Header().Get("ETag")
	for i, tc := range []struct {
		header     []string
		status     int
		body       []byte
		contentRng string
	}{
		{[]string{"Range", "bytes=0-1023"}, http.StatusPartialContent, data[:1024], "bytes 0-1023/100000"},
		{[]string{"Range", "bytes=99990-"}, http.StatusPartialContent, data[99990:], "bytes 99990-99999/100000"},
		{[]string{"Range", "bytes=-10"}, http.StatusPartialContent, data[99990:], "bytes 99990-99999/100000"},
		{[]string{"Range", "bytes=100000-"}, http.StatusRequestedRangeNotSatisfiable, nil, "bytes */100000"},
		{[]string{"If-None-Match", etag}, http.StatusNotModified, nil, ""},
		{[]string{"If-None-Match", `"other"`}, http.StatusOK, data, ""},
		{[]string{"If-Modified-Since", info.Created.Add(time.Second).Format(http.TimeFormat)}, http.StatusNotModified, nil, ""},
		{[]string{"Range", "bytes=0-9", "If-Range", etag}, http.StatusPartialContent, data[:10], "bytes 0-9/100000"},
		{[]string{"Range", "bytes=0-9", "If-Range", `"other"`}, http.StatusOK, data, ""},
	} {
		w := serve(t, s, "abc", tc.header...)
		if w.Code != tc.status {
			t.Errorf("Test %d: %v: status %d, want %d", i, tc.header, w.Code, tc.status)
			continue
		}
		if tc.body != nil && !bytes.Equal(w.Body.Bytes(), tc.body) {
			t.Errorf("Test %d: %v: %d bytes, want %d", i, tc.header, w.Body.Len(), len(tc.body))
		}
		if got := w.Header().Get("Content-Range"); got != tc.contentRng {
			t.Errorf("Test %d: %v: Content-Range %q, want %q", i, tc.header, got, tc.contentRng)
		}
	}
}

func TestNotFound(t *testing.T) {
	s, c, _ := newStore(t)
	put(t, s, "kept", []byte("x"), c.now().Add(time.Hour))
	for i, id := range []string{"missing", "", "../kept", "kept.json", ".tmp-1", "k/ept"} {
		if m, err := s.Open(context.Background(), id); !errors.Is(err, store.ErrNotFound) {
			if m != nil {
				m.Content.Close()
			}
			t.Errorf("Test %d: Open(%q) = %v, want ErrNotFound", i, id, err)
		}
	}
	if _, err := s.Put(context.Background(), "../x", bytes.NewReader(nil), store.MediaPut{}); err == nil {
		t.Error("Put accepted an id that leaves the directory")
	}
}

func TestSizeLimitWhileStreaming(t *testing.T) {
	s, c, dir := newStore(t)
	for i, tc := range []struct {
		size, limit int64
		ok          bool
	}{
		{1000, 1000, true},
		{1001, 1000, false},
		{0, 1000, true},
	} {
		id := "f" + strconv.Itoa(i)
		// An endless source: only the limit stops the copy.
		src := io.LimitReader(endless{}, tc.size)
		if !tc.ok {
			src = endless{}
		}
		info, err := s.Put(context.Background(), id, src, store.MediaPut{ContentType: "image/png", Expires: c.now().Add(time.Hour), MaxBytes: tc.limit})
		if tc.ok && (err != nil || info.Size != tc.size) {
			t.Errorf("Test %d: %+v %v, want %d bytes stored", i, info, err, tc.size)
		}
		if !tc.ok && !errors.Is(err, store.ErrTooLarge) {
			t.Errorf("Test %d: err = %v, want ErrTooLarge", i, err)
		}
	}
	names := dirNames(t, dir)
	want := []string{"f0", "f0.json", "f2", "f2.json"}
	if !slices.Equal(names, want) {
		t.Errorf("directory holds %v, want %v (nothing of the refused file)", names, want)
	}
}

// endless reads as an infinite stream of 'x'.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// failing fails after n bytes, like a download cut short.
type failing struct{ n int }

func (f *failing) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("connection reset")
	}
	n := min(len(p), f.n)
	f.n -= n
	return n, nil
}

func TestFailedPutLeavesNothing(t *testing.T) {
	s, c, dir := newStore(t)
	_, err := s.Put(context.Background(), "cut", &failing{n: 100_000}, store.MediaPut{Expires: c.now().Add(time.Hour), MaxBytes: 1 << 20})
	if err == nil || err.Error() != "connection reset" {
		t.Fatalf("err = %v, want the reader's error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Put(ctx, "cancelled", bytes.NewReader([]byte("abc")), store.MediaPut{Expires: c.now().Add(time.Hour)}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled put: %v", err)
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Fatalf("failed puts left %v", names)
	}
}

func TestExpire(t *testing.T) {
	s, c, dir := newStore(t)
	put(t, s, "short", []byte("short-lived"), c.now().Add(time.Minute))
	put(t, s, "long", []byte("long-lived"), c.now().Add(time.Hour))
	if n, err := s.Expire(context.Background()); n != 0 || err != nil {
		t.Fatalf("Expire before any expiry = %d, %v", n, err)
	}
	c.add(time.Minute)
	// Past its expiry a file is never served, swept or not.
	if _, err := s.Open(context.Background(), "short"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("expired file opened: %v", err)
	}
	if n, err := s.Expire(context.Background()); n != 1 || err != nil {
		t.Fatalf("Expire = %d, %v, want 1", n, err)
	}
	if got, want := dirNames(t, dir), []string{"long", "long.json"}; !slices.Equal(got, want) {
		t.Fatalf("after Expire the directory holds %v, want %v", got, want)
	}
	if w := serve(t, s, "long"); w.Body.String() != "long-lived" {
		t.Fatalf("the unexpired file: %q", w.Body.String())
	}
}

// TestCrashLeftovers plants what a crash at each step of Put or Delete can
// leave and checks that none of it is served and all of it is cleaned up
// once stale, while a fresh temporary file (a Put in progress) is kept.
func TestCrashLeftovers(t *testing.T) {
	s, c, dir := newStore(t)
	info := put(t, s, "whole", []byte("published"), c.now().Add(48*time.Hour))
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(".tmp-123", "half a vid")                  // crashed while copying
	write("nometa", "bytes published, metadata not") // cannot happen by Put, but by hand
	write("nobytes.json", `{"content_type":"image/png","size":3,"expires":"`+info.Expires.Format(time.RFC3339)+`"}`)
	write("garbled.json", "{not json")
	for i, id := range []string{"nometa", "nobytes", "garbled", "tmp-123"} {
		if _, err := s.Open(context.Background(), id); err == nil {
			t.Errorf("Test %d: leftover %s is served", i, id)
		}
	}
	if n, err := s.Expire(context.Background()); n != 0 || err != nil {
		t.Fatalf("Expire of fresh leftovers = %d, %v; a write in progress must not be removed", n, err)
	}
	if got := len(dirNames(t, dir)); got != 6 {
		t.Fatalf("fresh leftovers removed: %v", dirNames(t, dir))
	}
	old := time.Now().Add(-StaleAfter - time.Minute)
	for _, name := range []string{".tmp-123", "nometa", "garbled.json"} {
		if err := os.Chtimes(filepath.Join(dir, name), old, old); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Expire(context.Background()); err != nil {
		t.Fatal(err)
	}
	// nobytes.json stays until its expiry, like any metadata.
	if got, want := dirNames(t, dir), []string{"nobytes.json", "whole", "whole.json"}; !slices.Equal(got, want) {
		t.Fatalf("after Expire the directory holds %v, want %v", got, want)
	}
	c.add(48 * time.Hour)
	if _, err := s.Expire(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := dirNames(t, dir); len(got) != 0 {
		t.Fatalf("after every expiry the directory holds %v", got)
	}
}

func TestConcurrentReaders(t *testing.T) {
	s, c, _ := newStore(t)
	data := payload(1<<20, 2)
	put(t, s, "shared", data, c.now().Add(time.Hour))
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 8 {
				start := (g*8 + i) * 4096
				end := start + 65535
				w := serve(t, s, "shared", "Range", "bytes="+strconv.Itoa(start)+"-"+strconv.Itoa(end))
				if w.Code != http.StatusPartialContent || !bytes.Equal(w.Body.Bytes(), data[start:end+1]) {
					errs <- "reader " + strconv.Itoa(g) + " got wrong bytes at " + strconv.Itoa(start)
					return
				}
			}
		}()
	}
	// Deleting while readers hold the file open does not disturb them.
	m, err := s.Open(context.Background(), "shared")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Content.Close()
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if err := s.Delete(context.Background(), "shared"); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(m.Content)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("a reader that opened the file before Delete read %d bytes, %v", len(got), err)
	}
	if _, err := s.Open(context.Background(), "shared"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted file opened: %v", err)
	}
}

func dirNames(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestPutRoom: a Put that Options.Room refuses, before the file or partway
// through it, fails with store.ErrStorageFull and leaves no file behind,
// so that media never eat into the store's reserve.
func TestPutRoom(t *testing.T) {
	for _, tc := range []struct {
		name     string
		allow    int // asks answered nil before the refusals
		size     int
		refusals int
	}{
		{"refused before the file", 0, 10, 1},
		{"refused partway", 2, 5 << 20, 1},
		{"room throughout", 100, 3 << 20, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			asks := 0
			s, err := Open(Options{Dir: dir, Room: func() error {
				asks++
				if asks > tc.allow {
					return fmt.Errorf("%w: test", store.ErrStorageFull)
				}
				return nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Put(context.Background(), "img1", bytes.NewReader(make([]byte, tc.size)), store.MediaPut{ContentType: "image/png"})
			entries, _ := os.ReadDir(dir)
			if tc.refusals == 0 {
				if err != nil || len(entries) != 2 {
					t.Fatalf("Put with room: %v, %d files", err, len(entries))
				}
				return
			}
			if !errors.Is(err, store.ErrStorageFull) {
				t.Fatalf("Put: %v, want store.ErrStorageFull", err)
			}
			if len(entries) != 0 {
				t.Fatalf("a refused Put left %d files", len(entries))
			}
		})
	}
}
