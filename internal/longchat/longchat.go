// Package longchat generates the request bodies of a coding agent's long
// conversation, deterministically: a system prompt, a tools array, and
// turns of user questions, assistant answers with code blocks, tool calls
// and tool results holding source files. The benchmarks of request
// inspection and the performance harness send them, so that both measure
// the bodies that grow fastest in real traffic: 100 KiB to a few MiB,
// dense with escaped quotes, newlines and tabs.
package longchat

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// message is one chat message, marshalled with its fields in this order.
type message struct {
	Role       string     `json:"role"`
	Content    any        `json:"content"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type toolCall struct {
	ID       string   `json:"id"`
	Type     string   `json:"type"`
	Function function `json:"function"`
}

type function struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// textBlock is a content block of a multi-part user message.
type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Body returns an OpenAI chat completion request for model of about size
// bytes (a few KiB more at most): the conversation grows turn by turn
// until it is that large, and ends with a tool result. extra, when not empty, is raw JSON members
// appended to the top-level object (e.g. `"stream":true`). The same
// arguments always give the same bytes.
func Body(model string, size int, extra string) []byte {
	rng := rand.New(rand.NewPCG(22, uint64(size)))
	var b strings.Builder
	b.Grow(size + 8<<10)
	fmt.Fprintf(&b, `{"model":%s,"messages":[`, marshal(model))
	b.Write(marshal(message{Role: "system", Content: systemPrompt}))
	// The conversation ends in an agent loop under way: its last turn stops
	// at a tool result, which the model is asked to answer.
	tail := len(tools) + len(extra) + 64
	for turn := 0; ; turn++ {
		var ms [][]byte
		for _, m := range conversationTurn(rng, turn) {
			ms = append(ms, marshal(m))
		}
		last := b.Len()+len(ms[0])+len(ms[1])+len(ms[2])+3+tail >= size
		if last {
			ms = ms[:3]
		}
		for _, m := range ms {
			b.WriteByte(',')
			b.Write(m)
		}
		if last {
			break
		}
	}
	b.WriteString(`],"tools":`)
	b.WriteString(tools)
	b.WriteString(`,"temperature":0.2,"max_completion_tokens":8192`)
	if extra != "" {
		b.WriteByte(',')
		b.WriteString(extra)
	}
	b.WriteByte('}')
	return []byte(b.String())
}

// conversationTurn returns the messages of one turn: the user asks, the
// assistant reads a file through a tool, gets its content, and answers
// with a patch in a code block.
func conversationTurn(rng *rand.Rand, turn int) []message {
	file := files[turn%len(files)]
	src := sourceFile(rng, file, 40+rng.IntN(80))
	id := fmt.Sprintf("call_%016x", rng.Uint64())
	args := string(marshal(map[string]any{"path": file, "start_line": 1, "end_line": 400}))
	var user any = fmt.Sprintf("Turn %d: the tests in %s fail with \"index out of range [%d] with length %d\". "+
		"Can you find out why, and fix it without changing the public API?", turn, file, rng.IntN(64), rng.IntN(64))
	if turn%3 == 1 {
		user = []textBlock{
			{Type: "text", Text: "Here is the failing output:\n```\n--- FAIL: TestScan (0.00s)\n    scan_test.go:42: got \"a\\tb\", want \"a b\"\n```"},
			{Type: "text", Text: "Please also keep the error strings lowercase."},
		}
	}
	return []message{
		{Role: "user", Content: user},
		{Role: "assistant", Content: nil, ToolCalls: []toolCall{{ID: id, Type: "function", Function: function{Name: "read_file", Arguments: args}}}},
		{Role: "tool", ToolCallID: id, Content: src},
		{Role: "assistant", Content: "The loop reads `b[i+1]` before checking the length. Here is the fix:\n\n```go\n" +
			sourceFile(rng, file, 8+rng.IntN(16)) + "```\n\nRun `go test ./...` to confirm; I have not changed any exported identifier."},
	}
}

// sourceFile returns lines of plausible Go source for the file name.
func sourceFile(rng *rand.Rand, name string, lines int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "// Package %s is part of the project.\npackage %s\n\nimport (\n\t\"bytes\"\n\t\"fmt\"\n)\n\n",
		strings.TrimSuffix(name[strings.LastIndexByte(name, '/')+1:], ".go"), "scan")
	for i := 0; i < lines; i++ {
		b.WriteString(codeLines[rng.IntN(len(codeLines))])
		b.WriteByte('\n')
	}
	return b.String()
}

// marshal encodes v as JSON, as a client SDK would.
func marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // the values above always encode
	}
	return b
}

var files = []string{"internal/scan/scan.go", "cmd/tool/main.go", "store/journal.go", "proxy/stream.go", "api/handler.go"}

var codeLines = []string{
	"func (s *Scanner) Next() (Token, error) {",
	"\tif s.pos >= len(s.buf) {",
	"\t\treturn Token{}, fmt.Errorf(\"unexpected end of input at %d\", s.pos)",
	"\t}",
	"\tfor i := s.pos; i < len(s.buf); i++ {",
	"\t\tswitch c := s.buf[i]; c {",
	"\t\tcase '\"', '\\\\':",
	"\t\t\ts.pos = i + 1",
	"\t\tcase '\\t', '\\n':",
	"\t\t\tcontinue",
	"\t\t}",
	"\tbuf := bytes.NewBuffer(make([]byte, 0, 64))",
	"\tfmt.Fprintf(buf, \"%s=%q\\n\", key, value)",
	"\treturn strings.TrimSpace(string(b[start:end])), nil",
	"// handle returns the answer for one request; it never panics.",
	"\tdefer func() { _ = r.Body.Close() }()",
	"\tw.Header().Set(\"Content-Type\", \"application/json; charset=utf-8\")",
	"\tif err := json.NewEncoder(w).Encode(map[string]any{\"ok\": true}); err != nil {",
	"}",
	"",
}

const systemPrompt = "You are a coding agent working in the user's repository. You can read and write files " +
	"and run commands through the tools below. Before changing code, read the files involved and the tests " +
	"that cover them. Keep changes small and explain each one. Never invent file contents: read them. " +
	"When a command fails, show its output and reason about it before trying again.\n\n" +
	"Conventions of this repository:\n- Go 1.26, gofmt, early returns\n- errors are lowercase, wrapped with %w\n" +
	"- table-driven tests named \"Test %d: ...\"\n- no global state but registries set in init"

// tools are the agent's tool definitions, as raw JSON.
const tools = `[{"type":"function","function":{"name":"read_file","description":"Read a file of the repository, optionally a range of lines.",` +
	`"parameters":{"type":"object","properties":{"path":{"type":"string","description":"path relative to the repository root"},` +
	`"start_line":{"type":"integer","minimum":1},"end_line":{"type":"integer","minimum":1}},"required":["path"],"additionalProperties":false}}},` +
	`{"type":"function","function":{"name":"write_file","description":"Replace a file's content.","parameters":{"type":"object",` +
	`"properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"],"additionalProperties":false}}},` +
	`{"type":"function","function":{"name":"run","description":"Run a shell command in the repository and return its output (stdout and stderr, truncated to 64 KiB).",` +
	`"parameters":{"type":"object","properties":{"command":{"type":"string"},"timeout_seconds":{"type":"integer","minimum":1,"maximum":600}},"required":["command"]}}},` +
	`{"type":"function","function":{"name":"search","description":"Search the repository with a regular expression.","parameters":{"type":"object",` +
	`"properties":{"pattern":{"type":"string"},"glob":{"type":"string","default":"**/*.go"},"max_results":{"type":"integer","default":50}},"required":["pattern"]}}}]`
