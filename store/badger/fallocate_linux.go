package badger

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// fallocate allocates blocks for the first size bytes of f, keeping its
// data. A file system without fallocate (EOPNOTSUPP) is left as it is:
// writes then rely on the reserve alone.
func fallocate(f *os.File, size int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) {
		return nil
	}
	return err
}
