//go:build !linux

package journal

// mapping is empty where the journal does not map (see mapped_linux.go):
// Options.Mapped is ignored and appends use write(2).
type mapping struct{}

// mappingSupported reports whether Options.Mapped takes effect here.
const mappingSupported = false

// writeMapped is not called where mappingSupported is false.
func (j *Journal) writeMapped(buf []byte, off int64) error {
	_, err := j.file.WriteAt(buf, off)
	return err
}

// unmap has nothing to remove.
func (j *Journal) unmap() error { return nil }
