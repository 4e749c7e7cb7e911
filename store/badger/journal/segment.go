package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// segmentExt ends the name of every segment file.
const segmentExt = ".seg"

// segmentTimeLayout is the layout of the creation time in a segment's name.
const segmentTimeLayout = "20060102T150405.000000000Z"

// segment is one segment file.
type segment struct {
	seq     uint64
	created time.Time
	size    int64 // bytes of whole entries; only the last segment grows
}

// name is the segment's file name.
func (s segment) name() string {
	return fmt.Sprintf("%016x-%s%s", s.seq, s.created.UTC().Format(segmentTimeLayout), segmentExt)
}

// parseSegmentName parses a segment's file name.
func parseSegmentName(name string) (segment, bool) {
	base, ok := strings.CutSuffix(name, segmentExt)
	if !ok {
		return segment{}, false
	}
	seqHex, ts, ok := strings.Cut(base, "-")
	if !ok {
		return segment{}, false
	}
	seq, err := strconv.ParseUint(seqHex, 16, 64)
	if err != nil || seq == 0 {
		return segment{}, false
	}
	created, err := time.Parse(segmentTimeLayout, ts)
	if err != nil {
		return segment{}, false
	}
	return segment{seq: seq, created: created}, true
}

// path is the file path of s.
func (j *Journal) path(s segment) string { return filepath.Join(j.opts.Dir, s.name()) }

// RemoveBefore deletes the segments whose every entry was appended before
// t, except the last segment, and returns how many it deleted.
func (j *Journal) RemoveBefore(t time.Time) (int, error) {
	j.mu.Lock()
	n := 0
	for n+1 < len(j.segs) && !j.segs[n+1].created.After(t) {
		n++
	}
	return j.removeFirst(n)
}

// RemoveThrough deletes the segments up to and including the one with
// sequence number seq, except the last segment, and returns how many it
// deleted.
func (j *Journal) RemoveThrough(seq uint64) (int, error) {
	j.mu.Lock()
	n := 0
	for n+1 < len(j.segs) && j.segs[n].seq <= seq {
		n++
	}
	return j.removeFirst(n)
}

// removeFirst deletes the first n segments; j.mu must be held, and is
// released.
func (j *Journal) removeFirst(n int) (int, error) {
	gone := slices.Clone(j.segs[:n])
	j.segs = slices.Delete(j.segs, 0, n)
	j.mu.Unlock()
	var errs []error
	if n > 0 {
		j.damage.forget(gone[n-1].seq)
	}
	for _, s := range gone {
		if err := os.Remove(j.path(s)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return n, errors.Join(errs...)
}
