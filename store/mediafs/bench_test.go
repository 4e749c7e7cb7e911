package mediafs

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// discardResponse is a ResponseWriter that drops the body, like a client
// that reads as fast as the disk delivers.
type discardResponse struct{ h http.Header }

func (d *discardResponse) Header() http.Header         { return d.h }
func (d *discardResponse) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardResponse) WriteHeader(int)             {}

const benchSize = 50 << 20

// BenchmarkServe50MiB serves a 50 MiB file whole through http.ServeContent,
// as air_media does; B/op is what one download allocates.
func BenchmarkServe50MiB(b *testing.B) {
	s, c, _ := newStore(b)
	if _, err := s.Put(context.Background(), "big", io.LimitReader(endless{}, benchSize), store.MediaPut{ContentType: "video/mp4", Expires: c.now().Add(time.Hour)}); err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/media/big", nil)
	b.SetBytes(benchSize)
	b.ReportAllocs()
	for b.Loop() {
		m, err := s.Open(req.Context(), "big")
		if err != nil {
			b.Fatal(err)
		}
		w := &discardResponse{h: http.Header{}}
		w.h.Set("Content-Type", m.ContentType)
		w.h.Set("ETag", m.ETag())
		http.ServeContent(w, req, "", m.Created, m.Content)
		m.Content.Close()
	}
}

// BenchmarkPut50MiB stores a 50 MiB stream; B/op is what one put allocates.
func BenchmarkPut50MiB(b *testing.B) {
	s, c, _ := newStore(b)
	b.SetBytes(benchSize)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Put(context.Background(), "big", io.LimitReader(endless{}, benchSize), store.MediaPut{ContentType: "video/mp4", Expires: c.now().Add(time.Hour)}); err != nil {
			b.Fatal(err)
		}
	}
}
