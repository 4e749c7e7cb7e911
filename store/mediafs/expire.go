package mediafs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// expireBatch is how many directory entries Expire reads at once, so that a
// directory of many files is swept in bounded memory.
const expireBatch = 256

// Expire implements store.MediaStore. It deletes the files whose expiry
// has passed, temporary files unmodified for StaleAfter (left by a crash),
// and files left without metadata (or with unreadable metadata) for as
// long. It reads only metadata, never the files' bytes.
func (s *Store) Expire(ctx context.Context) (int, error) {
	d, err := os.Open(s.dir)
	if err != nil {
		return 0, fmt.Errorf("mediafs: %w", err)
	}
	defer d.Close()
	now := s.now()
	deleted := 0
	for {
		if err := ctx.Err(); err != nil {
			return deleted, err
		}
		entries, err := d.ReadDir(expireBatch)
		for _, e := range entries {
			n, serr := s.expireEntry(ctx, e, now)
			deleted += n
			if serr != nil {
				return deleted, serr
			}
		}
		if errors.Is(err, io.EOF) {
			return deleted, nil
		}
		if err != nil {
			return deleted, fmt.Errorf("mediafs: %w", err)
		}
	}
}

// expireEntry deletes what of one directory entry is due and returns how
// many media files that removed.
func (s *Store) expireEntry(ctx context.Context, e fs.DirEntry, now time.Time) (int, error) {
	name := e.Name()
	switch {
	case strings.HasPrefix(name, tempPrefix):
		return 0, s.removeStale(name, now)
	case strings.HasSuffix(name, sidecarExt):
		id := idOf(name)
		if id == "" {
			return 0, nil
		}
		info, err := s.readSidecar(id)
		if errors.Is(err, store.ErrNotFound) {
			return 0, nil // deleted meanwhile
		}
		if err != nil {
			// Unreadable metadata: the file cannot be served; drop it once
			// it is clearly not being written.
			if stale, serr := s.stale(name, now); serr != nil || !stale {
				return 0, serr
			}
		} else if now.Before(info.Expires) {
			return 0, nil
		}
		return 1, s.Delete(ctx, id)
	default:
		id := idOf(name)
		if id == "" {
			return 0, nil
		}
		// Bytes without metadata are never served (Open needs both).
		if _, err := os.Lstat(s.path(id) + sidecarExt); !errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		return 0, s.removeStale(name, now)
	}
}

// removeStale removes the file name if it went unmodified for StaleAfter.
func (s *Store) removeStale(name string, now time.Time) error {
	stale, err := s.stale(name, now)
	if err != nil || !stale {
		return err
	}
	if err := os.Remove(filepath.Join(s.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("mediafs: %w", err)
	}
	return nil
}

// stale reports whether the file name went unmodified for StaleAfter; a
// file that is gone is not stale.
func (s *Store) stale(name string, now time.Time) (bool, error) {
	st, err := os.Lstat(filepath.Join(s.dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("mediafs: %w", err)
	}
	return now.Sub(st.ModTime()) >= StaleAfter, nil
}
