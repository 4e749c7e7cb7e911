package openai

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/jsonlimit"
)

func TestScanChunk(t *testing.T) {
	for _, tc := range []struct {
		name    string
		payload string
		ok      bool
		usage   string // raw value of the top-level usage, "" when none
		choices bool
		hasErr  bool
		out     int
	}{
		{name: "content and null usage", payload: `{"id":"c1","choices":[{"index":0,"delta":{"content":"hello"},"finish_reason":null}],"usage":null}`,
			ok: true, usage: "null", choices: true, out: 5},
		{name: "usage only", payload: `{"id":"c1","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}`,
			ok: true, usage: `{"prompt_tokens":3,"completion_tokens":2}`},
		{name: "usage first", payload: `{"usage":{"prompt_tokens":3},"choices":[{"delta":{"content":"ab"}}]}`,
			ok: true, usage: `{"prompt_tokens":3}`, choices: true, out: 2},
		{name: "no usage", payload: `{"choices":[{"delta":{"role":"assistant","content":""}}]}`, ok: true, choices: true},
		{name: "reasoning and content", payload: `{"choices":[{"delta":{"reasoning_content":"abcd","reasoning":"xy","content":"12345678"}}]}`,
			ok: true, choices: true, out: 14},
		{name: "escaped quotes are raw bytes", payload: `{"choices":[{"delta":{"content":"say \"hi\" \\"}}],"usage":null}`,
			ok: true, usage: "null", choices: true, out: 13},
		{name: "tool call", payload: `{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"f","arguments":"{\"q\":1}"}}]}}]}`,
			ok: true, choices: true, out: 1 + 9},
		{name: "two choices", payload: `{"choices":[{"delta":{"content":"ab"}},{"delta":{"content":"cde"}}]}`, ok: true, choices: true, out: 5},
		{name: "non-string content counts raw", payload: `{"choices":[{"delta":{"content":[1,2]}}]}`, ok: true, choices: true, out: 5},
		{name: "null content", payload: `{"choices":[{"delta":{"content":null}}]}`, ok: true, choices: true},
		{name: "nested usage is not the chunk's", payload: `{"choices":[{"delta":{"content":"x"},"usage":{"prompt_tokens":9}}]}`,
			ok: true, choices: true, out: 1},
		{name: "usage inside a string", payload: `{"choices":[{"delta":{"content":"\"usage\":{}"}}]}`, ok: true, choices: true, out: 12},
		{name: "message field is not a delta", payload: `{"choices":[{"message":{"content":"abc"}}]}`, ok: true, choices: true},
		{name: "null choices", payload: `{"choices":null,"usage":{"prompt_tokens":1}}`, ok: true, usage: `{"prompt_tokens":1}`, choices: true},
		{name: "error", payload: `{"error":{"message":"overloaded"}}`, ok: true, hasErr: true},
		{name: "null error", payload: `{"error":null,"choices":[]}`, ok: true},
		{name: "whitespace", payload: " {\n \"choices\" : [ { \"delta\" : { \"content\" : \"ab\" } } ] ,\r\n\t\"usage\" : null } \n",
			ok: true, usage: "null", choices: true, out: 2},
		{name: "empty object", payload: `{}`, ok: true},
		{name: "numbers and literals", payload: `{"created":1700000000,"x":true,"y":-1.5e3,"z":false,"choices":[]}`, ok: true},
		{name: "not an object", payload: `[1,2]`},
		{name: "cut short", payload: `{"choices":[{"delta":{"content":"ab`},
		{name: "unclosed object", payload: `{"choices":[]`},
		{name: "trailing garbage", payload: `{"choices":[]} x`},
		{name: "missing colon", payload: `{"choices" []}`},
		{name: "missing comma", payload: `{"a":1 "b":2}`},
		{name: "missing value", payload: `{"a":}`},
		{name: "empty", payload: ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := scanChunk([]byte(tc.payload), 0, jsonlimit.DefaultMaxDepth)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			checkResume(t, tc.payload, c)
			usage := ""
			if c.usageAt >= 0 {
				usage = tc.payload[c.usageAt:c.usageEnd]
			}
			if usage != tc.usage || c.choices != tc.choices || c.hasError != tc.hasErr || c.outBytes != tc.out {
				t.Errorf("got usage %q choices %v error %v out %d, want %q %v %v %d",
					usage, c.choices, c.hasError, c.outBytes, tc.usage, tc.choices, tc.hasErr, tc.out)
			}
		})
	}
}

// FuzzScanChunk checks the hand-written scan against gjson on every valid
// JSON object: the same usage value, error and output size; and against
// jsonlimit at small limits: a valid object scans exactly when it nests no
// deeper than the limit. go test runs the seeds; go test -fuzz
// FuzzScanChunk ./chatproxy explores further.
func FuzzScanChunk(f *testing.F) {
	for _, s := range []string{
		`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi \"x\" \\ \u00e9"},"finish_reason":null}],"usage":null}`,
		`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":1}}}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"{\"a\":[1,{}]}"}},{"function":{"arguments":"]"}}]}}]}`,
		`{"choices":[{"delta":{"reasoning_content":"a","reasoning":null,"content":{"k":"v"}}},{"delta":[]},"x",7],"error":false}`,
		` { "usage" : null , "choices" : [ ] } `,
		`{"a":{"usage":{"b":[["]"]]}},"choices":{"delta":{"content":"no"}}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		if jsonlimit.Check([]byte(payload), jsonlimit.DefaultMaxDepth) != nil {
			if c, ok := scanChunk([]byte(payload), 0, jsonlimit.DefaultMaxDepth); ok { // must not panic
				checkResume(t, payload, c)
			}
			return
		}
		root := gjson.Parse(payload)
		c, ok := scanChunk([]byte(payload), 0, jsonlimit.DefaultMaxDepth)
		if !root.IsObject() {
			if ok {
				t.Fatalf("scanned a non-object as a chunk: %q", payload)
			}
			return
		}
		if !ok {
			t.Fatalf("valid object did not scan: %q", payload)
		}
		checkResume(t, payload, c)
		var usage, choices gjson.Result
		hasErr := false
		root.ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "usage":
				usage = v
			case "choices":
				choices = v
			case "error":
				hasErr = hasErr || v.Type != gjson.Null
			}
			return true
		})
		got := ""
		if c.usageAt >= 0 {
			got = payload[c.usageAt:c.usageEnd]
		}
		if got != usage.Raw {
			t.Errorf("usage %q, gjson %q", got, usage.Raw)
		}
		if c.hasError != hasErr {
			t.Errorf("error %v, gjson %v", c.hasError, hasErr)
		}
		if want := choicesOut(choices); choices.IsArray() && c.outBytes != want {
			t.Errorf("output %d bytes, gjson %d, in %q", c.outBytes, want, payload)
		}
		for limit := range 9 {
			want := jsonlimit.Check([]byte(payload), limit) == nil
			if _, ok := scanChunk([]byte(payload), 0, limit); ok != want {
				t.Errorf("limit %d: scanned %v, want %v, in %q", limit, ok, want, payload)
			}
		}
	})
}

// TestScanChunkDepth checks that a chunk scans exactly when it nests no
// deeper than the limit, wherever its deepest value is, and that a deep
// chunk costs one pass without recursion.
func TestScanChunkDepth(t *testing.T) {
	for i, tc := range []struct {
		payload string
		depth   int
	}{
		{`{}`, 1},
		{`{"id":"c","choices":[],"usage":null}`, 2},
		{`{"usage":{"prompt_tokens":1,"prompt_tokens_details":{"cached_tokens":0}}}`, 3},
		{`{"choices":[{"delta":{"content":"x"}}]}`, 4},
		{`{"choices":[{"delta":{"content":[[1]]}}]}`, 6},
		{`{"choices":[{"delta":{"tool_calls":[{"function":{"name":"f","arguments":"{}"}}]}}]}`, 7},
		{`{"choices":[{"delta":{"tool_calls":[{"function":{"name":"f","arguments":{"a":[]}}}]}}]}`, 9},
		{`{"choices":[{"logprobs":{"content":[{"top":[]}]}}]}`, 7},
		{`{"choices":[[[[]]]]}`, 5},
		{`{"error":{"a":{"b":[]}}}`, 4},
		{`{"x":"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}`, 1},
	} {
		for limit := 0; limit <= tc.depth+1; limit++ {
			c, ok := scanChunk([]byte(tc.payload), 0, limit)
			if ok != (tc.depth <= limit) {
				t.Errorf("Test %d: limit %d: ok = %v, want %v for depth %d", i, limit, ok, !ok, tc.depth)
			}
			if ok {
				checkResumeAt(t, tc.payload, c, limit)
			}
		}
	}
	for i, payload := range []string{
		`{"choices":[{"delta":{"content":` + strings.Repeat("[", 16<<20) + `}}]}`,
		`{"usage":` + strings.Repeat(`{"a":`, 1<<20),
		`{"id":"x","choices":` + strings.Repeat("[", 1<<20) + strings.Repeat("]", 1<<20) + `}`,
	} {
		if _, ok := scanChunk([]byte(payload), 0, jsonlimit.DefaultMaxDepth); ok {
			t.Errorf("Test %d: a chunk %d bytes deep scanned", i, len(payload))
		}
	}
}

// checkResume checks that a scan of payload resumed where full, a whole
// scan of it, says the bytes before can be skipped finds what full found.
func checkResume(t *testing.T, payload string, full chunkInfo) {
	t.Helper()
	if full.choicesAt == 0 {
		return
	}
	checkResumeAt(t, payload, full, jsonlimit.DefaultMaxDepth)
}

// checkResumeAt is checkResume for a scan at the limit maxDepth.
func checkResumeAt(t *testing.T, payload string, full chunkInfo, maxDepth int) {
	t.Helper()
	if full.choicesAt == 0 {
		return
	}
	if c, ok := scanChunk([]byte(payload), full.choicesAt, maxDepth); !ok || c != full {
		t.Errorf("%q resumed at %d: got %+v %v, want %+v", payload, full.choicesAt, c, ok, full)
	}
}

// choicesOut sizes the deltas' text of a choices array with gjson, as the
// estimate defines it: content, reasoning_content, reasoning, and the name
// and arguments of each tool call's function, in every object delta of
// every object choice, repeated keys included.
func choicesOut(choices gjson.Result) int {
	n := 0
	members := func(obj gjson.Result, fn func(k string, v gjson.Result)) {
		if obj.IsObject() {
			obj.ForEach(func(k, v gjson.Result) bool { fn(k.Str, v); return true })
		}
	}
	choices.ForEach(func(_, c gjson.Result) bool {
		members(c, func(k string, d gjson.Result) {
			if k != "delta" {
				return
			}
			members(d, func(k string, v gjson.Result) {
				switch k {
				case "content", "reasoning_content", "reasoning":
					n += dialect.TextLen(v)
				case "tool_calls":
					if !v.IsArray() {
						return
					}
					v.ForEach(func(_, tc gjson.Result) bool {
						members(tc, func(k string, f gjson.Result) {
							if k != "function" {
								return
							}
							members(f, func(k string, v gjson.Result) {
								if k == "name" || k == "arguments" {
									n += dialect.TextLen(v)
								}
							})
						})
						return true
					})
				}
			})
		})
		return true
	})
	return n
}
