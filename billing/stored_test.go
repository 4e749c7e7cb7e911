package billing

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"
)

func TestStoredRecordRoundTrip(t *testing.T) {
	full := Record{
		ID: "req_0f8c/ä b", Time: time.Date(2026, 11, 21, 20, 42, 35, 123456789, time.UTC),
		Endpoint: EndpointMessages, User: "team/alice", KeyID: "key_abc", Model: "claude-sonnet-4-5", Provider: "anthropic",
		Usage:  Usage{Input: 50_000, CacheCreation: 1_000, CacheRead: 20_000, Output: 2_000, Reasoning: 300},
		Source: SourcePartial, Status: 200, Outcome: OutcomePartial, Images: 2, VideoMillis: 4_000,
		Tier: 1, Priced: true, Currency: "CNY", Cost: 580_000_000,
	}
	for _, tc := range []struct {
		name string
		rec  Record
	}{
		{"every field", full},
		{"unpriced, zero usage", Record{ID: "rec_1", Time: day0, Endpoint: EndpointChat, User: "bob", Model: "m", Tier: -1}},
		{"negative cost", Record{ID: "refund", Time: day0, Priced: true, Currency: "USD", Cost: -5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := encodeRecord(&tc.rec)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeRecord(recordKey(&tc.rec), v)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.rec) {
				t.Errorf("round trip:\n got %+v\nwant %+v", got, tc.rec)
			}
		})
	}

	// The point of the format: a typical record is far smaller than its
	// JSON, which is what the ledger used to store.
	rec := testRecord("req_3b241101-e2bb-4255-8caf-4136c566a962", 1234567)
	v, _ := encodeRecord(&rec)
	j, _ := json.Marshal(rec)
	t.Logf("stored %d bytes, JSON %d", len(v), len(j))
	if 2*len(v) > len(j) {
		t.Errorf("stored record is %d bytes, its JSON %d: want at most half", len(v), len(j))
	}
}

func TestDecodeRecordRejects(t *testing.T) {
	key := recordKey(&Record{ID: "x", Time: day0})
	for _, v := range [][]byte{nil, {0x7f}, {storedRecordV1}, {storedRecordV1, 0x82, 0x01}} {
		if _, err := decodeRecord(key, v); err == nil {
			t.Errorf("decodeRecord(%x) accepted", v)
		}
	}
	v, _ := encodeRecord(&Record{ID: "x", Time: day0})
	if _, err := decodeRecord([]byte("a/not-a-record"), v); err == nil {
		t.Error("decodeRecord accepted a key outside the records")
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
	oldKey := recordKeyIn(prefixLegacyRecords, old.Time, old.ID)
	if err := s.Set(ctx, oldKey, j, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Set(ctx, recordIDKey(old.ID), oldKey, 0); err != nil {
		t.Fatal(err)
	}
	// A version 1 record under the legacy prefix, indexed by its time.
	old2 := testRecord("old-2", 200)
	v, _ := encodeRecord(&old2)
	if err := s.Set(ctx, recordKeyIn(prefixLegacyRecords, old2.Time, old2.ID), v, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Set(ctx, recordIDKey(old2.ID), indexValue(&old2), 0); err != nil {
		t.Fatal(err)
	}

	l := newLedger(t, s, 0)
	if fresh, err := l.Write(ctx, testRecord("new-1", 300)); err != nil || !fresh {
		t.Fatalf("Write(new-1) = %v, %v", fresh, err)
	}
	for _, rec := range []Record{old, old2} {
		if fresh, err := l.Write(ctx, rec); err != nil || fresh {
			t.Errorf("Write(%s) again = %v, %v; want a no-op", rec.ID, fresh, err)
		}
		got, err := l.Get(ctx, rec.ID)
		if err != nil || !reflect.DeepEqual(got, rec) {
			t.Errorf("Get(%s) = %+v, %v; want %+v", rec.ID, got, err, rec)
		}
	}
	if ids := recordIDs(t, l, time.Time{}, time.Time{}); fmt.Sprint(ids) != "[old-1 old-2 new-1]" {
		t.Errorf("Records = %v, want [old-1 old-2 new-1]", ids)
	}
}
