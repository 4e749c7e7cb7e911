package badger

import (
	"fmt"
	"os"
	"path/filepath"
)

// Modes of the store's directory and of the files in it: they hold user
// ids, key names and hashes, budgets and spend, for the gateway's user
// alone.
const (
	dirMode  os.FileMode = 0o700
	fileMode os.FileMode = 0o600
)

// private makes dir (created if missing) dirMode and the regular files
// directly in it fileMode. Badger creates its files 0666 less the umask
// (0644 under the usual 022) and has no option for their mode, and a
// process-wide umask would change every other file Caddy writes; so the
// directory closes them to others, and the store narrows the files' modes
// itself: at open (before and after Badger's, fixing the modes of an
// existing install), after each compaction and value-log GC, and at close.
// Subdirectories (the ledger's journal, media) keep their own modes.
func private(dir string) error {
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return err
	}
	if err := os.Chmod(dir, dirMode); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile (a compaction's old table)
		}
		if info.Mode().Perm() == fileMode {
			continue
		}
		if err := os.Chmod(filepath.Join(dir, e.Name()), fileMode); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("narrowing the mode of %s: %w", e.Name(), err)
		}
	}
	return nil
}
