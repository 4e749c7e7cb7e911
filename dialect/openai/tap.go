package openai

import (
	"bytes"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/internal/tapcore"
	"github.com/caddy-air/caddy-air/jsonlimit"
)

// chatTap is the usage tap of a chat completion (dialect.Tap).
type chatTap struct {
	tapcore.Core
	// prefix is the beginning of a chunk up to its choices, which the next
	// chunks of the stream likely repeat (see chunk.go).
	prefix []byte
	// shape is the shape of a chunk around its text, which the next chunks
	// of the stream likely have too (see chunkshape.go).
	shape chunkShape
}

// doneData is the data of a stream's final event.
var doneData = []byte("[DONE]")

// jsonData locates the data of the whole SSE event ev (see
// tapcore.Core.Payload) when it is a JSON object, and reports false for
// an event to forward as it is: one without data, or whose data is not
// JSON, [DONE] included, which it records as the stream's end.
func jsonData(c *tapcore.Core, ev []byte) (payload []byte, a int, multi, ok bool) {
	payload, a, multi, ok = c.Payload(ev)
	if !ok {
		return nil, a, false, false
	}
	if len(payload) == 0 || payload[0] != '{' {
		if bytes.Equal(payload, doneData) {
			c.Term = true
		}
		return nil, a, false, false // [DONE], or not JSON
	}
	return payload, a, multi, true
}

// usageKey is the key of a usage member, as it appears in a chunk.
var usageKey = []byte(`"usage"`)

// maxPrefix bounds the chunk prefix a tap keeps.
const maxPrefix = 1 << 10

// reset readies t for a new answer, keeping its buffers.
func (t *chatTap) reset(cfg dialect.TapConfig) {
	t.Core.Reset(cfg)
	t.prefix = t.prefix[:0]
	t.shape = chunkShape{buf: t.shape.buf[:0]}
}

// Release implements dialect.Tap.
func (t *chatTap) Release() { chatTaps.Put(t) }

// Event implements dialect.Tap.
func (t *chatTap) Event(ev []byte) []byte {
	was := t.UpstreamErr
	out := t.read(ev)
	if !was && t.UpstreamErr && out != nil {
		return scrubEvent(out)
	}
	return out
}

// read processes one whole SSE event and returns the bytes to forward: ev
// itself, ev edited in place, or nil to drop it.
func (t *chatTap) read(ev []byte) []byte {
	payload, a, multi, ok := jsonData(&t.Core, ev)
	if !ok {
		return ev
	}
	return t.chunk(ev, a, payload, multi)
}

// chunk collects usage, output size and errors from the chat completion
// chunk payload, found at ev[off:] unless multi, and strips the usage the
// gateway injected. It returns the bytes to forward, as Event does. A
// payload that does not scan as a JSON object, or nests deeper than the
// tap's limit, is forwarded as it is and counted whole as output.
func (t *chatTap) chunk(ev []byte, off int, payload []byte, multi bool) []byte {
	depth := t.Depth()
	c, ok := t.shape.match(payload, depth)
	if !ok {
		known := 0
		if len(t.prefix) > 0 && bytes.HasPrefix(payload, t.prefix) {
			known = len(t.prefix)
		}
		if c, ok = scanChunk(payload, known, depth); !ok {
			t.OutBytes += int64(len(payload))
			return ev
		}
		if known == 0 && c.choicesAt > 0 && c.choicesAt <= maxPrefix {
			t.prefix = append(t.prefix[:0], payload[:c.choicesAt]...)
		}
		t.shape.learn(payload, c, depth)
	}
	t.OutBytes += int64(c.outBytes)
	t.UpstreamErr = t.UpstreamErr || c.hasError
	if t.Meta != nil {
		metaChunk(t.Meta, payload)
	}
	if c.usageAt < 0 {
		return ev
	}
	usage := payload[c.usageAt:c.usageEnd]
	isObject := usage[0] == '{'
	if isObject {
		// Only the chunk with the usage object is looked at again: with
		// usage asked for, every chunk carries "usage":null, and its
		// service tier is the one the usage chunk repeats.
		if st := gjson.GetBytes(payload, "service_tier"); st.Type == gjson.String {
			t.ServiceTier = st.Str
		}
		raw := usage
		if bytes.Count(payload, usageKey) > 1 || tapcore.Repeats(gjson.Parse(tapcore.Str(usage)), tapcore.MaxUsageDepth) {
			raw = []byte(tapcore.UsageMember(gjson.Parse(tapcore.Str(payload)), "usage").Raw)
		}
		if nu, err := NormalizeUsage(raw); err == nil && (!t.Reported || nu.Total() >= t.Usage.Total()) {
			// A stream that reports its usage more than once is billed
			// its largest report (cumulative reports grow).
			t.Usage, t.Reported = nu, true
		}
	}
	switch {
	case !t.Strip || multi:
		return ev
	case isObject && !c.choices:
		return nil // the usage-only chunk the client did not ask for
	}
	return deleteMember(ev, off, off+c.usageAt, off+c.usageEnd)
}

// Body implements dialect.Tap. A complete body that is not valid JSON, or
// nests deeper than the tap's limit, counts whole as output. A truncated
// one cannot be valid; gjson's Get, which does not recurse into what it
// skips, still looks for its usage.
func (t *chatTap) Body(b []byte, complete bool) { body(&t.Core, b, complete) }

// body reads a whole chat completion (or a transcription) into c.
func body(c *tapcore.Core, b []byte, complete bool) {
	if complete && jsonlimit.Check(b, c.Depth()) != nil {
		c.OutBytes = int64(len(b))
		return
	}
	root := gjson.Parse(tapcore.Str(b))
	c.UsageFrom(tapcore.UsageMember(root, "usage"), NormalizeUsage)
	if st := root.Get("service_tier"); st.Type == gjson.String {
		c.ServiceTier = st.Str
	}
	if c.Meta != nil {
		c.Meta.SetModel(root.Get("model").Str)
		for _, r := range root.Get("choices.#.finish_reason").Array() {
			c.Meta.AddFinish(r.Str)
		}
	}
	switch {
	case c.Reported:
		// The output size only matters for an estimate.
	case !complete:
		c.OutBytes = int64(len(b))
	default:
		c.OutBytes = int64(outputBytes(root))
	}
}

// Tail implements dialect.Tap.
func (t *chatTap) Tail(tail []byte) { t.TailUsage(tail, NormalizeUsage) }

// outputBytes sizes the text of a whole chat completion: the message of
// each choice. (A stream's chunks are sized by scanChunk.)
func outputBytes(resp gjson.Result) int {
	n := 0
	resp.Get("choices").ForEach(func(_, c gjson.Result) bool {
		n += messageBytes(c.Get("message"))
		return true
	})
	return n
}

// messageBytes sizes a message or delta: its content, reasoning and tool
// call names and arguments. It reads the message in one pass.
func messageBytes(m gjson.Result) int {
	n := 0
	m.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "content", "reasoning_content", "reasoning":
			n += dialect.TextLen(v)
		case "tool_calls":
			v.ForEach(func(_, tc gjson.Result) bool {
				f := tc.Get("function")
				n += dialect.TextLen(f.Get("name")) + dialect.TextLen(f.Get("arguments"))
				return true
			})
		}
		return true
	})
	return n
}

// finishKey marks a chunk that may carry a finish reason.
var finishKey = []byte(`"finish_reason"`)

// metaChunk reads into m the model of a stream's first chunk and the
// finish reasons of its choices. Only a chunk whose finish_reason is a
// string is parsed: most chunks have null there.
func metaChunk(m *dialect.Meta, payload []byte) {
	if m.Model == "" {
		m.SetModel(gjson.GetBytes(payload, "model").Str)
	}
	if i := bytes.Index(payload, finishKey); i < 0 || !stringFollows(payload[i+len(finishKey):]) {
		return
	}
	for _, r := range gjson.GetBytes(payload, "choices.#.finish_reason").Array() {
		m.AddFinish(r.Str)
	}
}

// stringFollows reports whether b, after a colon and spaces, begins a
// string.
func stringFollows(b []byte) bool {
	i := tapcore.SkipSpace(b, 0)
	if i >= len(b) || b[i] != ':' {
		return false
	}
	i = tapcore.SkipSpace(b, i+1)
	return i < len(b) && b[i] == '"'
}

// deleteMember removes the member whose value is ev[vs:ve] from the JSON
// object that starts at ev[off:], editing ev in place, and returns the
// shortened ev. It leaves ev unchanged when the member cannot be located
// safely.
func deleteMember(ev []byte, off, vs, ve int) []byte {
	if vs <= off {
		return ev
	}
	i := vs - 1
	for i > off && tapcore.IsSpace(ev[i]) {
		i--
	}
	if ev[i] != ':' {
		return ev
	}
	i--
	for i > off && tapcore.IsSpace(ev[i]) {
		i--
	}
	if ev[i] != '"' {
		return ev
	}
	ks := bytes.LastIndexByte(ev[off:i], '"')
	if ks < 0 {
		return ev
	}
	ks += off
	i = ks - 1
	for i > off && tapcore.IsSpace(ev[i]) {
		i--
	}
	from, to := ks, ve
	switch ev[i] {
	case ',':
		from = i // drop the preceding comma
	case '{':
		j := tapcore.SkipSpace(ev, ve)
		if j < len(ev) && ev[j] == ',' {
			to = j + 1 // first member: drop the following comma
		}
	default:
		return ev
	}
	n := copy(ev[from:], ev[to:])
	return ev[:from+n]
}
