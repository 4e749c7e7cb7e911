// Package mediafs keeps media files in a directory: each file's bytes as
// they are, beside a small JSON sidecar with its content type, size,
// SHA-256 and expiry. A file is written to a temporary file in the same
// directory, synced and renamed into place, so that readers never see a
// partial file, and it is read straight from disk, so that neither writing
// nor serving it holds it in memory.
package mediafs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// File names in the directory: "<id>" holds the bytes, "<id>.json" the
// metadata, and ".tmp-*" files are being written.
const (
	sidecarExt = ".json"
	tempPrefix = ".tmp-"
)

// maxIDLen bounds the length of an id, which is a file name.
const maxIDLen = 128

// maxContentType bounds a stored content type.
const maxContentType = 255

// StaleAfter is how long a temporary file may go unmodified before Expire
// deletes it as the leftover of a crash; a file being written is modified
// at every write, and a download stalls for less than a provider timeout.
const StaleAfter = time.Hour

// Options configures a Store.
type Options struct {
	// Dir is the directory of the files; it is created if missing.
	Dir string
	// Now returns the current time, which decides expiry; nil means
	// time.Now.
	Now func() time.Time
	// Room, if set, is asked before a file is written and after each
	// roomEvery bytes of it: an error (store.ErrStorageFull) stops the
	// write and leaves nothing behind, so that media never take the free
	// space that the store keeps for its own writes.
	Room func() error
}

// roomEvery is how many bytes of a file are written between two asks of
// Options.Room.
const roomEvery = 1 << 20

// Store is a store.MediaStore on a directory. It is safe for concurrent
// use, also by several Stores on one directory.
type Store struct {
	dir  string
	now  func() time.Time
	room func() error
}

// Open returns the Store of o.Dir, creating the directory if needed. It
// reads none of the files already there.
func Open(o Options) (*Store, error) {
	if o.Dir == "" {
		return nil, errors.New("mediafs: no directory")
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("mediafs: %w", err)
	}
	s := &Store{dir: o.Dir, now: o.Now, room: o.Room}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

// sidecar is the JSON form of a file's metadata.
type sidecar struct {
	ContentType string    `json:"content_type"`
	Size        int64     `json:"size"`
	SHA256      string    `json:"sha256"`
	Created     time.Time `json:"created"`
	Expires     time.Time `json:"expires"`
}

// Put implements store.MediaStore. It copies r to a temporary file through
// a fixed-size buffer, hashing as it goes, and stops at p.MaxBytes+1 bytes:
// a longer r is store.ErrTooLarge and leaves nothing behind. The sidecar is
// published before the bytes, so a published file always has its metadata.
func (s *Store) Put(ctx context.Context, id string, r io.Reader, p store.MediaPut) (store.MediaInfo, error) {
	if !validID(id) {
		return store.MediaInfo{}, fmt.Errorf("mediafs: invalid id %q", id)
	}
	if len(p.ContentType) > maxContentType {
		return store.MediaInfo{}, errors.New("mediafs: content type too long")
	}
	limit := p.MaxBytes
	if limit <= 0 {
		limit = math.MaxInt64 - 1
	}
	if err := s.hasRoom(); err != nil {
		return store.MediaInfo{}, err
	}
	f, err := os.CreateTemp(s.dir, tempPrefix+"*")
	if err != nil {
		return store.MediaInfo{}, fmt.Errorf("mediafs: %w", err)
	}
	tmp := f.Name()
	published := false
	defer func() {
		if !published {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	h := sha256.New()
	n, err := io.Copy(&roomWriter{f: f, s: s}, io.TeeReader(io.LimitReader(r, limit+1), h))
	if err != nil {
		return store.MediaInfo{}, full(err)
	}
	if n > limit {
		return store.MediaInfo{}, store.ErrTooLarge
	}
	if err := ctx.Err(); err != nil {
		return store.MediaInfo{}, err
	}
	if err := f.Sync(); err != nil {
		return store.MediaInfo{}, full(fmt.Errorf("mediafs: %w", err))
	}
	if err := f.Close(); err != nil {
		return store.MediaInfo{}, full(fmt.Errorf("mediafs: %w", err))
	}
	info := store.MediaInfo{
		ContentType: p.ContentType, Size: n, SHA256: hex.EncodeToString(h.Sum(nil)),
		Created: s.now().UTC(), Expires: p.Expires.UTC(),
	}
	if err := s.writeSidecar(id, info); err != nil {
		return store.MediaInfo{}, err
	}
	if err := os.Rename(tmp, s.path(id)); err != nil {
		_ = os.Remove(s.path(id) + sidecarExt)
		return store.MediaInfo{}, fmt.Errorf("mediafs: %w", err)
	}
	published = true
	if err := syncDir(s.dir); err != nil {
		_ = s.Delete(context.WithoutCancel(ctx), id)
		return store.MediaInfo{}, err
	}
	return info, nil
}

// writeSidecar publishes the metadata of id, synced, by rename.
func (s *Store) writeSidecar(id string, info store.MediaInfo) error {
	data, err := json.Marshal(sidecar(info))
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(s.dir, tempPrefix+"*")
	if err != nil {
		return fmt.Errorf("mediafs: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), s.path(id)+sidecarExt)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return full(fmt.Errorf("mediafs: %w", err))
	}
	return nil
}

// hasRoom asks Options.Room, if set.
func (s *Store) hasRoom() error {
	if s.room == nil {
		return nil
	}
	return s.room()
}

// roomWriter writes to f, asking s.hasRoom after every roomEvery bytes.
type roomWriter struct {
	f     *os.File
	s     *Store
	since int64 // bytes written since the last ask
}

func (w *roomWriter) Write(b []byte) (int, error) {
	if w.since >= roomEvery {
		if err := w.s.hasRoom(); err != nil {
			return 0, err
		}
		w.since = 0
	}
	n, err := w.f.Write(b)
	w.since += int64(n)
	return n, err
}

// full returns err wrapped as store.ErrStorageFull when it is ENOSPC (or
// EDQUOT), err otherwise.
func full(err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("%w: %w", store.ErrStorageFull, err)
	}
	return err
}

// Open implements store.MediaStore. The content is the *os.File itself, so
// that http.ServeContent can hand it to sendfile.
func (s *Store) Open(_ context.Context, id string) (*store.Media, error) {
	if !validID(id) {
		return nil, store.ErrNotFound
	}
	info, err := s.readSidecar(id)
	if err != nil {
		return nil, err
	}
	if !s.now().Before(info.Expires) {
		return nil, store.ErrNotFound
	}
	f, err := os.Open(s.path(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("mediafs: %w", err)
	}
	st, err := f.Stat()
	if err == nil && st.Size() != info.Size {
		err = fmt.Errorf("mediafs: %s holds %d bytes, its metadata says %d", id, st.Size(), info.Size)
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return &store.Media{MediaInfo: info, Content: f}, nil
}

// readSidecar returns the metadata of id, or store.ErrNotFound.
func (s *Store) readSidecar(id string) (store.MediaInfo, error) {
	data, err := os.ReadFile(s.path(id) + sidecarExt)
	if errors.Is(err, fs.ErrNotExist) {
		return store.MediaInfo{}, store.ErrNotFound
	}
	if err != nil {
		return store.MediaInfo{}, fmt.Errorf("mediafs: %w", err)
	}
	var sc sidecar
	if err := json.Unmarshal(data, &sc); err != nil {
		return store.MediaInfo{}, fmt.Errorf("mediafs: metadata of %s: %w", id, err)
	}
	return store.MediaInfo(sc), nil
}

// Delete implements store.MediaStore. The bytes go first, so that a file
// is never served without its metadata; readers that have it open go on
// reading it.
func (s *Store) Delete(_ context.Context, id string) error {
	if !validID(id) {
		return nil
	}
	if err := os.Remove(s.path(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("mediafs: %w", err)
	}
	if err := os.Remove(s.path(id) + sidecarExt); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("mediafs: %w", err)
	}
	return nil
}

// path is the file of id's bytes.
func (s *Store) path(id string) string { return filepath.Join(s.dir, id) }

// validID reports whether id can name a file here: letters, digits, "-"
// and "_" only, so that it has no dot and cannot clash with a sidecar or a
// temporary file, nor leave the directory.
func validID(id string) bool {
	if id == "" || len(id) > maxIDLen {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// idOf returns the id of a sidecar or data file name, or "" for other
// names.
func idOf(name string) string {
	id := strings.TrimSuffix(name, sidecarExt)
	if !validID(id) {
		return ""
	}
	return id
}

// syncDir makes the renames in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("mediafs: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("mediafs: %w", err)
	}
	return nil
}

// Interface guard.
var _ store.MediaStore = (*Store)(nil)
