package billing

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// encodeV1 returns the version 1 store value of rec, as earlier versions
// wrote it.
func encodeV1(t *testing.T, rec *Record) []byte {
	t.Helper()
	b, err := marshalStored(rec)
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte{storedRecordV1}, b...)
}

// timeIndexValue is an ID index entry as earlier versions wrote it: the
// record's time.
func timeIndexValue(rec *Record) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(rec.Time.UnixNano()))
}

func TestStoredRecordRoundTrip(t *testing.T) {
	full := Record{
		ID: "req_0f8c/ä b", Time: time.Date(2026, 11, 21, 20, 42, 35, 123456789, time.UTC),
		Endpoint: EndpointMessages, User: "team/alice", KeyID: "key_abc", Model: "claude-sonnet-4-5", Provider: "anthropic",
		Usage:  Usage{Input: 50_000, CacheCreation: 1_000, CacheRead: 20_000, Output: 2_000, Reasoning: 300},
		Source: SourcePartial, Status: 200, Outcome: OutcomePartial, Images: 2, VideoMillis: 4_000,
		Tier: 1, Priced: true, Currency: "CNY", Cost: 580_000_000,
	}
	appended := time.Date(2026, 11, 21, 20, 43, 0, 5, time.UTC)
	for _, tc := range []struct {
		name    string
		rec     Record
		indexed bool
	}{
		{"every field", full, true},
		{"unpriced, zero usage", Record{ID: "rec_1", Time: day0, Endpoint: EndpointChat, User: "bob", Model: "m", Tier: -1}, false},
		{"negative cost", Record{ID: "refund", Time: day0, Priced: true, Currency: "USD", Cost: -5}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := encodeEntry(&tc.rec, tc.indexed, appended)
			if err != nil {
				t.Fatal(err)
			}
			e, err := decodeEntry(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(e.rec, tc.rec) || e.indexed != tc.indexed || !e.appended.Equal(appended) {
				t.Errorf("entry round trip:\n got %+v %v %v\nwant %+v %v %v", e.rec, e.indexed, e.appended, tc.rec, tc.indexed, appended)
			}
			// Values of earlier versions decode to the same record.
			got, err := decodeRecord(recordKeyIn(prefixRecordsV2, tc.rec.Time, tc.rec.ID), encodeV1(t, &tc.rec))
			if err != nil || !reflect.DeepEqual(got, tc.rec) {
				t.Errorf("version 1 value: %+v, %v", got, err)
			}
		})
	}

	// The point of the format: a typical record is far smaller than its
	// JSON.
	rec := testRecord("req_3b241101-e2bb-4255-8caf-4136c566a962", 1234567)
	v, _ := encodeEntry(&rec, false, appended)
	j, _ := json.Marshal(rec)
	t.Logf("entry %d bytes, JSON %d", len(v), len(j))
	if 2*len(v) > len(j) {
		t.Errorf("entry is %d bytes, its JSON %d: want at most half", len(v), len(j))
	}
}

func TestDecodeRejects(t *testing.T) {
	key := recordKeyIn(prefixRecordsV2, day0, "x")
	for _, v := range [][]byte{nil, {0x7f}, {storedRecordV1}, {storedRecordV1, 0x82, 0x01}} {
		if _, err := decodeRecord(key, v); err == nil {
			t.Errorf("decodeRecord(%x) accepted", v)
		}
	}
	if _, err := decodeRecord([]byte("a/not-a-record"), encodeV1(t, &Record{ID: "x", Time: day0})); err == nil {
		t.Error("decodeRecord accepted a key outside the records")
	}
	good, _ := encodeEntry(&Record{ID: "x", Time: day0}, false, day0)
	for _, b := range [][]byte{nil, good[:10], good[:12], append([]byte{storedRecordV1}, good[1:]...),
		append(good[:10:10], 0xff, 0xff, 0xff, 0x0f)} {
		if _, err := decodeEntry(b); err == nil {
			t.Errorf("decodeEntry(%x) accepted", b)
		}
	}
}

// TestLedgerReadsEarlierFormat checks that records and index entries that
// earlier versions wrote (JSON or version 1 values under the legacy prefix,
// index entries holding the key or the time) are still read, come first in
// Records, and still count for idempotency.
func TestLedgerReadsEarlierFormat(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	old := testRecord("old-1", 700)
	j, _ := json.Marshal(old)
	oldKey := recordKeyIn(prefixRecordsV1, old.Time, old.ID)
	if err := s.Set(ctx, oldKey, j, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Set(ctx, recordIDKey(old.ID), oldKey, 0); err != nil {
		t.Fatal(err)
	}
	// Version 1 records under both earlier prefixes, indexed by their time.
	old2, old3 := testRecord("old-2", 200), testRecord("old-3", 300)
	for _, o := range []struct {
		prefix string
		rec    *Record
	}{{prefixRecordsV1, &old2}, {prefixRecordsV2, &old3}} {
		if err := s.Set(ctx, recordKeyIn(o.prefix, o.rec.Time, o.rec.ID), encodeV1(t, o.rec), 0); err != nil {
			t.Fatal(err)
		}
		if err := s.Set(ctx, recordIDKey(o.rec.ID), timeIndexValue(o.rec), 0); err != nil {
			t.Fatal(err)
		}
	}

	l := newLedger(t, s, 0)
	if fresh, err := l.Write(ctx, testRecord("new-1", 300)); err != nil || !fresh {
		t.Fatalf("Write(new-1) = %v, %v", fresh, err)
	}
	for _, rec := range []Record{old, old2, old3} {
		if fresh, err := l.Write(ctx, rec); err != nil || fresh {
			t.Errorf("Write(%s) again = %v, %v; want a no-op", rec.ID, fresh, err)
		}
		got, err := l.Get(ctx, rec.ID)
		if err != nil || !reflect.DeepEqual(got, rec) {
			t.Errorf("Get(%s) = %+v, %v; want %+v", rec.ID, got, err, rec)
		}
	}
	if ids := recordIDs(t, l, time.Time{}, time.Time{}); fmt.Sprint(ids) != "[old-1 old-2 old-3 new-1]" {
		t.Errorf("Records = %v, want [old-1 old-2 old-3 new-1]", ids)
	}
}
