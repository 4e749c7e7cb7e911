package store

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrTooLarge is returned by MediaStore.Put when the content is longer than
// MediaPut.MaxBytes; nothing is stored then.
var ErrTooLarge = errors.New("store: media exceeds the size limit")

// MediaPut describes a file given to MediaStore.Put.
type MediaPut struct {
	// ContentType is the file's MIME type, at most 255 bytes.
	ContentType string
	// Expires is when the file stops being served.
	Expires time.Time
	// MaxBytes bounds the file's length; zero or less means no bound.
	MaxBytes int64
}

// MediaInfo describes a stored media file.
type MediaInfo struct {
	// ContentType is the file's MIME type.
	ContentType string
	// Size is the length of the file in bytes.
	Size int64
	// SHA256 is the hex SHA-256 of the file, computed while it was stored.
	SHA256 string
	// Created is when the file was stored; it serves as Last-Modified.
	Created time.Time
	// Expires is when the file stops being served.
	Expires time.Time
}

// ETag returns a strong HTTP entity tag of the file, from its content hash.
func (i MediaInfo) ETag() string {
	return `"` + i.SHA256[:min(32, len(i.SHA256))] + `"`
}

// Media is an open media file.
type Media struct {
	MediaInfo
	// Content reads the file's Size bytes. It can seek, so that
	// http.ServeContent serves ranges of it without reading the rest. The
	// caller must close it.
	Content io.ReadSeekCloser
}

// MediaStore keeps media files, such as the images and videos that tasks
// re-host: written once from a stream, read many times in part or whole,
// deleted when they expire. Implementations never hold a whole file in
// memory.
type MediaStore interface {
	// Put stores the bytes of r under id, which must be new: letters,
	// digits, "-" and "_". The file is visible to Open only once it is
	// stored whole. Content longer than p.MaxBytes is ErrTooLarge.
	Put(ctx context.Context, id string, r io.Reader, p MediaPut) (MediaInfo, error)
	// Open returns the file stored under id, or ErrNotFound if there is
	// none or it has expired.
	Open(ctx context.Context, id string) (*Media, error)
	// Delete removes the file stored under id. Deleting a missing file is
	// not an error.
	Delete(ctx context.Context, id string) error
	// Expire deletes the files that have expired and returns how many.
	Expire(ctx context.Context) (int, error)
}
