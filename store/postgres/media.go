package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/caddy-air/caddy-air/store"
)

// mediaChunkSize is the length of a media file's rows: a reader holds one
// chunk in memory, a writer one more.
const mediaChunkSize = 1 << 20

// Media is the media repository: a file is a row of metadata and its bytes
// in rows of 1 MiB (bytea, stored without compression attempts), so every
// instance serves every file. Put writes them in one transaction, so a
// file is visible whole or not at all; readers fetch one chunk at a time.
// Limits: a file is at most what one transaction may write comfortably
// (the gateway caps media at 60 MiB); PostgreSQL's storage holds them until
// they expire (Expire, run by the retention job).
type Media struct {
	db *DB
}

// Put implements store.MediaStore.
func (m *Media) Put(ctx context.Context, id string, r io.Reader, p store.MediaPut) (store.MediaInfo, error) {
	info := store.MediaInfo{ContentType: p.ContentType, Created: time.Now().UTC().Truncate(time.Microsecond), Expires: p.Expires.UTC().Truncate(time.Microsecond)}
	err := pgx.BeginFunc(ctx, m.db.pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO air_media (id, content_type, size, sha256, created, expires, chunk_size)
			VALUES ($1, $2, 0, '', $3, $4, $5)`, id, p.ContentType, info.Created, info.Expires, mediaChunkSize)
		if isUniqueViolation(err) {
			return fmt.Errorf("media %s: %w", id, store.ErrExists)
		}
		if err != nil {
			return err
		}
		h := sha256.New()
		buf := make([]byte, mediaChunkSize)
		for n := 0; ; n++ {
			k, rerr := io.ReadFull(r, buf)
			if k > 0 {
				info.Size += int64(k)
				if p.MaxBytes > 0 && info.Size > p.MaxBytes {
					return store.ErrTooLarge
				}
				h.Write(buf[:k])
				if _, err := tx.Exec(ctx, `INSERT INTO air_media_chunks (id, n, data) VALUES ($1, $2, $3)`, id, n, buf[:k]); err != nil {
					return err
				}
			}
			if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
				break
			}
			if rerr != nil {
				return rerr
			}
		}
		info.SHA256 = hex.EncodeToString(h.Sum(nil))
		_, err = tx.Exec(ctx, `UPDATE air_media SET size = $2, sha256 = $3 WHERE id = $1`, id, info.Size, info.SHA256)
		return err
	})
	if err != nil {
		return store.MediaInfo{}, err
	}
	return info, nil
}

// Open implements store.MediaStore.
func (m *Media) Open(ctx context.Context, id string) (*store.Media, error) {
	var info store.MediaInfo
	var chunk int
	err := m.db.pool.QueryRow(ctx, `SELECT content_type, size, sha256, created, expires, chunk_size FROM air_media
		WHERE id = $1 AND expires > now()`, id).Scan(&info.ContentType, &info.Size, &info.SHA256, &info.Created, &info.Expires, &chunk)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	info.Created, info.Expires = info.Created.UTC(), info.Expires.UTC()
	return &store.Media{MediaInfo: info, Content: &mediaReader{db: m.db, id: id, size: info.Size, chunkSize: int64(chunk), cur: -1}}, nil
}

// Delete implements store.MediaStore.
func (m *Media) Delete(ctx context.Context, id string) error {
	_, err := m.db.pool.Exec(ctx, `DELETE FROM air_media WHERE id = $1`, id)
	return err
}

// Expire implements store.MediaStore.
func (m *Media) Expire(ctx context.Context) (int, error) {
	tag, err := m.db.pool.Exec(ctx, `DELETE FROM air_media WHERE expires <= now()`)
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}

// mediaReader reads a stored file chunk by chunk, keeping one in memory.
type mediaReader struct {
	db        *DB
	id        string
	size      int64
	chunkSize int64
	off       int64
	cur       int64 // index of the chunk in data; -1 for none
	data      []byte
}

func (r *mediaReader) Read(p []byte) (int, error) {
	if r.off >= r.size {
		return 0, io.EOF
	}
	n := r.off / r.chunkSize
	if n != r.cur {
		r.data = r.data[:0]
		err := r.db.pool.QueryRow(context.Background(), `SELECT data FROM air_media_chunks WHERE id = $1 AND n = $2`, r.id, n).Scan(&r.data)
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, fmt.Errorf("media %s: chunk %d is gone (expired?): %w", r.id, n, io.ErrUnexpectedEOF)
		}
		if err != nil {
			return 0, err
		}
		r.cur = n
	}
	k := copy(p, r.data[r.off-n*r.chunkSize:])
	if k == 0 {
		return 0, io.ErrUnexpectedEOF
	}
	r.off += int64(k)
	return k, nil
}

func (r *mediaReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += r.off
	case io.SeekEnd:
		offset += r.size
	default:
		return 0, errors.New("media: invalid whence")
	}
	if offset < 0 {
		return 0, errors.New("media: negative position")
	}
	r.off = offset
	return offset, nil
}

func (r *mediaReader) Close() error { return nil }

// Interface guard.
var _ store.MediaStore = (*Media)(nil)
