package reqlog

import (
	"bufio"
	"bytes"
	"encoding/json"

	"github.com/tidwall/gjson"
)

// Reassemble turns a server-sent event stream of OpenAI chat completion
// chunks or Anthropic message events into the final JSON a non-streamed
// answer would carry: {"stream":true,"content":"<text>","finish_reason":...,"usage":{...}}.
// A body that is not such a stream comes back unchanged.
func Reassemble(body []byte) []byte {
	if !bytes.HasPrefix(bytes.TrimSpace(body), []byte("data:")) && !bytes.HasPrefix(bytes.TrimSpace(body), []byte("event:")) {
		return body
	}
	var text bytes.Buffer
	out := map[string]any{"stream": true}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), len(body)+1)
	for sc.Scan() {
		line, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:"))
		if !ok {
			continue
		}
		line = bytes.TrimSpace(line)
		if !gjson.ValidBytes(line) {
			continue
		}
		ev := gjson.ParseBytes(line)
		if m := ev.Get("model"); m.Exists() {
			out["model"] = m.String()
		}
		for _, c := range ev.Get("choices").Array() { // OpenAI
			text.WriteString(c.Get("delta.content").String())
			if fr := c.Get("finish_reason"); fr.Type == gjson.String {
				out["finish_reason"] = fr.String()
			}
		}
		if d := ev.Get("delta"); ev.Get("type").String() == "content_block_delta" { // Anthropic
			text.WriteString(d.Get("text").String())
		}
		if sr := ev.Get("delta.stop_reason"); sr.Type == gjson.String {
			out["finish_reason"] = sr.String()
		}
		if u := ev.Get("usage"); u.IsObject() {
			out["usage"] = json.RawMessage(u.Raw)
		}
	}
	out["content"] = text.String()
	b, err := json.Marshal(out)
	if err != nil {
		return body
	}
	return b
}
