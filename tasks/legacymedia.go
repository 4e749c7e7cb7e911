package tasks

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

// legacyMedia returns a file stored by an earlier version, or
// store.ErrNotFound.
func (s *Service) legacyMedia(ctx context.Context, id string) (*store.Media, error) {
	v, err := s.store.Get(ctx, []byte(legacyMediaPrefix+id))
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
