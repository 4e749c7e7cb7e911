package storetest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// RunMedia checks store.MediaStore: put from a stream and open whole or
// in part, the size limit, delete, and expiry.
func RunMedia(t *testing.T, b Backend) {
	ctx := context.Background()
	m := b.open(t).r.Media
	data := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	now := time.Now()
	info, err := m.Put(ctx, "vid_1", bytes.NewReader(data), store.MediaPut{ContentType: "video/mp4", Expires: now.Add(time.Hour), MaxBytes: 2 << 20})
	if err != nil || info.Size != int64(len(data)) || info.ContentType != "video/mp4" || len(info.SHA256) != 64 {
		t.Fatalf("Put = %+v, %v", info, err)
	}
	f, err := m.Open(ctx, "vid_1")
	must(t, err)
	if f.Size != int64(len(data)) || f.ETag() != info.ETag() || f.ContentType != "video/mp4" {
		t.Errorf("Open = %+v", f.MediaInfo)
	}
	// A range is read without the rest.
	if _, err := f.Content.Seek(1<<19+3, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	part := make([]byte, 10)
	if _, err := io.ReadFull(f.Content, part); err != nil || !bytes.Equal(part, data[1<<19+3:1<<19+13]) {
		t.Errorf("range read %q, %v", part, err)
	}
	must(t, f.Content.Close())
	f, err = m.Open(ctx, "vid_1")
	must(t, err)
	all, err := io.ReadAll(f.Content)
	f.Content.Close()
	if err != nil || !bytes.Equal(all, data) {
		t.Errorf("whole read: %d bytes, %v", len(all), err)
	}

	if _, err := m.Put(ctx, "big", strings.NewReader(strings.Repeat("x", 1000)), store.MediaPut{ContentType: "image/png", Expires: now.Add(time.Hour), MaxBytes: 999}); !errors.Is(err, store.ErrTooLarge) {
		t.Errorf("Put beyond MaxBytes = %v, want ErrTooLarge", err)
	}
	if _, err := m.Open(ctx, "big"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a file over the limit was stored: %v", err)
	}
	if _, err := m.Open(ctx, "missing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Open(missing) = %v, want ErrNotFound", err)
	}
	must(t, m.Delete(ctx, "vid_1"))
	must(t, m.Delete(ctx, "vid_1"))
	if _, err := m.Open(ctx, "vid_1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Open after Delete = %v", err)
	}

	// Expiry: an expired file is not served, and Expire deletes it.
	_, err = m.Put(ctx, "short", strings.NewReader("bye"), store.MediaPut{ContentType: "text/plain", Expires: time.Now().Add(300 * time.Millisecond)})
	must(t, err)
	_, err = m.Put(ctx, "long", strings.NewReader("stay"), store.MediaPut{ContentType: "text/plain", Expires: time.Now().Add(time.Hour)})
	must(t, err)
	time.Sleep(400 * time.Millisecond)
	if _, err := m.Open(ctx, "short"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Open of an expired file = %v, want ErrNotFound", err)
	}
	n, err := m.Expire(ctx)
	if err != nil || n != 1 {
		t.Errorf("Expire = %d, %v; want 1", n, err)
	}
	if f, err := m.Open(ctx, "long"); err != nil {
		t.Errorf("Expire deleted an unexpired file: %v", err)
	} else {
		f.Content.Close()
	}
}
