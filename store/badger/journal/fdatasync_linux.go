package journal

import (
	"os"
	"syscall"
)

// fdatasync flushes f's data, and the metadata needed to read it back,
// but not its times.
func fdatasync(f *os.File) error {
	raw, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = syscall.Fdatasync(int(fd)) }); err != nil {
		return err
	}
	return serr
}
