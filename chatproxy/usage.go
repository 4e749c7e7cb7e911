package chatproxy

import (
	"bytes"
	"unsafe"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect/anthropic"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"github.com/caddy-air/caddy-air/jsonlimit"
	"github.com/tidwall/gjson"
)

// tap follows a response as it is forwarded and collects its token usage,
// reported or estimated.
type tap struct {
	proto Protocol
	// strip removes the usage the gateway injected from an OpenAI stream.
	strip bool
	// maxDepth bounds the nesting of the JSON the tap reads; zero means
	// jsonlimit.DefaultMaxDepth. Deeper chunks and bodies are forwarded
	// untouched and counted as output, like any other it cannot read.
	maxDepth int
	// usage is the usage reported so far.
	usage billing.Usage
	// calls counts a Responses answer's priced tool calls from its
	// output items; scan counts them instead in the bytes of an answer
	// too large to hold.
	calls billing.ToolCalls
	scan  toolScan
	// big follows a Responses stream event too large to parse.
	big bigEventState
	// container is set when an Anthropic answer names the code execution
	// container it used (one code session).
	container bool
	// serviceTier is the service tier the response reported: OpenAI's
	// top-level service_tier, Anthropic's usage.service_tier.
	serviceTier string
	// reported is set once the complete usage has been reported.
	reported bool
	// started is set when an Anthropic message_start reported the prompt.
	started bool
	// outBytes counts the delivered output text (see estimate.go).
	outBytes int64
	// upstreamError is set when the stream carried an error event.
	upstreamError bool
	// terminal is set by the stream's final event: OpenAI's [DONE],
	// Anthropic's message_stop, a Responses response.completed (or
	// incomplete, failed, error). A stream that ends without it was cut.
	terminal bool
	// respID and respStatus are a Responses answer's id and last status.
	respID, respStatus string
	// scratch joins multi-line data fields.
	scratch []byte
	// prefix is the beginning of an OpenAI chunk up to its choices, which
	// the next chunks of the stream likely repeat (see chunk.go).
	prefix []byte
	// shape is the shape of an OpenAI chunk around its text, which the
	// next chunks of the stream likely have too (see chunkshape.go).
	shape chunkShape
	// meta, when set, collects the answer's model and finish reasons for
	// the attempt's span (see observe.go).
	meta *respMeta
}

// doneData is the data of an OpenAI stream's final event.
var doneData = []byte("[DONE]")

// usageKey is the key of a usage member, as it appears in a chunk.
var usageKey = []byte(`"usage"`)

// maxPrefix bounds the chunk prefix a tap keeps.
const maxPrefix = 1 << 10

// ended reports whether the stream has ended: its final event ([DONE],
// message_stop, a Responses terminal event) or an error event of the
// upstream, after which nothing more is forwarded.
func (t *tap) ended() bool { return t.terminal || t.upstreamError }

// event processes one whole SSE event and returns the bytes to forward:
// ev itself, ev edited in place, nil to drop it, or, for the upstream's
// error event, that event scrubbed (scrubEvent).
func (t *tap) event(ev []byte) []byte {
	was := t.upstreamError
	out := t.read(ev)
	if !was && t.upstreamError && out != nil {
		return scrubEvent(t.proto, out)
	}
	return out
}

// read processes one whole SSE event and returns the bytes to forward:
// ev itself, ev edited in place, or nil to drop it.
func (t *tap) read(ev []byte) []byte {
	a, b, multi := dataField(ev)
	if a < 0 {
		return ev
	}
	payload := ev[a:b]
	if multi {
		t.scratch = joinData(t.scratch[:0], ev)
		payload = t.scratch
	}
	if len(payload) == 0 || payload[0] != '{' {
		if (t.proto == OpenAI || t.proto == Transcript) && bytes.Equal(payload, doneData) {
			t.terminal = true
		}
		return ev // [DONE], or not JSON
	}
	if t.proto == Responses {
		t.responsesEvent(payload)
		return ev
	}
	if t.proto == Transcript {
		t.transcriptEvent(payload)
		return ev
	}
	if t.proto == Anthropic {
		if n, ok := deltaBytes(payload, jsonlimit.OrDefault(t.maxDepth)); ok {
			t.outBytes += int64(n)
			return ev
		}
		if jsonlimit.Check(payload, jsonlimit.OrDefault(t.maxDepth)) != nil {
			t.outBytes += int64(len(payload))
			return ev
		}
		t.anthropicEvent(gjson.Parse(str(payload)))
		return ev
	}
	return t.openAIChunk(ev, a, payload, multi)
}

// openAIChunk collects usage, output size and errors from the chat
// completion chunk payload, found at ev[off:] unless multi, and strips the
// usage the gateway injected. It returns the bytes to forward, as event
// does. A payload that does not scan as a JSON object, or nests deeper than
// the tap's limit, is forwarded as it is and counted whole as output.
func (t *tap) openAIChunk(ev []byte, off int, payload []byte, multi bool) []byte {
	depth := jsonlimit.OrDefault(t.maxDepth)
	c, ok := t.shape.match(payload, depth)
	if !ok {
		known := 0
		if len(t.prefix) > 0 && bytes.HasPrefix(payload, t.prefix) {
			known = len(t.prefix)
		}
		if c, ok = scanChunk(payload, known, depth); !ok {
			t.outBytes += int64(len(payload))
			return ev
		}
		if known == 0 && c.choicesAt > 0 && c.choicesAt <= maxPrefix {
			t.prefix = append(t.prefix[:0], payload[:c.choicesAt]...)
		}
		t.shape.learn(payload, c, depth)
	}
	t.outBytes += int64(c.outBytes)
	t.upstreamError = t.upstreamError || c.hasError
	if t.meta != nil {
		t.meta.openAIChunk(payload)
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
			t.serviceTier = st.Str
		}
		raw := usage
		if bytes.Count(payload, usageKey) > 1 || repeats(gjson.Parse(str(usage)), maxUsageDepth) {
			raw = []byte(usageMember(gjson.Parse(str(payload)), "usage").Raw)
		}
		if nu, err := openai.NormalizeUsage(raw); err == nil && (!t.reported || nu.Total() >= t.usage.Total()) {
			// A stream that reports its usage more than once is billed
			// its largest report (cumulative reports grow).
			t.usage, t.reported = nu, true
		}
	}
	switch {
	case !t.strip || multi:
		return ev
	case isObject && !c.choices:
		return nil // the usage-only chunk the client did not ask for
	}
	return deleteMember(ev, off, off+c.usageAt, off+c.usageEnd)
}

// anthropicEvent collects usage and output size from a Messages event.
func (t *tap) anthropicEvent(root gjson.Result) {
	switch root.Get("type").Str {
	case "message_start":
		if t.meta != nil {
			t.meta.setModel(root.Get("message.model").Str)
		}
		t.anthropicContainer(root.Get("message.container"))
		if u := usageMember(root.Get("message"), "usage"); u.IsObject() {
			t.anthropicServiceTier(u)
			if nu, err := anthropic.NormalizeUsage(rawBytes(u)); err == nil {
				t.usage, t.started = nu, true
			}
		}
	case "message_delta":
		if t.meta != nil {
			t.meta.addFinish(root.Get("delta.stop_reason").Str)
		}
		t.anthropicContainer(root.Get("delta.container"))
		if u := usageMember(root, "usage"); u.IsObject() {
			t.anthropicServiceTier(u)
			t.mergeDelta(u)
		}
	case "content_block_start", "content_block_delta":
		t.outBytes += int64(anthropicDeltaBytes(root))
	case "message_stop":
		t.terminal = true
	case "error":
		t.upstreamError = true
	}
}

// mergeDelta applies a message_delta usage: output_tokens is cumulative and
// replaces the previous count; the prompt fields, which newer APIs repeat
// there, replace the message_start ones when present.
func (t *tap) mergeDelta(u gjson.Result) {
	d, err := anthropic.NormalizeUsage(rawBytes(u))
	if err != nil {
		return
	}
	if present(u, "output_tokens") {
		t.usage.Output = d.Output
		t.reported = true
	}
	if present(u, "output_tokens_details") {
		t.usage.Reasoning = d.Reasoning
	}
	if present(u, "input_tokens") {
		t.usage.Input = d.Input
	}
	if present(u, "cache_read_input_tokens") {
		t.usage.CacheRead = d.CacheRead
	}
	if present(u, "cache_creation_input_tokens") || u.Get("cache_creation").IsObject() {
		t.usage.CacheCreation, t.usage.CacheCreation1h = d.CacheCreation, d.CacheCreation1h
	}
	if u.Get("server_tool_use").IsObject() {
		// Cumulative too: the last count is the answer's.
		t.usage.WebSearches, t.usage.WebFetches, t.usage.CodeSessions = d.WebSearches, d.WebFetches, d.CodeSessions
	}
}

// anthropicContainer records the code execution container an Anthropic
// message reports, {"id": …, "expires_at": …}: the answer used one code
// session.
func (t *tap) anthropicContainer(c gjson.Result) {
	if c.IsObject() && c.Get("id").Str != "" {
		t.container = true
	}
}

// anthropicServiceTier records the service_tier of an Anthropic usage
// object, when it has one.
func (t *tap) anthropicServiceTier(u gjson.Result) {
	if st := u.Get("service_tier"); st.Type == gjson.String {
		t.serviceTier = st.Str
	}
}

// body collects usage and output size from a complete (or, when complete
// is false, truncated) non-streaming response body. A complete body that is
// not valid JSON, or nests deeper than the tap's limit, counts whole as
// output. A truncated one cannot be valid; gjson's Get, which does not
// recurse into what it skips, still looks for its usage.
func (t *tap) body(b []byte, complete bool) {
	if complete && jsonlimit.Check(b, jsonlimit.OrDefault(t.maxDepth)) != nil {
		t.outBytes = int64(len(b))
		return
	}
	root := gjson.Parse(str(b))
	t.usageFrom(usageMember(root, "usage"))
	if t.proto == Anthropic {
		t.anthropicServiceTier(root.Get("usage"))
		t.anthropicContainer(root.Get("container"))
	} else if st := root.Get("service_tier"); st.Type == gjson.String {
		t.serviceTier = st.Str
	}
	if t.proto == Responses {
		t.responseObject(root)
		t.calls.Output(rawBytes(root.Get("output")))
	}
	if t.meta != nil {
		t.meta.body(root, t.proto)
	}
	switch {
	case t.reported:
		// The output size only matters for an estimate.
	case !complete:
		t.outBytes = int64(len(b))
	case t.proto == Anthropic:
		t.outBytes = int64(anthropicOutputBytes(root))
	case t.proto == Responses:
		t.outBytes = int64(responsesOutputBytes(root))
	default:
		t.outBytes = int64(openAIOutputBytes(root))
	}
}

// usageFrom records a response's usage object.
func (t *tap) usageFrom(u gjson.Result) {
	if !u.IsObject() {
		return
	}
	if nu, err := t.normalize(rawBytes(u)); err == nil {
		t.usage, t.reported = nu, true
	}
}

// tailUsage finds the usage object in the last bytes of a response too
// large to keep whole: the last `"usage"` key, parsed as if it opened an
// object. A non-object value there is ignored.
func (t *tap) tailUsage(tail []byte) {
	i := bytes.LastIndex(tail, []byte(`"usage"`))
	if i < 0 {
		return
	}
	doc := append([]byte{'{'}, tail[i:]...)
	t.usageFrom(gjson.Get(str(doc), "usage"))
}

// result returns the request's usage and how it was obtained, with the
// tool calls and code sessions seen in the answer, reported or estimated
// alike. cut means the response ended early (client gone, timeout,
// upstream failure); gone means the client left.
func (t *tap) result(promptBytes int, cut, gone bool) (billing.Usage, billing.Source) {
	u, src := t.tokens(promptBytes, cut, gone)
	switch {
	case t.scan.used:
		u = t.scan.apply(u)
	case t.proto == Responses:
		u = t.calls.Apply(u)
	}
	if t.container {
		u.CodeSessions = max(u.CodeSessions, 1)
	}
	return u, src
}

// tokens returns the request's token usage, reported or estimated, and
// how it was obtained (see result).
func (t *tap) tokens(promptBytes int, cut, gone bool) (billing.Usage, billing.Source) {
	src := billing.SourceEstimated
	if cut || gone {
		src = billing.SourcePartial
	}
	switch {
	case t.reported:
		if !gone {
			src = billing.SourceReported
		}
		return t.usage, src
	case t.started:
		u := t.usage
		u.Output = max(u.Output, tokens(t.outBytes))
		if u.Input == 0 && u.CacheRead == 0 && u.CacheCreation == 0 {
			// A start that reported no input: a cloud's stream transcoded
			// into Messages (Bedrock, Gemini), whose usage comes only at
			// its end. Its prompt was read all the same.
			u.Input = tokens(int64(promptBytes))
		}
		return u, src
	}
	return estimate(int64(promptBytes), t.outBytes), src
}

// dataField locates the value of the first "data:" line of an event. multi
// is true when the event has several data lines. a is -1 when it has none.
func dataField(ev []byte) (a, b int, multi bool) {
	a = -1
	for i := 0; i < len(ev); {
		j := bytes.IndexByte(ev[i:], '\n')
		end := len(ev)
		if j >= 0 {
			end = i + j
		}
		line := ev[i:end]
		if bytes.HasPrefix(line, []byte("data:")) {
			if a >= 0 {
				return a, b, true
			}
			a = i + 5
			if a < end && ev[a] == ' ' {
				a++
			}
			b = end
			if b > a && ev[b-1] == '\r' {
				b--
			}
		}
		i = end + 1
	}
	return a, b, false
}

// joinData appends the data lines of ev to dst, joined by newlines, as the
// SSE specification does.
func joinData(dst, ev []byte) []byte {
	first := true
	for len(ev) > 0 {
		line := ev
		if j := bytes.IndexByte(ev, '\n'); j >= 0 {
			line, ev = ev[:j], ev[j+1:]
		} else {
			ev = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if !first {
				dst = append(dst, '\n')
			}
			first = false
			dst = append(dst, bytes.TrimPrefix(v, []byte{' '})...)
		}
	}
	return dst
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
	for i > off && isSpace(ev[i]) {
		i--
	}
	if ev[i] != ':' {
		return ev
	}
	i--
	for i > off && isSpace(ev[i]) {
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
	for i > off && isSpace(ev[i]) {
		i--
	}
	from, to := ks, ve
	switch ev[i] {
	case ',':
		from = i // drop the preceding comma
	case '{':
		j := skipSpace(ev, ve)
		if j < len(ev) && ev[j] == ',' {
			to = j + 1 // first member: drop the following comma
		}
	default:
		return ev
	}
	n := copy(ev[from:], ev[to:])
	return ev[:from+n]
}

// rawBytes views a result's raw JSON as bytes without copying; they must
// not be modified.
func rawBytes(r gjson.Result) []byte {
	return unsafe.Slice(unsafe.StringData(r.Raw), len(r.Raw))
}

// present reports whether obj has a non-null key.
func present(obj gjson.Result, key string) bool {
	r := obj.Get(key)
	return r.Exists() && r.Type != gjson.Null
}
