package badger

import (
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/caddy-air/caddy-air/store"
)

// TestEntryEncoderMatchesAppendEntry checks that the reused encoder of
// intents writes the same bytes as a fresh appendEntry, entry after entry
// (a longer entry after a shorter one included), and that they decode to
// the record.
func TestEntryEncoderMatchesAppendEntry(t *testing.T) {
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
			want := appendEntry(nil, &tc.rec, tc.indexed, day0)
			got := enc.encode(&tc.rec, tc.indexed, day0)
			if !bytes.Equal(got, want) {
				t.Fatalf("encoder wrote\n%x\nappendEntry\n%x", got, want)
			}
			e, err := decodeEntry(got)
			if err != nil || e.rec.ID != tc.rec.ID || e.indexed != tc.indexed || e.rec.Model != tc.rec.Model {
				t.Fatalf("decoded %+v, %v", e, err)
			}
		})
	}
}

// TestAppendStoredMatchesCBOR fills every field of storedRecord, by
// reflection so that a field added later is covered too, with values at
// the edges of CBOR's integer and length encodings, and checks that
// appendStored writes what cbor.Marshal does.
func TestAppendStoredMatchesCBOR(t *testing.T) {
	ints := []int64{0, 1, 23, 24, 255, 256, 65535, 65536, 1<<32 - 1, 1 << 32, math.MaxInt64,
		-1, -24, -25, -256, -257, -65536, -65537, -1 << 32, -1<<32 - 1, math.MinInt64}
	strs := []string{"", "a", strings.Repeat("x", 23), strings.Repeat("y", 24), strings.Repeat("é", 128),
		strings.Repeat("z", 256), strings.Repeat("w", 65536), "claude-sonnet-4-5"}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 2000 {
		var st storedRecord
		v := reflect.ValueOf(&st).Elem()
		for i := range v.NumField() {
			f := v.Field(i)
			if !f.CanSet() {
				continue
			}
			switch f.Kind() {
			case reflect.Int, reflect.Int64:
				f.SetInt(ints[rng.IntN(len(ints))])
			case reflect.String:
				f.SetString(strs[rng.IntN(len(strs))])
			case reflect.Bool:
				f.SetBool(rng.IntN(2) == 1)
			default:
				t.Fatalf("storedRecord.%s of kind %s: teach appendStored and this test", v.Type().Field(i).Name, f.Kind())
			}
		}
		want, err := cbor.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendStored(nil, &st); !bytes.Equal(got, want) {
			t.Fatalf("round %d: appendStored of %+v\n%x\ncbor.Marshal\n%x", round, st, got, want)
		}
	}
}
