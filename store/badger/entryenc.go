package badger

import (
	"encoding/binary"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// entryEncoder encodes journal entries (appendEntry) into memory it
// reuses: once its buffer has grown, an entry allocates nothing. It is not
// safe for concurrent use.
type entryEncoder struct {
	buf []byte
}

// encode returns the journal entry of rec, appended at appended; the
// bytes are valid until the next call.
func (e *entryEncoder) encode(rec *store.Record, indexed bool, appended time.Time) []byte {
	b := appendEntry(e.buf[:0], rec, indexed, appended)
	if cap(b) <= 1<<20 {
		// Keep no outsized buffer for the entries to come.
		e.buf = b
	}
	return b
}

// appendEntry appends the journal entry of rec, appended at appended, to
// b (see journalEntryV1), its record encoded by appendStored.
func appendEntry(b []byte, rec *store.Record, indexed bool, appended time.Time) []byte {
	var flags byte
	if indexed {
		flags |= entryIndexed
	}
	b = append(b, journalEntryV1, flags)
	b = binary.BigEndian.AppendUint64(b, uint64(appended.UnixNano()))
	b = binary.AppendUvarint(b, uint64(len(rec.ID)))
	b = append(b, rec.ID...)
	st := storedOf(rec)
	return appendStored(b, &st)
}

// storedArrayHead is the head of storedRecord's CBOR array: an array
// (major type 4) of storedFields items.
var storedArrayHead = appendCBORHead(nil, 4, uint64(storedFields))

// appendStored appends the CBOR array of st to b: the bytes that
// cbor.Marshal writes (TestAppendStoredMatchesCBOR), without reflection.
func appendStored(b []byte, st *storedRecord) []byte {
	b = append(b, storedArrayHead...)
	b = appendCBORInt(b, st.TimeNanos)
	b = appendCBORText(b, st.Endpoint)
	b = appendCBORText(b, st.User)
	b = appendCBORText(b, st.KeyID)
	b = appendCBORText(b, st.Model)
	b = appendCBORText(b, st.Provider)
	b = appendCBORInt(b, st.Input)
	b = appendCBORInt(b, st.CacheCreation)
	b = appendCBORInt(b, st.CacheRead)
	b = appendCBORInt(b, st.Output)
	b = appendCBORInt(b, st.Reasoning)
	b = appendCBORText(b, st.Source)
	b = appendCBORInt(b, int64(st.Status))
	b = appendCBORText(b, st.Outcome)
	b = appendCBORInt(b, int64(st.Images))
	b = appendCBORInt(b, st.VideoMillis)
	b = appendCBORInt(b, int64(st.Tier))
	b = appendCBORBool(b, st.Priced)
	b = appendCBORText(b, st.Currency)
	b = appendCBORInt(b, st.Cost)
	b = appendCBORInt(b, st.CacheCreation1h)
	b = appendCBORText(b, st.ServiceTier)
	b = appendCBORText(b, st.Deployment)
	b = appendCBORText(b, st.ServedModel)
	for _, n := range [...]int64{st.AudioInput, st.AudioOutput, st.ImageInput, st.ImageOutput,
		st.WebSearches, st.WebFetches, st.FileSearches, st.CodeSessions, st.ImageCalls} {
		b = appendCBORInt(b, n)
	}
	b = appendCBORText(b, st.Unpriced)
	b = appendCBORInt(b, st.DurationMillis)
	b = appendCBORInt(b, st.Characters)
	b = appendCBORInt(b, st.AudioMillis)
	b = appendCBORInt(b, st.SearchUnits)
	b = appendCBORText(b, st.Team)
	return appendCBORText(b, st.Tags)
}

// appendCBORHead appends the head of a CBOR data item of major type
// major and argument n, in its shortest form.
func appendCBORHead(b []byte, major byte, n uint64) []byte {
	m := major << 5
	switch {
	case n < 24:
		return append(b, m|byte(n))
	case n <= 0xff:
		return append(b, m|24, byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, m|25), uint16(n))
	case n <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(b, m|26), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, m|27), n)
}

// appendCBORInt appends n as a CBOR integer.
func appendCBORInt(b []byte, n int64) []byte {
	if n < 0 {
		return appendCBORHead(b, 1, uint64(-1-n))
	}
	return appendCBORHead(b, 0, uint64(n))
}

// appendCBORText appends s as a CBOR text string.
func appendCBORText(b []byte, s string) []byte {
	return append(appendCBORHead(b, 3, uint64(len(s))), s...)
}

// appendCBORBool appends v as a CBOR boolean.
func appendCBORBool(b []byte, v bool) []byte {
	if v {
		return append(b, 0xf5)
	}
	return append(b, 0xf4)
}
