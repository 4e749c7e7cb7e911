package badger

import (
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/caddy-air/caddy-air/store"
)

// Records written before the last fields were appended still decode: those
// of the endpoints' release (without the team and tags) keep their units,
// and those before it decode both as zero.
func TestUnmarshalStoredOlderLayouts(t *testing.T) {
	rec := store.Record{ID: "r1", Time: time.Date(2026, 11, 28, 1, 2, 3, 0, time.UTC), User: "alice", KeyID: "key_a",
		Model: "tts", Priced: true, Currency: "USD", Cost: 42, DurationMillis: 7,
		Usage: store.Usage{Characters: 120, AudioMillis: 3000, SearchUnits: 2}, Team: "ml", Tags: "a,b"}
	st := storedOf(&rec)
	full, err := cbor.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var items []cbor.RawMessage
	if err := cbor.Unmarshal(full, &items); err != nil {
		t.Fatal(err)
	}
	if len(items) != storedFields {
		t.Fatalf("%d items, want %d", len(items), storedFields)
	}
	for _, tc := range []struct {
		name   string
		fields int
		want   func(r store.Record) store.Record
	}{
		{"current", storedFields, func(r store.Record) store.Record { return r }},
		{"endpoints, before teams", storedFields - 2, func(r store.Record) store.Record {
			r.Team, r.Tags = "", ""
			return r
		}},
		{"before endpoints", storedFields - 5, func(r store.Record) store.Record {
			r.Team, r.Tags = "", ""
			r.Usage.Characters, r.Usage.AudioMillis, r.Usage.SearchUnits = 0, 0, 0
			return r
		}},
	} {
		b, err := cbor.Marshal(items[:tc.fields])
		if err != nil {
			t.Fatal(err)
		}
		got, err := unmarshalStored(rec.ID, b)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if want := tc.want(rec); got != want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, want)
		}
	}
}
