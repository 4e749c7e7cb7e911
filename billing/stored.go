package billing

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fxamacker/cbor/v2"
)

// How records are stored. The ledger writes one record per billed request,
// so its size is the gateway's write volume: each byte goes to Badger's
// memtable, its write-ahead log and, later, its tables, and the memtable
// flushes and compactions it causes are most of what the gateway adds to
// Caddy's memory under load. A record is therefore stored as a CBOR array
// without field names and without its ID (the key holds it), about a third
// of its JSON, and the ID index holds the record's time rather than its key.
//
// Values written by earlier versions (JSON records, index entries holding
// the record key) are still read.

// storedRecordV1 marks a value as a version 1 stored record: this byte,
// then the CBOR array of storedRecord. A JSON record starts with '{'.
const storedRecordV1 = 0x01

// storedRecord is the version 1 stored form of a Record, encoded as a CBOR
// array in field order. Fields may only ever be appended.
type storedRecord struct {
	_             struct{} `cbor:",toarray"`
	TimeNanos     int64
	Endpoint      string
	User          string
	KeyID         string
	Model         string
	Provider      string
	Input         int64
	CacheCreation int64
	CacheRead     int64
	Output        int64
	Reasoning     int64
	Source        Source
	Status        int
	Outcome       string
	Images        int
	VideoMillis   int64
	Tier          int
	Priced        bool
	Currency      string
	Cost          Amount
}

// encodeRecord returns the stored value of rec.
func encodeRecord(rec *Record) ([]byte, error) {
	b, err := cbor.Marshal(storedRecord{
		TimeNanos: rec.Time.UnixNano(), Endpoint: rec.Endpoint,
		User: rec.User, KeyID: rec.KeyID, Model: rec.Model, Provider: rec.Provider,
		Input: rec.Usage.Input, CacheCreation: rec.Usage.CacheCreation, CacheRead: rec.Usage.CacheRead,
		Output: rec.Usage.Output, Reasoning: rec.Usage.Reasoning,
		Source: rec.Source, Status: rec.Status, Outcome: rec.Outcome,
		Images: rec.Images, VideoMillis: rec.VideoMillis,
		Tier: rec.Tier, Priced: rec.Priced, Currency: rec.Currency, Cost: rec.Cost,
	})
	if err != nil {
		return nil, err
	}
	return append([]byte{storedRecordV1}, b...), nil
}

// decodeRecord returns the record stored under key with value v.
func decodeRecord(key, v []byte) (Record, error) {
	var rec Record
	if len(v) == 0 {
		return rec, errors.New("empty value")
	}
	switch v[0] {
	case '{':
		err := json.Unmarshal(v, &rec)
		return rec, err
	case storedRecordV1:
	default:
		return rec, fmt.Errorf("unknown record format %#x", v[0])
	}
	var s storedRecord
	if err := cbor.Unmarshal(v[1:], &s); err != nil {
		return rec, err
	}
	id, ok := recordIDOf(key)
	if !ok {
		return rec, fmt.Errorf("malformed record key %q", key)
	}
	return Record{
		ID: id, Time: time.Unix(0, s.TimeNanos).UTC(), Endpoint: s.Endpoint,
		User: s.User, KeyID: s.KeyID, Model: s.Model, Provider: s.Provider,
		Usage:  Usage{Input: s.Input, CacheCreation: s.CacheCreation, CacheRead: s.CacheRead, Output: s.Output, Reasoning: s.Reasoning},
		Source: s.Source, Status: s.Status, Outcome: s.Outcome,
		Images: s.Images, VideoMillis: s.VideoMillis,
		Tier: s.Tier, Priced: s.Priced, Currency: s.Currency, Cost: s.Cost,
	}, nil
}

// recordIDOf returns the record ID in a record key, current or legacy.
func recordIDOf(key []byte) (string, bool) {
	k := string(key)
	var n int
	switch {
	case strings.HasPrefix(k, prefixRecords):
		n = len(prefixRecords)
	case strings.HasPrefix(k, prefixLegacyRecords):
		n = len(prefixLegacyRecords)
	default:
		return "", false
	}
	i := strings.LastIndexByte(k, '/')
	if i < n {
		return "", false
	}
	return unesc(k[i+1:]), true
}

// indexValue is the value of a record's ID index entry: its time, in Unix
// nanoseconds, big-endian.
func indexValue(rec *Record) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(rec.Time.UnixNano()))
}

// recordKeysFromIndex returns the keys, most likely first, under which the
// record with id and ID index entry v may be stored.
func recordKeysFromIndex(id string, v []byte) [][]byte {
	if len(v) != 8 {
		return [][]byte{v} // written by an earlier version: the key itself
	}
	t := time.Unix(0, int64(binary.BigEndian.Uint64(v)))
	// Before records moved to prefixRecords, index entries of this form
	// pointed into prefixLegacyRecords.
	return [][]byte{recordKeyAt(t, id), recordKeyIn(prefixLegacyRecords, t, id)}
}
