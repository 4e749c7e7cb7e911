package openai

import (
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/jsonlimit"
)

// shapeChunk is a chunk as OpenAI streams it with usage asked for: only its
// text and the text's key change from chunk to chunk.
func shapeChunk(key, text string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1763769600,"model":"gpt-x",` +
		`"service_tier":"default","system_fingerprint":"fp","choices":[{"index":0,"delta":{"` + key + `":` + text +
		`},"logprobs":null,"finish_reason":null}],"usage":null}`
}

// TestChunkShape teaches a shape with a first chunk and checks that a
// second chunk has it exactly when it should, and that what the shape says
// of it is what a full scan finds.
func TestChunkShape(t *testing.T) {
	const usage = `{"prompt_tokens":3,"completion_tokens":2}`
	tool := func(args string) string {
		return `{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":` + args + `}}]}}],"usage":null}`
	}
	for _, tc := range []struct {
		name          string
		first, second string
		depth         int // zero: jsonlimit.DefaultMaxDepth
		match         bool
		out           int // the second's output bytes, when it matches
	}{
		{name: "same shape, other text", first: shapeChunk("content", `"Hello"`), second: shapeChunk("content", `" the tower was"`),
			match: true, out: 14},
		{name: "empty text", first: shapeChunk("content", `"x"`), second: shapeChunk("content", `""`), match: true},
		{name: "reasoning text", first: shapeChunk("reasoning_content", `"a"`), second: shapeChunk("reasoning_content", `"bcd"`),
			match: true, out: 3},
		{name: "other text key", first: shapeChunk("reasoning_content", `"a"`), second: shapeChunk("content", `"a"`)},
		{name: "escaped quote inside the text", first: shapeChunk("content", `"a"`), second: shapeChunk("content", `"say \"hi\" \\"`),
			match: true, out: 13},
		{name: "escaped quote ending the text", first: shapeChunk("content", `"a"`),
			second: strings.Replace(shapeChunk("content", `"a"`), `"a"`, `"a\"`, 1)},
		{name: "unicode escape", first: shapeChunk("content", `"a"`), second: shapeChunk("content", `"\u00e9t\u00e9"`), match: true, out: 13},
		{name: "text not a string", first: shapeChunk("content", `"a"`), second: shapeChunk("content", `null`)},
		{name: "text an array", first: shapeChunk("content", `"a"`), second: shapeChunk("content", `["a"]`)},
		{name: "first text not a string", first: shapeChunk("content", `7`), second: shapeChunk("content", `7`)},
		{name: "tail differs by one byte", first: shapeChunk("content", `"a"`),
			second: strings.Replace(shapeChunk("content", `"b"`), `"index":0`, `"index":1`, 1)},
		{name: "tail differs in its last byte", first: shapeChunk("content", `"a"`), second: shapeChunk("content", `"b"`) + " "},
		{name: "finish reason", first: shapeChunk("content", `"a"`),
			second: strings.Replace(shapeChunk("content", `""`), `"finish_reason":null`, `"finish_reason":"stop"`, 1)},
		{name: "usage object in the tail", first: strings.Replace(shapeChunk("content", `"a"`), `"usage":null`, `"usage":`+usage, 1),
			second: strings.Replace(shapeChunk("content", `"tower"`), `"usage":null`, `"usage":`+usage, 1), match: true, out: 5},
		{name: "usage object then null", first: strings.Replace(shapeChunk("content", `"a"`), `"usage":null`, `"usage":`+usage, 1),
			second: shapeChunk("content", `"a"`)},
		{name: "usage in the lead", first: `{"usage":null,"choices":[{"delta":{"content":"a"}}],"error":{"x":1}}`,
			second: `{"usage":null,"choices":[{"delta":{"content":"abc"}}],"error":{"x":1}}`, match: true, out: 3},
		{name: "tool call arguments", first: tool(`"{\"a"`), second: tool(`"\":[1,"`), match: true, out: 6},
		{name: "tool call name then arguments", first: tool(`""`), second: tool(`7`)},
		{name: "two choices, last text changes", first: `{"choices":[{"delta":{"content":"a"}},{"delta":{"content":"b"}}]}`,
			second: `{"choices":[{"delta":{"content":"a"}},{"delta":{"content":"xyz"}}]}`, match: true, out: 4},
		{name: "two choices, first text changes", first: `{"choices":[{"delta":{"content":"a"}},{"delta":{"content":"b"}}]}`,
			second: `{"choices":[{"delta":{"content":"xyz"}},{"delta":{"content":"b"}}]}`},
		{name: "texts before the last", first: `{"choices":[{"delta":{"reasoning":null,"reasoning_content":[1],"content":"a"}}]}`,
			second: `{"choices":[{"delta":{"reasoning":null,"reasoning_content":[1],"content":"abcd"}}]}`, match: true, out: 3 + 4},
		{name: "text like the tail", first: `{"choices":[{"delta":{"content":"a"}}],"x":"}"}`,
			second: `{"choices":[{"delta":{"content":"}"}}],"x":"}"}`, match: true, out: 1},
		{name: "text swallowing the tail", first: `{"choices":[{"delta":{"content":"a"}}],"x":"}"}`,
			second: `{"choices":[{"delta":{"content":"}}],"x":"}"}`},
		{name: "lead and tail overlap", first: `{"choices":[{"delta":{"content":""}}],"x":"\"}}],\"x\":\""}`,
			second: `{"choices":[{"delta":{"content":"}}],"x":""}`},
		{name: "cut short", first: shapeChunk("content", `"a"`), second: shapeChunk("content", `"a"`)[:150]},
		{name: "deeper limit", first: shapeChunk("content", `"a"`), second: shapeChunk("content", `"b"`), depth: 4, match: true, out: 1},
		{name: "error in the tail", first: `{"choices":[{"delta":{"content":"a"}}],"error":{"message":"x"}}`,
			second: `{"choices":[{"delta":{"content":"bc"}}],"error":{"message":"x"}}`, match: true, out: 2},
		{name: "whitespace", first: " {\"choices\" : [ {\"delta\":{ \"content\" : \"a\" } } ] , \"usage\" : null }\n",
			second: " {\"choices\" : [ {\"delta\":{ \"content\" : \"bb\" } } ] , \"usage\" : null }\n", match: true, out: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			depth := tc.depth
			if depth == 0 {
				depth = jsonlimit.DefaultMaxDepth
			}
			got, matched := checkShape(t, tc.first, tc.second, depth, depth)
			if matched != tc.match {
				t.Fatalf("matched = %v, want %v", matched, tc.match)
			}
			if matched && got.outBytes != tc.out {
				t.Errorf("output %d bytes, want %d", got.outBytes, tc.out)
			}
		})
	}
}

// TestChunkShapeDepth checks that a shape learnt at one limit says nothing
// at another: the same chunk may not scan there.
func TestChunkShapeDepth(t *testing.T) {
	first, second := shapeChunk("content", `"a"`), shapeChunk("content", `"b"`)
	for _, d := range []int{0, 1, 3, 5} {
		if _, matched := checkShape(t, first, second, 4, d); matched {
			t.Errorf("a shape learnt at limit 4 matched at %d", d)
		}
	}
}

// FuzzChunkShape teaches a shape with first and checks second, and the
// first's shape with text in place of its text, against full scans. go test
// runs the seeds; go test -fuzz FuzzChunkShape ./chatproxy explores further.
func FuzzChunkShape(f *testing.F) {
	for _, s := range []struct {
		first, second, text string
		depth               uint8
	}{
		{shapeChunk("content", `"Hello"`), shapeChunk("content", `" world"`), ` the "tower\`, 0},
		{shapeChunk("reasoning_content", `"a"`), shapeChunk("content", `"a"`), `\\`, 4},
		{`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"{\"a"}}]}}],"usage":null}`,
			`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":""}}]}}],"usage":null}`, `":[1,{}]}`, 7},
		{`{"usage":{"prompt_tokens":1},"choices":[{"delta":{"content":"x"}}],"error":{"a":[1]}}`, `{}`, `"}`, 3},
		{`{"choices":[{"delta":{"content":"a"}}],"x":"}"}`, `{"choices":[{"delta":{"content":"}"}}],"x":"}"}`, `}`, 0},
	} {
		f.Add(s.first, s.second, s.text, s.depth)
	}
	f.Fuzz(func(t *testing.T, first, second, text string, depth uint8) {
		d := int(depth%12) + 1
		if depth >= 12 {
			d = jsonlimit.DefaultMaxDepth
		}
		checkShape(t, first, second, d, d)
		checkShape(t, first, second, d, d-1)
		c, ok := scanChunk([]byte(first), 0, d)
		if !ok || c.textEnd == 0 {
			return
		}
		lead, tail := first[:c.textAt+1], first[c.textEnd:]
		checkShape(t, first, lead+text+tail, d, d)
		_, matched := checkShape(t, first, lead+text+`"`+tail, d, d)
		if !matched && !strings.ContainsAny(text, `"\`) {
			t.Errorf("%q did not match the shape of %q", lead+text+`"`+tail, first)
		}
	})
}

// checkShape teaches a chunkShape the first chunk, scanned at the limit
// learnt, and checks that what it says of second at the limit depth is what
// a full scan of second says. It returns that, and whether second matched.
func checkShape(t *testing.T, first, second string, learnt, depth int) (chunkInfo, bool) {
	t.Helper()
	var s chunkShape
	if c, ok := scanChunk([]byte(first), 0, learnt); ok {
		s.learn([]byte(first), c, learnt)
	}
	got, matched := s.match([]byte(second), depth)
	if !matched {
		return got, false
	}
	if want, ok := scanChunk([]byte(second), 0, depth); !ok || got != want {
		t.Errorf("%q, in the shape of %q at limit %d: got %+v, a full scan %+v %v", second, first, depth, got, want, ok)
	}
	return got, true
}
