package badger

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// checkPrivate fails unless dir is 0700 and every regular file in it 0600.
func checkPrivate(t *testing.T, dir, when string) {
	t.Helper()
	info, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m := info.Mode().Perm(); m != 0o700 {
		t.Errorf("%s: the store's directory is %o, want 700", when, m)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		files++
		info, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if m := info.Mode().Perm(); m != 0o600 {
			t.Errorf("%s: %s is %o, want 600", when, e.Name(), m)
		}
	}
	if files == 0 {
		t.Fatalf("%s: no files in %s", when, dir)
	}
}

// The store's files hold user ids, key names and hashes, and budgets:
// they are its user's alone, in a new install and in an existing one whose
// files were made under the umask (0644 in a 0755 directory).
func TestStoreFilesArePrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "air")
	db, err := Open(Options{Dir: dir, GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	checkPrivate(t, dir, "a new store")
	for i := range 3000 {
		k := []byte{'t', '/', byte(i >> 8), byte(i)}
		if err := db.Set(context.Background(), k, make([]byte, 2048), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	checkPrivate(t, dir, "after writes (flushed tables, value log) and close")

	// An install made before: everything readable by others.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Type().IsRegular() {
			_ = os.Chmod(filepath.Join(dir, e.Name()), 0o644)
		}
	}
	db, err = Open(Options{Dir: dir, GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checkPrivate(t, dir, "an existing install, reopened")
}
