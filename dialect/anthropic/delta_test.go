package anthropic

import (
	"testing"

	"github.com/caddy-air/caddy-air/jsonlimit"
	"github.com/tidwall/gjson"
)

var deltaCorpus = []string{
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello \"world\"\n"}}`,
	`{"index":0,"delta":{"type":"thinking_delta","thinking":"hmm"},"type":"content_block_delta"}`,
	`{"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`,
	`{"type":"content_block_delta","delta":{"text":"a","text":"bb","thinking":null,"partial_json":{"x":1}}}`,
	`{"type":"content_block_delta","delta":{"t\u0065xt":"abc"}}`,
	`{"type":"content_block_delta","delta":{},"delta":{"text":"second"}}`,
	`{"type":"content_block_delta","delta":"not an object"}`,
	`{"type":"content_block_delta","delta":null}`,
	`{"type":"content_block_delta","content_block":{"type":"text","text":"abc"},"delta":{"text":"x"}}`,
	`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","name":"run","input":{}}}`,
	`{"type":"content_block_d\u0065lta","delta":{"text":"abc"}}`,
	`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}}`,
	`{"type":"content_block_delta","type":"ping","delta":{"text":"abc"}}`,
	`{"type":"content_block_delta","delta":{"text":"abc"}`,
	`{"type":"content_block_delta","delta":{"text":"abc"}} x`,
	`{"type":"content_block_delta","delta":{"text":[[[[1]]]]}}`,
}

// checkDelta compares deltaBytes with the general reading of an event:
// when deltaBytes reads it, the event is valid and sized alike.
func checkDelta(t *testing.T, payload []byte, limit int) {
	t.Helper()
	n, ok := deltaBytes(payload, limit)
	if !ok {
		return
	}
	if err := jsonlimit.Check(payload, limit); err != nil {
		t.Fatalf("%q: read, but Check says %v", payload, err)
	}
	root := gjson.ParseBytes(payload)
	if typ := root.Get("type").Str; typ != "content_block_delta" {
		t.Fatalf("%q: read as a delta, but its type is %q", payload, typ)
	}
	if want := deltaTextBytes(root); n != want {
		t.Fatalf("%q: %d bytes, deltaTextBytes says %d", payload, n, want)
	}
}

func TestDeltaBytes(t *testing.T) {
	for i, tc := range []struct {
		payload string
		n       int
		ok      bool
	}{
		{deltaCorpus[0], len(`Hello \"world\"\n`), true},
		{deltaCorpus[1], 3, true},
		{deltaCorpus[2], len(`{\"a\":`), true},
		{deltaCorpus[3], 1 + len(`{"x":1}`), true},
		{deltaCorpus[4], 3, true},
		{deltaCorpus[5], 0, true},
		{deltaCorpus[6], 0, false},
		{deltaCorpus[8], 0, false},
		{deltaCorpus[9], 0, false},
		{deltaCorpus[10], 0, false},
		{deltaCorpus[13], 0, false},
		{deltaCorpus[14], 0, false},
	} {
		n, ok := deltaBytes([]byte(tc.payload), 128)
		if ok != tc.ok || ok && n != tc.n {
			t.Errorf("Test %d: %s: %d, %v; want %d, %v", i, tc.payload, n, ok, tc.n, tc.ok)
		}
	}
	for _, p := range deltaCorpus {
		checkDelta(t, []byte(p), 128)
		checkDelta(t, []byte(p), 3)
	}
	if _, ok := deltaBytes([]byte(deltaCorpus[15]), 3); ok {
		t.Errorf("a delta nested past the limit was read")
	}
}

func FuzzDeltaBytes(f *testing.F) {
	for _, p := range deltaCorpus {
		f.Add([]byte(p))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		checkDelta(t, payload, 3)
		checkDelta(t, payload, 128)
	})
}
