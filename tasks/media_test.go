package tasks

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/providers"
)

// pattern is an endless stream of pseudo-random bytes, generated on the
// fly so that a large body never exists in memory.
type pattern struct{ x uint64 }

func (p *pattern) Read(b []byte) (int, error) {
	for i := range b {
		p.x ^= p.x << 13
		p.x ^= p.x >> 7
		p.x ^= p.x << 17
		b[i] = byte(p.x)
	}
	return len(b), nil
}

const bigMedia = 50 << 20

// serveBig answers with n bytes of the pattern as an mp4, declaring its
// length only if declare is set (else the body is chunked).
func serveBig(n int64, declare bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "video/mp4")
		if declare {
			w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		}
		_, _ = io.CopyN(w, &pattern{x: 1}, n)
	}
}

// videoCall is the call of a finished OpenAI video job.
func videoCall(e *env, s *Service) *call {
	return &call{client: s.client, kind: providers.KindVideo, p: e.table.Provider("up"), attempt: providers.Attempt{BaseURL: e.srv.URL + "/v1", APIKey: "sk-upstream-1"}}
}

// TestDownloadStreams re-hosts a 50 MiB file and checks that it arrives
// whole while the copy allocates a small fraction of its size.
func TestDownloadStreams(t *testing.T) {
	e := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "sora-2", Kind: providers.KindVideo})
	e.mux.HandleFunc("GET /files/big", serveBig(bigMedia, true))
	s := e.service(nil)
	want := sha256.New()
	_, _ = io.CopyN(want, &pattern{x: 1}, bigMedia)
	ref := mediaRef{url: e.srv.URL + "/files/big"}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	urls, ids, err := s.rehost(context.Background(), videoCall(e, s), testMediaBase, []mediaRef{ref})
	runtime.ReadMemStats(&after)
	if err != nil || len(urls) != 1 || len(ids) != 1 {
		t.Fatalf("rehost: %v %v %v", urls, ids, err)
	}
	// The test's upstream and the store's background work allocate too,
	// but far less than one copy of the file.
	n := after.TotalAlloc - before.TotalAlloc
	if n > 4<<20 {
		t.Errorf("re-hosting a %d MiB file allocated %d KiB; it must stream", bigMedia>>20, n>>10)
	}
	t.Logf("re-hosting %d MiB allocated %d KiB", bigMedia>>20, n>>10)
	m, err := s.Media(context.Background(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	defer m.Content.Close()
	got := sha256.New()
	if _, err := io.Copy(got, m.Content); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Sum(nil), want.Sum(nil)) || m.Size != bigMedia || m.ContentType != "video/mp4" {
		t.Fatalf("the re-hosted file (%d bytes, %s) differs from the upstream's", m.Size, m.ContentType)
	}
}

// TestDownloadLimit checks that a file over the limit is refused, declared
// or not, and that nothing of it stays in the media store.
func TestDownloadLimit(t *testing.T) {
	e := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "sora-2", Kind: providers.KindVideo})
	e.mux.HandleFunc("GET /files/declared", serveBig(1<<20+1, true))
	e.mux.HandleFunc("GET /files/chunked", serveBig(1<<20+1, false))
	e.mux.HandleFunc("GET /files/fits", serveBig(1<<20, false))
	s := e.service(func(c *Config) { c.MaxMediaBytes = 1 << 20 })
	for i, tc := range []struct {
		path string
		ok   bool
	}{
		{"/files/declared", false},
		{"/files/chunked", false},
		{"/files/fits", true},
	} {
		// The files of an output are stored together or not at all.
		refs := []mediaRef{{data: mp4Bytes}, {url: e.srv.URL + tc.path}}
		_, ids, err := s.rehost(context.Background(), videoCall(e, s), testMediaBase, refs)
		if tc.ok != (err == nil) {
			t.Errorf("Test %d: %s: err = %v", i, tc.path, err)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), "size limit")) {
			t.Errorf("Test %d: %s: err = %v, want the size limit", i, tc.path, err)
		}
		if !tc.ok && len(ids) != 0 {
			t.Errorf("Test %d: %s: ids %v of a failed re-host", i, tc.path, ids)
		}
	}
	if n := countFiles(t, e); n != 4 {
		t.Errorf("the media store holds %d files, want 4: the bytes and metadata of the two files of the fitting output only", n)
	}
}

// countFiles counts the files in the env's media directory, after checking
// that none of them is due for deletion.
func countFiles(t *testing.T, e *env) int {
	t.Helper()
	n, err := e.media.Expire(context.Background())
	if err != nil || n != 0 {
		t.Fatalf("Expire: %d, %v", n, err)
	}
	return len(mediaDirNames(t, e))
}

// TestSniffedContentType checks that a file whose upstream type is not a
// video type gets the type its first bytes show.
func TestSniffedContentType(t *testing.T) {
	e := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "sora-2", Kind: providers.KindVideo})
	e.mux.HandleFunc("GET /files/octets", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(mp4Bytes)
	})
	s := e.service(nil)
	_, ids, err := s.rehost(context.Background(), videoCall(e, s), testMediaBase, []mediaRef{{url: e.srv.URL + "/files/octets"}, {data: mp4Bytes}})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"video/mp4", "video/mp4"} {
		ct, data, err := readMedia(s, ids[i])
		if err != nil || ct != want || len(data) == 0 {
			t.Errorf("Test %d: %q, %d bytes, %v; want %s", i, ct, len(data), err, want)
		}
	}
}

// TestLegacyMedia checks that files stored in the key-value store by
// earlier versions are served until they expire.
func TestLegacyMedia(t *testing.T) {
	e := imageEnv(t)
	s := e.service(nil)
	id := strings.Repeat("a", mediaIDLen)
	v := append([]byte{byte(len("image/png"))}, "image/png"...)
	v = append(v, pngBytes...)
	if err := e.db.Set(context.Background(), []byte("m/"+id), v, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	ct, data, err := readMedia(s, id)
	if err != nil || ct != "image/png" || !bytes.Equal(data, pngBytes) {
		t.Fatalf("legacy media: %q %q %v", ct, data, err)
	}
	m, err := s.Media(context.Background(), id)
	if err != nil || m.ETag() == `""` {
		t.Fatalf("legacy media has no ETag: %v", err)
	}
	m.Content.Close()
	waitFor(t, "the legacy media to expire", func() bool {
		_, _, err := readMedia(s, id)
		return err != nil
	})
}

func mediaDirNames(t *testing.T, e *env) []string {
	t.Helper()
	m, err := os.ReadDir(e.mediaDir)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(m))
	for _, d := range m {
		names = append(names, d.Name())
	}
	return names
}

// BenchmarkRehost50MiB re-hosts a 50 MiB download from a local upstream;
// B/op is what one re-host allocates, the upstream's work included.
func BenchmarkRehost50MiB(b *testing.B) {
	e := newEnv(b, providers.ProtocolOpenAI, &providers.Route{Pattern: "sora-2", Kind: providers.KindVideo})
	e.mux.HandleFunc("GET /files/big", serveBig(bigMedia, true))
	s := e.service(nil)
	ref := []mediaRef{{url: e.srv.URL + "/files/big"}}
	b.SetBytes(bigMedia)
	b.ReportAllocs()
	for b.Loop() {
		_, ids, err := s.rehost(context.Background(), videoCall(e, s), testMediaBase, ref)
		if err != nil {
			b.Fatal(err)
		}
		s.deleteMedia(context.Background(), ids)
	}
}
