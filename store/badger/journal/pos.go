package journal

import (
	"encoding/binary"
	"fmt"
)

// Pos is a position in the journal: a segment's sequence number and a byte
// offset in it. Positions order like the entries they point to.
type Pos struct {
	// Segment is the sequence number of a segment, from 1.
	Segment uint64
	// Offset is a byte offset into the segment.
	Offset int64
}

// Less reports whether p comes before q.
func (p Pos) Less(q Pos) bool {
	return p.Segment < q.Segment || p.Segment == q.Segment && p.Offset < q.Offset
}

// IsZero reports whether p is the zero position, which comes before every
// entry.
func (p Pos) IsZero() bool { return p == Pos{} }

// AppendBinary appends the 16-byte form of p to b.
func (p Pos) AppendBinary(b []byte) ([]byte, error) {
	b = binary.BigEndian.AppendUint64(b, p.Segment)
	return binary.BigEndian.AppendUint64(b, uint64(p.Offset)), nil
}

// UnmarshalBinary reads the 16-byte form of a position.
func (p *Pos) UnmarshalBinary(b []byte) error {
	if len(b) != 16 {
		return fmt.Errorf("journal: position of %d bytes, want 16", len(b))
	}
	p.Segment = binary.BigEndian.Uint64(b)
	p.Offset = int64(binary.BigEndian.Uint64(b[8:]))
	return nil
}

// String shows p as segment:offset.
func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Segment, p.Offset) }
