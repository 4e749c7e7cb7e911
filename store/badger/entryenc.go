package badger

import (
	"bytes"
	"encoding/binary"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/caddy-air/caddy-air/store"
)

// bufferEncMode is CBOR's default encoding (that of cbor.Marshal) into a
// caller's buffer.
var bufferEncMode = func() cbor.UserBufferEncMode {
	em, err := cbor.EncOptions{}.UserBufferEncMode()
	if err != nil {
		panic(err)
	}
	return em
}()

// entryEncoder encodes journal entries as encodeEntry does, into memory
// it reuses: once its buffer has grown, an entry allocates nothing. It is
// not safe for concurrent use.
type entryEncoder struct {
	buf bytes.Buffer
	st  storedRecord
}

// encode returns the journal entry of rec, appended at appended; the
// bytes are valid until the next call.
func (e *entryEncoder) encode(rec *store.Record, indexed bool, appended time.Time) ([]byte, error) {
	var flags byte
	if indexed {
		flags |= entryIndexed
	}
	var hdr [2 + 8 + binary.MaxVarintLen64]byte
	h := append(hdr[:0], journalEntryV1, flags)
	h = binary.BigEndian.AppendUint64(h, uint64(appended.UnixNano()))
	h = binary.AppendUvarint(h, uint64(len(rec.ID)))
	e.buf.Reset()
	e.buf.Write(h)
	e.buf.WriteString(rec.ID)
	e.st = storedOf(rec)
	if err := bufferEncMode.MarshalToBuffer(&e.st, &e.buf); err != nil {
		return nil, err
	}
	if e.buf.Cap() > 1<<20 {
		// Keep no outsized buffer for the entries to come.
		b := e.buf.Bytes()
		e.buf = bytes.Buffer{}
		return b, nil
	}
	return e.buf.Bytes(), nil
}
