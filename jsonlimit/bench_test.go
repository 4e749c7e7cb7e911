package jsonlimit

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// codeSample is a code block of the kind chat histories are full of: every
// newline, tab and quote in it is escaped in the JSON body.
const codeSample = "```go\nfunc handler(w http.ResponseWriter, r *http.Request) {\n" +
	"\tbody, err := io.ReadAll(r.Body)\n\tif err != nil {\n" +
	"\t\thttp.Error(w, \"bad request\", http.StatusBadRequest)\n\t\treturn\n\t}\n" +
	"\tfmt.Fprintf(w, \"got %d bytes: %q\\n\", len(body), body[:min(len(body), 16)])\n}\n```\n"

// chatBody returns an OpenAI chat request of about size bytes: a system
// prompt, then turns of questions and answers with prose and code blocks,
// and a tool with a JSON schema.
func chatBody(size int) []byte {
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	msgs := []message{{"system", "You are a senior Go reviewer. Answer with code when it helps, explain trade-offs, and keep answers short."}}
	for n := 0; ; n++ {
		b, _ := json.Marshal(msgs)
		if len(b) >= size {
			break
		}
		if n%2 == 0 {
			msgs = append(msgs, message{"user", fmt.Sprintf("Turn %d: why does this handler log 'unexpected EOF' under load, and how would you test it?\n\n%s", n, codeSample)})
		} else {
			msgs = append(msgs, message{"assistant", "The client closes the connection before the body is read in full. Bound the read and check the error:\n\n" +
				codeSample + "Test it with a reader that fails halfway — for example `iotest.TimeoutReader` — and assert on the status code.\n" +
				strings.Repeat("Prose explaining the change in more detail, with café-style UTF-8 now and then. ", 3)})
		}
	}
	body, err := json.Marshal(map[string]any{
		"model":    "gpt-4o",
		"stream":   true,
		"messages": msgs,
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{
			"name": "run_tests", "description": "Run the package's tests",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{
				"pkg": map[string]any{"type": "string"}, "race": map[string]any{"type": "boolean"},
			}, "required": []string{"pkg"}},
		}}},
	})
	if err != nil {
		panic(err)
	}
	return body
}

// chunkSample is an OpenAI stream chunk, the unit the stream tap reads.
var chunkSample = []byte(`{"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{"content":" sentence"},"logprobs":null,"finish_reason":null}],"usage":null}`)

func benchValidators(b *testing.B, body []byte) {
	b.Run("jsonlimit", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if err := Check(body, DefaultMaxDepth); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("gjson", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if !gjson.ValidBytes(body) {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if !json.Valid(body) {
				b.Fatal("invalid")
			}
		}
	})
}

// BenchmarkChatBody compares Check with gjson.Valid and json.Valid on a
// 200 KiB chat request.
func BenchmarkChatBody(b *testing.B) { benchValidators(b, chatBody(200<<10)) }

// BenchmarkChunk does the same on one stream chunk.
func BenchmarkChunk(b *testing.B) { benchValidators(b, chunkSample) }
