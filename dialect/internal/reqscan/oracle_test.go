package reqscan

// The oracle of TestInspectDifferential and FuzzInspect reads a request
// body as a provider whose parser takes the last of repeated members
// (Python's json, encoding/json into a map) does: with encoding/json, its
// keys unescaped by encoding/json. It returns either that reading, which
// the gateway's must equal, or the errors the gateway may answer with:
// every rule that some copy of a member breaks, and every member the
// gateway reads that is repeated in its object, at any depth it reads.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/caddy-air/caddy-air/dialect"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/jsonlimit"
)

// oracleMember is one member of a JSON object, as encoding/json reads it.
type oracleMember struct {
	key string
	val json.RawMessage
}

// oracleObject reads the members of the JSON object raw in order, with
// their keys unescaped; false when raw is not an object.
func oracleObject(raw []byte) ([]oracleMember, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var ms []oracleMember
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		ms = append(ms, oracleMember{k.(string), v})
	}
	return ms, true
}

// oracleArray reads the elements of the JSON array raw; false when raw is
// not an array.
func oracleArray(raw []byte) ([]json.RawMessage, bool) {
	var a []json.RawMessage
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &a) != nil {
		return nil, false
	}
	return a, true
}

// oracleLast is the value of the last member key, as the provider reads
// it, or nil.
func oracleLast(ms []oracleMember, key string) json.RawMessage {
	var v json.RawMessage
	for _, m := range ms {
		if m.key == key {
			v = m.val
		}
	}
	return v
}

// oracleReading is what the oracle makes of a body: a reading, or the
// errors the gateway may answer with.
type oracleReading struct {
	in   dialect.Inspected
	errs []*apierror.Error
}

// oracleScan collects the errors of one body.
type oracleScan struct{ errs []*apierror.Error }

func (o *oracleScan) add(e *apierror.Error) {
	if e != nil {
		o.errs = append(o.errs, e)
	}
}

// unique adds a refusal for every key of read repeated in ms, named with
// the prefix path.
func (o *oracleScan) unique(ms []oracleMember, path string, read ...string) {
	for _, k := range read {
		n := 0
		for _, m := range ms {
			if m.key == k {
				n++
			}
		}
		if n > 1 {
			o.add(repeated(path + k))
		}
	}
}

// gj reads a scalar as the gateway's rules take it.
func gj(raw json.RawMessage) gjson.Result {
	if raw == nil {
		return gjson.Result{}
	}
	return gjson.Parse(string(raw))
}

// oracleString unescapes a JSON string with encoding/json; false when raw
// is not a string.
func oracleString(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// oracleValidUTF8 reports whether the JSON string raw is written in valid
// UTF-8: encoding/json would replace invalid bytes.
func oracleValidUTF8(raw json.RawMessage) bool { return utf8.Valid(raw) }

// oracleTextLen is textLen of a raw value.
func oracleTextLen(raw json.RawMessage) int {
	if len(raw) > 0 && raw[0] == '"' {
		return len(raw) - 2
	}
	return oracleRawLen(raw)
}

// oracleRawLen is rawLen of a raw value.
func oracleRawLen(raw json.RawMessage) int {
	if raw == nil || string(raw) == "null" {
		return 0
	}
	return len(raw)
}

// oracleMessages sizes a messages array, and adds the refusals of
// repeated members in any of its messages and blocks.
func (o *oracleScan) oracleMessages(raw json.RawMessage, path string) int {
	msgs, _ := oracleArray(raw)
	n := 0
	for i, m := range msgs {
		n += dialect.MessageOverhead
		ms, ok := oracleObject(m)
		if !ok {
			continue
		}
		p := fmt.Sprintf("%s[%d].", path, i)
		o.unique(ms, p, "content", "tool_calls")
		for _, f := range ms {
			switch f.key {
			case "content":
				n += o.oracleContent(f.val, p+"content")
			case "tool_calls":
				n += oracleRawLen(f.val)
			}
		}
	}
	return n
}

// oracleContent sizes a content value, a string or an array of blocks.
func (o *oracleScan) oracleContent(raw json.RawMessage, path string) int {
	blocks, ok := oracleArray(raw)
	if !ok {
		return oracleTextLen(raw)
	}
	n := 0
	for i, b := range blocks {
		n += o.oracleBlock(b, fmt.Sprintf("%s[%d].", path, i))
	}
	return n
}

// oracleBlock sizes one content block by its (last) type.
func (o *oracleScan) oracleBlock(raw json.RawMessage, path string) int {
	ms, ok := oracleObject(raw)
	if !ok {
		return oracleRawLen(raw)
	}
	o.unique(ms, path, "type", "text", "thinking", "name", "input", "content")
	content := 0
	for _, m := range ms { // every copy is read, for its refusals
		if m.key == "content" {
			content = o.oracleContent(m.val, path+"content")
		}
	}
	typ, _ := oracleString(oracleLast(ms, "type"))
	switch typ {
	case "text", "input_text":
		return oracleTextLen(oracleLast(ms, "text"))
	case "thinking":
		return oracleTextLen(oracleLast(ms, "thinking"))
	case "tool_use":
		return oracleTextLen(oracleLast(ms, "name")) + oracleRawLen(oracleLast(ms, "input"))
	case "tool_result":
		return content
	case "image_url", "image", "input_image", "input_audio", "file", "document", "video_url", "video", "audio":
		return dialect.MediaBlockBytes
	}
	return len(raw)
}

// oracleStart checks what comes before any member: valid JSON within the
// depth limit, an object.
func oracleStart(body []byte, maxDepth int) ([]oracleMember, *apierror.Error) {
	if err := jsonlimit.Check(body, jsonlimit.OrDefault(maxDepth)); err != nil {
		return nil, apierror.InvalidBody(err)
	}
	ms, ok := oracleObject(body)
	if !ok {
		return nil, apierror.InvalidRequest("", "the request body must be a JSON object")
	}
	return ms, nil
}

// oracleModel reads the (last) model.
func oracleModel(ms []oracleMember) (string, *apierror.Error) {
	raw := oracleLast(ms, "model")
	s, ok := oracleString(raw)
	if !ok || s == "" || !oracleValidUTF8(raw) {
		return "", missingOr(raw != nil, "model", "a non-empty string")
	}
	return s, nil
}

// oracleInspect reads a chat (chat true) or Messages body.
func oracleInspect(body []byte, maxDepth int, chat bool) oracleReading {
	ms, e := oracleStart(body, maxDepth)
	if e != nil {
		return oracleReading{errs: []*apierror.Error{e}}
	}
	var o oracleScan
	read := []string{"model", "messages", "tools", "stream", "max_tokens"}
	if chat {
		read = append(read, "stream_options", "stop", "temperature", "top_p", "frequency_penalty", "presence_penalty", "max_completion_tokens")
	} else {
		read = append(read, "system")
	}
	o.unique(ms, "", read...)
	var in dialect.Inspected
	var maxTokens, maxCompl int64
	msgs, system := 0, 0
	for _, m := range ms {
		v := gj(m.val)
		switch k := m.key; {
		case k == "messages":
			msgs = o.oracleMessages(m.val, "messages")
		case k == "stream":
			var e *apierror.Error
			in.Stream, e = boolField("stream", v)
			o.add(e)
		case k == "system" && !chat:
			system = o.oracleContent(m.val, "system")
		case k == "max_tokens" && !chat:
			if v.Type == gjson.Number {
				in.MaxTokens = max(v.Int(), 0)
			}
		case !chat:
		case k == "stream_options":
			so, ok := oracleObject(m.val)
			in.IncludeUsage = false
			if ok {
				o.unique(so, "stream_options.", "include_usage")
				in.IncludeUsage = string(oracleLast(so, "include_usage")) == "true"
			}
		case k == "stop":
			o.add(oracleStop(m.val))
		case k == "temperature", k == "top_p", k == "frequency_penalty", k == "presence_penalty",
			k == "max_tokens", k == "max_completion_tokens":
			o.add(numberMember(k, v, &maxTokens, &maxCompl))
		}
	}
	if len(o.errs) > 0 {
		return oracleReading{errs: o.errs}
	}
	var err *apierror.Error
	if in.Model, err = oracleModel(ms); err != nil {
		return oracleReading{errs: []*apierror.Error{err}}
	}
	messages := oracleLast(ms, "messages")
	if _, ok := oracleArray(messages); !ok {
		return oracleReading{errs: []*apierror.Error{missingOr(messages != nil, "messages", "an array")}}
	}
	if msgs == 0 {
		return oracleReading{errs: []*apierror.Error{apierror.InvalidRequest("messages", "messages must contain at least one message")}}
	}
	if chat {
		in.MaxTokens = maxTokens
		if maxCompl > 0 {
			in.MaxTokens = maxCompl
		}
	}
	in.PromptBytes = system + oracleRawLen(oracleLast(ms, "tools")) + msgs
	return oracleReading{in: in}
}

// oracleInspectResponses reads a Responses create body.
func oracleInspectResponses(body []byte, maxDepth int) oracleReading {
	ms, e := oracleStart(body, maxDepth)
	if e != nil {
		return oracleReading{errs: []*apierror.Error{e}}
	}
	var o oracleScan
	o.unique(ms, "", "model", "stream", "background", "previous_response_id", "input", "instructions",
		"tools", "prompt", "conversation", "max_output_tokens")
	var in dialect.Inspected
	input := 0
	hasPrompt := false
	for _, m := range ms {
		v := gj(m.val)
		var e *apierror.Error
		switch m.key {
		case "stream":
			in.Stream, e = boolField("stream", v)
		case "background":
			in.Background, e = boolField("background", v)
		case "previous_response_id":
			if v.Type != gjson.Null && (v.Type != gjson.String || !oracleValidUTF8(m.val)) {
				e = apierror.InvalidRequest("previous_response_id", "previous_response_id must be a string")
			}
		case "input":
			if _, ok := oracleArray(m.val); ok {
				input = o.oracleMessages(m.val, "input")
			} else {
				input = oracleTextLen(m.val)
			}
		case "prompt", "conversation":
			hasPrompt = hasPrompt || v.Type != gjson.Null
		case "max_output_tokens":
			in.MaxTokens, e = positiveInt(m.key, v)
		}
		o.add(e)
	}
	if len(o.errs) > 0 {
		return oracleReading{errs: o.errs}
	}
	var err *apierror.Error
	if in.Model, err = oracleModel(ms); err != nil {
		return oracleReading{errs: []*apierror.Error{err}}
	}
	in.PreviousResponseID, _ = oracleString(oracleLast(ms, "previous_response_id"))
	hasInput := oracleLast(ms, "input") != nil && string(oracleLast(ms, "input")) != "null"
	if !hasInput && !hasPrompt && in.PreviousResponseID == "" {
		return oracleReading{errs: []*apierror.Error{apierror.InvalidRequest("input", "you must provide an input parameter")}}
	}
	in.PromptBytes = input + oracleTextLen(oracleLast(ms, "instructions")) + oracleRawLen(oracleLast(ms, "tools"))
	return oracleReading{in: in}
}

// oracleInspectPassThrough reads an embeddings or count_tokens body.
func oracleInspectPassThrough(body []byte, maxDepth int, prompt ...string) oracleReading {
	ms, e := oracleStart(body, maxDepth)
	if e != nil {
		return oracleReading{errs: []*apierror.Error{e}}
	}
	var o oracleScan
	o.unique(ms, "", append([]string{"model"}, prompt...)...)
	if len(o.errs) > 0 {
		return oracleReading{errs: o.errs}
	}
	var in dialect.Inspected
	for _, p := range prompt {
		in.PromptBytes += oracleRawLen(oracleLast(ms, p))
	}
	if v := oracleLast(ms, prompt[0]); v == nil || string(v) == "null" {
		return oracleReading{errs: []*apierror.Error{missingOr(false, prompt[0], "")}}
	}
	var err *apierror.Error
	if in.Model, err = oracleModel(ms); err != nil {
		return oracleReading{errs: []*apierror.Error{err}}
	}
	return oracleReading{in: in}
}

// oracleStop accepts null, a string, or an array of at most maxStopWords
// strings.
func oracleStop(raw json.RawMessage) *apierror.Error {
	if raw[0] == 'n' || raw[0] == '"' {
		return nil
	}
	words, ok := oracleArray(raw)
	if !ok {
		return apierror.InvalidRequest("stop", "stop must be a string or an array of strings")
	}
	for _, w := range words {
		if w[0] != '"' {
			return apierror.InvalidRequest("stop", "stop must be a string or an array of strings")
		}
	}
	if len(words) > maxStopWords {
		return apierror.InvalidRequest("stop", fmt.Sprintf("stop accepts at most %d stop words, got %d", maxStopWords, len(words)))
	}
	return nil
}

// upstreamReading is what a last-wins provider reads of a body the
// gateway prepared: the model, and whether a stream asks for usage.
func upstreamReading(body []byte) (model string, includeUsage bool, err error) {
	// Maps, not a struct: encoding/json matches struct fields without
	// regard to case, a provider's parser does not.
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return "", false, err
	}
	if err := json.Unmarshal(top["model"], &model); err != nil {
		return "", false, err
	}
	var so map[string]json.RawMessage
	if json.Unmarshal(top["stream_options"], &so) == nil {
		includeUsage = strings.TrimSpace(string(so["include_usage"])) == "true"
	}
	return model, includeUsage, nil
}
