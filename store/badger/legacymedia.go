package badger

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"

	"github.com/caddy-air/caddy-air/store"
)

// legacyMediaPrefix holds the files that versions before the media store
// kept in the key-value store: "m/<id>" → content type and bytes, with
// the media TTL. Nothing is written there any more; what is left is served
// until it expires, so that links handed out before an upgrade keep
// working for as long as promised. Each such read holds its file in
// memory, as those versions did. Remove this fallback once no deployment
// can hold such records (one media TTL after every deployment upgraded).
const legacyMediaPrefix = "m/"

// LegacyMedia is a MediaStore that serves, after the files of its
// MediaStore, the files that earlier versions kept in db.
type LegacyMedia struct {
	store.MediaStore
	db *DB
}

// WithLegacyMedia returns m, falling back to the files kept in db.
func WithLegacyMedia(m store.MediaStore, db *DB) *LegacyMedia {
	return &LegacyMedia{MediaStore: m, db: db}
}

// Open implements store.MediaStore.
func (l *LegacyMedia) Open(ctx context.Context, id string) (*store.Media, error) {
	m, err := l.MediaStore.Open(ctx, id)
	if !errors.Is(err, store.ErrNotFound) {
		return m, err
	}
	v, err := l.db.Get(ctx, []byte(legacyMediaPrefix+id))
	if err != nil {
		return nil, err
	}
	if len(v) == 0 || len(v) < 1+int(v[0]) {
		return nil, errors.New("corrupt media record")
	}
	n := int(v[0])
	data := v[1+n:]
	sum := sha256.Sum256(data)
	return &store.Media{
		MediaInfo: store.MediaInfo{ContentType: string(v[1 : 1+n]), Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])},
		Content:   nopCloser{bytes.NewReader(data)},
	}, nil
}

// nopCloser adds a Close that does nothing to a ReadSeeker.
type nopCloser struct{ io.ReadSeeker }

func (nopCloser) Close() error { return nil }

// Interface guard.
var _ store.MediaStore = (*LegacyMedia)(nil)
