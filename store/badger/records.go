package badger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/badger/journal"
)

// How records are stored. The ledger writes one record per billed request,
// so its size is the gateway's write volume. A record is stored as a CBOR
// array without field names, about a third of its JSON.
//
// Records are entries of the ledger's journal (package
// store/badger/journal): a header with the record's ID, then the CBOR
// array. Versions before the journal kept records in the key-value store
// (as JSON, then as "version 1" values); those are no longer read.

// storedRecord is the stored form of a Record, encoded as a CBOR array in
// field order. Fields may only ever be appended.
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
	Source        string
	Status        int
	Outcome       string
	Images        int
	VideoMillis   int64
	Tier          int
	Priced        bool
	Currency      string
	Cost          int64
	// Appended after the first release; older records decode them as zero.
	CacheCreation1h int64
	ServiceTier     string
	// Appended with routing (issue #19); older records decode them as "".
	Deployment  string
	ServedModel string
	// Appended with priced tool calls (issue #31); older records decode
	// them as zero.
	AudioInput   int64
	AudioOutput  int64
	ImageInput   int64
	ImageOutput  int64
	WebSearches  int64
	WebFetches   int64
	FileSearches int64
	CodeSessions int64
	ImageCalls   int64
	Unpriced     string
	// Appended with request latency (issue #35); older records decode it
	// as zero (not measured).
	DurationMillis int64
	// Appended with the audio and rerank endpoints (issue #33); older
	// records decode them as zero.
	Characters  int64
	AudioMillis int64
	SearchUnits int64
	// Appended with teams and tags (issue #32), after the endpoints'
	// fields; older records decode them as "".
	Team string
	Tags string
}

// storedOf returns the stored form of rec, without its ID.
func storedOf(rec *store.Record) storedRecord {
	return storedRecord{
		TimeNanos: rec.Time.UnixNano(), Endpoint: rec.Endpoint,
		User: rec.User, KeyID: rec.KeyID, Model: rec.Model, Provider: rec.Provider,
		Input: rec.Usage.Input, CacheCreation: rec.Usage.CacheCreation, CacheRead: rec.Usage.CacheRead,
		Output: rec.Usage.Output, Reasoning: rec.Usage.Reasoning,
		Source: rec.Source, Status: rec.Status, Outcome: rec.Outcome,
		Images: rec.Images, VideoMillis: rec.VideoMillis,
		Tier: rec.Tier, Priced: rec.Priced, Currency: rec.Currency, Cost: rec.Cost,
		CacheCreation1h: rec.Usage.CacheCreation1h, ServiceTier: rec.ServiceTier,
		Deployment: rec.Deployment, ServedModel: rec.ServedModel,
		AudioInput: rec.Usage.AudioInput, AudioOutput: rec.Usage.AudioOutput,
		ImageInput: rec.Usage.ImageInput, ImageOutput: rec.Usage.ImageOutput,
		WebSearches: rec.Usage.WebSearches, WebFetches: rec.Usage.WebFetches, FileSearches: rec.Usage.FileSearches,
		CodeSessions: rec.Usage.CodeSessions, ImageCalls: rec.Usage.ImageCalls, Unpriced: rec.Unpriced,
		DurationMillis: rec.DurationMillis,
		Characters:     rec.Usage.Characters, AudioMillis: rec.Usage.AudioMillis, SearchUnits: rec.Usage.SearchUnits,
		Team: rec.Team, Tags: rec.Tags,
	}
}

// unmarshalStored decodes the CBOR array of a record with id.
func unmarshalStored(id string, b []byte) (store.Record, error) {
	var s storedRecord
	if err := cbor.Unmarshal(b, &s); err != nil {
		if err = unmarshalShort(b, &s); err != nil {
			return store.Record{}, err
		}
	}
	return store.Record{
		ID: id, Time: time.Unix(0, s.TimeNanos).UTC(), Endpoint: s.Endpoint,
		User: s.User, KeyID: s.KeyID, Model: s.Model, Provider: s.Provider,
		Usage: store.Usage{Input: s.Input, CacheCreation: s.CacheCreation, CacheCreation1h: s.CacheCreation1h,
			CacheRead: s.CacheRead, Output: s.Output, Reasoning: s.Reasoning,
			AudioInput: s.AudioInput, AudioOutput: s.AudioOutput, ImageInput: s.ImageInput, ImageOutput: s.ImageOutput,
			WebSearches: s.WebSearches, WebFetches: s.WebFetches, FileSearches: s.FileSearches,
			CodeSessions: s.CodeSessions, ImageCalls: s.ImageCalls,
			Characters: s.Characters, AudioMillis: s.AudioMillis, SearchUnits: s.SearchUnits},
		Source: s.Source, Status: s.Status, Outcome: s.Outcome,
		Images: s.Images, VideoMillis: s.VideoMillis,
		Tier: s.Tier, Priced: s.Priced, Currency: s.Currency, Cost: s.Cost, ServiceTier: s.ServiceTier,
		Deployment: s.Deployment, ServedModel: s.ServedModel, Unpriced: s.Unpriced,
		DurationMillis: s.DurationMillis, Team: s.Team, Tags: s.Tags,
	}, nil
}

// storedFields is the number of fields of storedRecord.
var storedFields = reflect.TypeFor[storedRecord]().NumField() - 1 // minus the toarray marker

// cborNull is the CBOR encoding of null, which decodes as a zero value.
var cborNull = cbor.RawMessage{0xf6}

// unmarshalShort decodes a record written before the last fields were
// appended: its array is padded with nulls to storedRecord's length.
func unmarshalShort(b []byte, s *storedRecord) error {
	var items []cbor.RawMessage
	if err := cbor.Unmarshal(b, &items); err != nil {
		return err
	}
	if len(items) >= storedFields {
		return fmt.Errorf("a stored record of %d fields, %d expected", len(items), storedFields)
	}
	for len(items) < storedFields {
		items = append(items, cborNull)
	}
	padded, err := cbor.Marshal(items)
	if err != nil {
		return err
	}
	return cbor.Unmarshal(padded, s)
}

// journalEntryV1 marks a journal entry of version 1: this byte, a flags
// byte (entryIndexed), the time the entry was appended (Unix nanoseconds,
// big-endian), the length of the record's ID as a uvarint, the ID, then the
// CBOR array of storedRecord.
const journalEntryV1 = 0x02

// entryIndexed flags an entry whose record was written with Insert and so
// has an ID index entry.
const entryIndexed = 1

// entry is a decoded journal entry.
type entry struct {
	rec      store.Record
	appended time.Time
	indexed  bool
}

// decodeEntry decodes a journal entry.
func decodeEntry(b []byte) (entry, error) {
	if len(b) < 2+8+1 || b[0] != journalEntryV1 {
		return entry{}, errors.New("not a version 1 journal entry")
	}
	e := entry{indexed: b[1]&entryIndexed != 0, appended: time.Unix(0, int64(binary.BigEndian.Uint64(b[2:10])))}
	n, k := binary.Uvarint(b[10:])
	if k <= 0 || uint64(len(b)-10-k) < n {
		return entry{}, errors.New("journal entry with a malformed record id")
	}
	idEnd := 10 + k + int(n)
	rec, err := unmarshalStored(string(b[10+k:idEnd]), b[idEnd:])
	if err != nil {
		return entry{}, err
	}
	e.rec = rec
	return e, nil
}

// indexJournal marks an ID index entry that holds a journal position: this
// byte, then the position's 16 bytes.
const indexJournal = 'j'

// indexValue is the value of the ID index entry of a record at pos in the
// journal.
func indexValue(pos journal.Pos) []byte {
	b, _ := pos.AppendBinary([]byte{indexJournal})
	return b
}

// journalPosFromIndex returns the journal position in an ID index entry,
// if it holds one.
func journalPosFromIndex(v []byte) (journal.Pos, bool) {
	var pos journal.Pos
	if len(v) != 17 || v[0] != indexJournal || pos.UnmarshalBinary(v[1:]) != nil {
		return pos, false
	}
	return pos, true
}
