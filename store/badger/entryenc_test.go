package badger

import (
	"bytes"
	"testing"

	"github.com/caddy-air/caddy-air/store"
)

// TestEntryEncoderMatchesEncodeEntry checks that the reused encoder of
// intents writes the same bytes as encodeEntry, entry after entry, and
// that they decode to the record.
func TestEntryEncoderMatchesEncodeEntry(t *testing.T) {
	var enc entryEncoder
	for _, tc := range []struct {
		name    string
		rec     store.Record
		indexed bool
	}{
		{"intent", intentRecord(1), false},
		{"record", testRecord("rec-1", 1234), true},
		{"empty but the id", store.Record{ID: "x"}, false},
		{"abandoned mark", store.Record{ID: "req-abc", Outcome: abandonedMark}, false},
		{"long id after short", store.Record{ID: string(bytes.Repeat([]byte("i"), 300)), Model: "m"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := encodeEntry(&tc.rec, tc.indexed, day0)
			if err != nil {
				t.Fatal(err)
			}
			got, err := enc.encode(&tc.rec, tc.indexed, day0)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("encoder wrote\n%x\nencodeEntry\n%x", got, want)
			}
			e, err := decodeEntry(got)
			if err != nil || e.rec.ID != tc.rec.ID || e.indexed != tc.indexed || e.rec.Model != tc.rec.Model {
				t.Fatalf("decoded %+v, %v", e, err)
			}
		})
	}
}
