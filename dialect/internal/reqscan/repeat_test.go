package reqscan

import (
	"fmt"
	"github.com/caddy-air/caddy-air/dialect"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/apierror"
)

// The property test of repeated members: from a body of each protocol
// that holds every member the gateway reads, at every depth it reads, it
// makes bodies in which one member appears twice (its key spelled plainly
// or with an escape, "include\u005fusage", in either copy), and bodies in
// which one key is only spelled with an escape. A repeat of a member the
// gateway reads is refused with 400 naming its path; an escaped spelling
// alone changes nothing in its reading, nor does a repeat of a member it
// does not read (but the raw size of what holds it). Every body also goes
// through the differential test.

// jObj is a JSON object of the test bodies; read lists the members the
// gateway reads in it.
type jObj struct {
	read []string
	ms   []jMember
}

// jMember is a member of a jObj.
type jMember struct {
	key string
	v   any // jObj, jArr or a raw JSON scalar (string)
}

// jArr is a JSON array of the test bodies.
type jArr []any

// obj builds a jObj of alternating keys and values.
func obj(read []string, kv ...any) jObj {
	o := jObj{read: read}
	for i := 0; i < len(kv); i += 2 {
		o.ms = append(o.ms, jMember{kv[i].(string), kv[i+1]})
	}
	return o
}

// The members read in each kind of object.
var (
	readChat     = []string{"model", "messages", "tools", "stream", "stream_options", "stop", "temperature", "top_p", "frequency_penalty", "presence_penalty", "max_tokens", "max_completion_tokens"}
	readMessages = []string{"model", "messages", "system", "tools", "stream", "max_tokens"}
	readResp     = []string{"model", "stream", "background", "previous_response_id", "input", "instructions", "tools", "prompt", "conversation", "max_output_tokens"}
	readMessage  = []string{"content", "tool_calls"}
	readBlock    = []string{"type", "text", "thinking", "name", "input", "content"}
	readUsage    = []string{"include_usage"}
)

// blocks is a content array with blocks of every type the estimate reads,
// a tool result nesting blocks of its own.
func blocks() jArr {
	return jArr{
		obj(readBlock, "type", `"text"`, "text", `"hello"`, "cache_control", obj(nil, "type", `"ephemeral"`)),
		obj(readBlock, "type", `"thinking"`, "thinking", `"hmm"`, "signature", `"sig"`),
		obj(readBlock, "type", `"tool_use"`, "id", `"t1"`, "name", `"run"`, "input", obj(nil, "cmd", `"ls"`)),
		obj(readBlock, "type", `"tool_result"`, "tool_use_id", `"t1"`, "content", jArr{
			obj(readBlock, "type", `"text"`, "text", `"out"`),
			obj(readBlock, "type", `"image"`, "source", obj(nil, "data", `"AAAA"`)),
		}),
	}
}

// messagesArr is a messages (or input) array.
func messagesArr() jArr {
	return jArr{
		obj(readMessage, "role", `"user"`, "name", `"al"`, "content", blocks()),
		obj(readMessage, "role", `"assistant"`, "content", `"sure"`,
			"tool_calls", jArr{obj(nil, "id", `"c1"`, "function", obj(nil, "name", `"f"`, "arguments", `"{}"`))}),
	}
}

// repeatBodies are the bodies of each inspection that the test varies.
func repeatBodies() []struct {
	inspector string
	body      jObj
} {
	tools := jArr{obj(nil, "type", `"function"`, "function", obj(nil, "name", `"f"`, "parameters", obj(nil, "type", `"object"`)))}
	return []struct {
		inspector string
		body      jObj
	}{
		{"chat", obj(readChat, "model", `"m"`, "messages", messagesArr(), "tools", tools, "stream", `true`,
			"stream_options", obj(readUsage, "include_usage", `true`, "x", `1`), "stop", `["a","b"]`,
			"temperature", `0.5`, "top_p", `0.9`, "frequency_penalty", `0`, "presence_penalty", `0`,
			"max_tokens", `100`, "max_completion_tokens", `50`, "user", `"u"`, "system", `"not read in chat"`)},
		{"messages", obj(readMessages, "model", `"c"`, "system", jArr{obj(readBlock, "type", `"text"`, "text", `"sys"`)},
			"messages", messagesArr(), "tools", jArr{obj(nil, "name", `"t"`, "input_schema", obj(nil))},
			"stream", `false`, "max_tokens", `1024`, "temperature", `1`, "stream_options", obj(nil, "include_usage", `true`))},
		{"responses", obj(readResp, "model", `"r"`, "input", messagesArr(), "instructions", `"be brief"`, "tools", tools,
			"stream", `true`, "background", `false`, "previous_response_id", `"resp_1"`, "prompt", obj(nil, "id", `"p"`),
			"conversation", `null`, "max_output_tokens", `64`, "store", `true`)},
		{"embeddings", obj([]string{"model", "input"}, "model", `"e"`, "input", `["a","b"]`, "encoding_format", `"float"`)},
		{"count_tokens", obj([]string{"model", "messages", "system", "tools"}, "model", `"c"`,
			"messages", jArr{obj(nil, "role", `"user"`, "content", `"x"`)}, "system", `"s"`, "tools", `[]`)},
	}
}

// variant is one change to a body: the member at index target (in
// pre-order) is repeated or only escaped.
type variant struct {
	target       int
	repeat       bool
	escapeFirst  bool // the key of the member, or of its first copy
	escapeSecond bool
	rng          *rand.Rand
	// found after writing: the member's path, and whether its object
	// reads it.
	path string
	read bool
}

// writer writes a jObj with a variant applied.
type writer struct {
	b     strings.Builder
	n     int // members written so far
	v     *variant
	depth []string
}

func (w *writer) value(v any) {
	switch x := v.(type) {
	case jObj:
		w.b.WriteByte('{')
		for i, m := range x.ms {
			if i > 0 {
				w.b.WriteByte(',')
			}
			idx := w.n
			w.n++
			hit := idx == w.v.target
			if hit {
				w.v.path = strings.Join(append(w.depth, m.key), ".")
				w.v.path = strings.ReplaceAll(w.v.path, ".[", "[")
				w.v.read = slicesContains(x.read, m.key)
			}
			w.key(m.key, hit && w.v.escapeFirst)
			w.depth = append(w.depth, m.key)
			w.value(m.v)
			if hit && w.v.repeat {
				w.b.WriteByte(',')
				w.key(m.key, w.v.escapeSecond)
				w.value(flipped(m.v))
			}
			w.depth = w.depth[:len(w.depth)-1]
		}
		w.b.WriteByte('}')
	case jArr:
		w.b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				w.b.WriteByte(',')
			}
			w.depth = append(w.depth, "["+strconv.Itoa(i)+"]")
			w.value(e)
			w.depth = w.depth[:len(w.depth)-1]
		}
		w.b.WriteByte(']')
	case string:
		w.b.WriteString(x)
	}
}

// key writes a key, one of its letters escaped as \u00XX when asked.
func (w *writer) key(k string, escape bool) {
	w.b.WriteByte('"')
	at := -1
	if escape {
		at = w.v.rng.IntN(len(k))
	}
	for i := 0; i < len(k); i++ {
		if i == at {
			f := "\\u%04x"
			if w.v.rng.IntN(2) == 0 {
				f = "\\u%04X"
			}
			fmt.Fprintf(&w.b, f, k[i])
			continue
		}
		w.b.WriteByte(k[i])
	}
	w.b.WriteString(`":`)
}

// flipped is the value of a repeat: a boolean flipped (the repeat that
// switched usage off), any other value as it is.
func flipped(v any) any {
	switch v {
	case `true`:
		return `false`
	case `false`:
		return `true`
	}
	return v
}

func slicesContains(s []string, k string) bool {
	for _, x := range s {
		if x == k {
			return true
		}
	}
	return false
}

func TestRepeatedMembersRefused(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 30))
	byName := map[string]func([]byte, int) (dialect.Inspected, *apierror.Error){}
	for _, p := range inspectors {
		byName[p.name] = p.got
	}
	for _, tc := range repeatBodies() {
		inspect := byName[tc.inspector]
		base := writer{v: &variant{target: -1}}
		base.value(tc.body)
		want, e := inspect([]byte(base.b.String()), 0)
		if e != nil {
			t.Fatalf("%s: the base body is refused: %s\n%s", tc.inspector, e.Message, base.b.String())
		}
		want.Located = dialect.Located{}
		refused := 0
		for target := 0; target < base.n; target++ {
			for _, v := range []variant{
				{repeat: true},
				{repeat: true, escapeFirst: true},
				{repeat: true, escapeSecond: true},
				{repeat: true, escapeFirst: true, escapeSecond: true},
				{escapeFirst: true},
			} {
				v.target, v.rng = target, rng
				w := writer{v: &v}
				w.value(tc.body)
				body := []byte(w.b.String())
				got, e := inspect(body, 0)
				compareInspect(t, body, 0)
				if v.repeat && v.read {
					refused++
					switch {
					case e == nil:
						t.Errorf("%s: %s repeated, accepted: %s", tc.inspector, v.path, body)
					case e.Status != http.StatusBadRequest || paramOf(e) != v.path ||
						e.Message != fmt.Sprintf("%q appears more than once in the request body", v.path):
						t.Errorf("%s: %s repeated: %d %s: %s\n%s", tc.inspector, v.path, e.Status, paramOf(e), e.Message, body)
					}
					continue
				}
				if e != nil {
					t.Errorf("%s: %s (repeated %v, not read): refused: %s: %s\n%s", tc.inspector, v.path, v.repeat, paramOf(e), e.Message, body)
					continue
				}
				got.Located = dialect.Located{}
				if !v.read {
					// A member not read may be inside one sized by its
					// raw length (compareInspect checks that size).
					got.PromptBytes = want.PromptBytes
				}
				if got != want {
					t.Errorf("%s: %s (repeated %v, not read):\n got %+v\nwant %+v\n%s", tc.inspector, v.path, v.repeat, got, want, body)
				}
			}
		}
		if refused == 0 {
			t.Errorf("%s: no member the gateway reads was varied", tc.inspector)
		}
	}
}
