package badger

import (
	"testing"

	"github.com/fxamacker/cbor/v2"
)

// TestUnmarshalStoredBeforeAppend reads a record written before
// CacheCreation1h and ServiceTier, then Deployment and ServedModel, were
// appended to the stored layout.
func TestUnmarshalStoredBeforeAppend(t *testing.T) {
	old := []any{int64(1_700_000_000_000_000_000), "chat", "alice", "key_1", "m", "p",
		int64(10), int64(2), int64(3), int64(4), int64(1), "reported", 200, "ok", 0, int64(0), 0, true, "USD", int64(42)}
	b, err := cbor.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := unmarshalStored("r1", b)
	if err != nil {
		t.Fatalf("old record: %v", err)
	}
	if rec.User != "alice" || rec.Cost != 42 || rec.Usage.CacheCreation != 2 || rec.Usage.CacheCreation1h != 0 || rec.ServiceTier != "" || rec.Deployment != "" {
		t.Fatalf("old record decoded as %+v", rec)
	}
	rec.Usage.CacheCreation1h, rec.ServiceTier = 1, "flex"
	rec.Deployment, rec.ServedModel = "azure/gpt-4o-prod", "claude-sonnet"
	st := storedOf(&rec)
	back, err := unmarshalStored("r1", appendStored(nil, &st))
	if err != nil || back.Usage.CacheCreation1h != 1 || back.ServiceTier != "flex" || back.Deployment != "azure/gpt-4o-prod" || back.ServedModel != "claude-sonnet" {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	// A record of the layout before the priced tool calls reads them as
	// zero, and they round-trip once set.
	if rec.Usage.WebSearches != 0 || rec.Unpriced != "" {
		t.Fatalf("old record decoded tool calls: %+v", rec)
	}
	rec.Usage.AudioInput, rec.Usage.ImageOutput, rec.Usage.WebSearches, rec.Usage.ImageCalls = 7, 4160, 3, 2
	rec.Unpriced = "web_search,audio_input"
	st = storedOf(&rec)
	if back, err = unmarshalStored("r1", appendStored(nil, &st)); err != nil || back.Usage != rec.Usage || back.Unpriced != rec.Unpriced {
		t.Fatalf("round trip of tool calls: %+v, %v", back, err)
	}
	// A record of the layout before the duration reads it as 0 (not
	// measured), and it round-trips once set.
	if rec.DurationMillis != 0 {
		t.Fatalf("old record decoded a duration: %+v", rec)
	}
	rec.DurationMillis = 1834
	st = storedOf(&rec)
	if back, err = unmarshalStored("r1", appendStored(nil, &st)); err != nil || back.DurationMillis != 1834 || back.Unpriced != rec.Unpriced {
		t.Fatalf("round trip of the duration: %+v, %v", back, err)
	}
	// A record of the layout before the speech, transcription and rerank
	// quantities reads them as zero, and they round-trip once set.
	if rec.Usage.Characters != 0 || rec.Usage.AudioMillis != 0 || rec.Usage.SearchUnits != 0 {
		t.Fatalf("old record decoded quantities: %+v", rec)
	}
	rec.Usage.Characters, rec.Usage.AudioMillis, rec.Usage.SearchUnits = 1200, 93_500, 3
	st = storedOf(&rec)
	if back, err = unmarshalStored("r1", appendStored(nil, &st)); err != nil || back.Usage != rec.Usage || back.DurationMillis != 1834 {
		t.Fatalf("round trip of the quantities: %+v, %v", back, err)
	}
}
