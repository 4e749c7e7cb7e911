package journal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
)

// frameHeader is the size of an entry's frame header: the entry's length
// and its CRC-32C, both little-endian uint32.
const frameHeader = 8

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// readFrame reads one frame from r into *payload (reusing its memory) and
// returns the frame's size. It returns io.EOF at the end of r, and
// ErrCorrupt or io.ErrUnexpectedEOF for a bad or torn frame.
func readFrame(r *bufio.Reader, payload *[]byte) (int64, error) {
	var hdr [frameHeader]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, err
	}
	n, ok := frameLen(hdr[:])
	if !ok {
		return 0, ErrCorrupt
	}
	if cap(*payload) < n {
		*payload = make([]byte, n)
	}
	*payload = (*payload)[:n]
	if _, err := io.ReadFull(r, *payload); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, err
	}
	if !frameSumOK(hdr[:], *payload) {
		return 0, ErrCorrupt
	}
	return frameHeader + int64(n), nil
}

// frameLen returns the payload length that the frame header hdr states,
// and whether it can be an entry's: appended entries are never empty (a
// zero length is a torn or zeroed tail, or corruption) nor larger than
// MaxEntrySize.
func frameLen(hdr []byte) (int, bool) {
	n := binary.LittleEndian.Uint32(hdr[:4])
	return int(n), n != 0 && n <= MaxEntrySize
}

// frameSumOK reports whether payload has the checksum of frame header hdr.
func frameSumOK(hdr, payload []byte) bool {
	return crc32.Checksum(payload, crcTable) == binary.LittleEndian.Uint32(hdr[4:])
}
