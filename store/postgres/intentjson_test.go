package postgres

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// TestAppendIntent checks that the intents' JSON reads back, with
// json.Unmarshal as Interrupted reads it, as the record that was written:
// every field, zero ones and strings that need escaping included.
func TestAppendIntent(t *testing.T) {
	full := store.Record{ID: "r1", Time: time.Date(2026, 11, 23, 22, 1, 2, 123456789, time.UTC), Endpoint: "chat",
		User: "alice", KeyID: "k1", Model: "gpt-4o", Provider: "openai",
		Usage: store.Usage{Input: 10, CacheCreation: 2, CacheCreation1h: 1, CacheRead: 3, Output: 5, Reasoning: 4,
			AudioInput: 6, AudioOutput: 2, ImageInput: 1, ImageOutput: 3, WebSearches: 2, WebFetches: 1, FileSearches: 4,
			CodeSessions: 1, ImageCalls: 2},
		Source: "upstream", Status: 200, Outcome: "ok", Images: 2, VideoMillis: 4000, Tier: -1, Priced: true,
		Currency: "USD", Cost: -7, ServiceTier: "flex", Deployment: "openai/gpt-4o", ServedModel: "gpt-4o-mini",
		Unpriced: "web_search,audio_input", DurationMillis: 1234}
	for i, rec := range []store.Record{
		full,
		{},
		{ID: "r2", Tier: -1},
		{ID: `q"uote\back`, User: "ünïcode 用户", Model: "tab\tnew\nline\x00", KeyID: "<&>", Provider: "bad \xff utf8"},
		{ID: "r3", Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("X", 3600))},
	} {
		raw := appendIntent(nil, &rec)
		var got store.Record
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Errorf("Test %d: %s does not parse: %v", i, raw, err)
			continue
		}
		// What json.Marshal would have written reads back the same.
		std, _ := json.Marshal(rec)
		var want store.Record
		if err := json.Unmarshal(std, &want); err != nil {
			t.Fatal(err)
		}
		if !got.Time.Equal(want.Time) {
			t.Errorf("Test %d: time %v, want %v", i, got.Time, want.Time)
		}
		got.Time, want.Time = time.Time{}, time.Time{}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Test %d: %s reads back as\n%+v, want\n%+v", i, raw, got, want)
		}
	}
}

// BenchmarkAppendIntent compares the intents' encoder with json.Marshal.
func BenchmarkAppendIntent(b *testing.B) {
	rec := rec("chatcmpl-0123456789abcdef", 1234)
	b.Run("appendIntent", func(b *testing.B) {
		var buf []byte
		for range b.N {
			buf = appendIntent(buf[:0], &rec)
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		for range b.N {
			_, _ = json.Marshal(rec)
		}
	})
}
