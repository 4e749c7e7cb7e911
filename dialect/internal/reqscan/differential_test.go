package reqscan

import (
	"encoding/json"
	"fmt"
	"github.com/caddy-air/caddy-air/dialect"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/internal/longchat"
)

// differentialCorpus holds bodies of both protocols with the shapes the
// prompt estimate distinguishes: blocks of every type, members in any
// order and repeated, escaped keys, values of unexpected types.
var differentialCorpus = []string{
	`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","messages":[{"role":"user","content":[{"text":"abc","type":"text"},{"type":"text","text":"x","text":"yy"}]}]}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"input_text","text":null},{"type":"text","text":{"a":1}},{"type":"text"}]}]}`,
	`{"model":"m","messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"hmm \"quoted\"","signature":"abc"},{"type":"tool_use","id":"t1","name":"run","input":{"cmd":"ls -l"}}]}]}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"out"},{"type":"image","source":{"data":"AAAA"}}]}]}]}`,
	`{"model":"m","messages":[{"role":"user","content":[{"content":[{"type":"tool_result","content":"deep"}],"type":"tool_result"}]}]}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}},{"type":"input_audio"},{"type":"file"},{"type":"document"},{"type":"video_url"},{"type":"video"},{"type":"audio"},{"type":"input_image"}]}]}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"unknown","x":[1,2,3]},{"type":7},{"typ\u0065":"text","t\u0065xt":"abc"},["a"],12,null,true]}]}`,
	`{"model":"m","messages":[{"role":"user","content":"a","content":"bb","tool_calls":null},"str",[1],null,{"tool_calls":[{"id":"1","function":{"name":"f","arguments":"{}"}}],"tool_calls":[]}]}`,
	`{"model":"m","messages":[],"messages":[{"content":"last wins"}],"tools":[{"a":1}],"tools":null}`,
	`{"model":"m","messages":[{"content":"first"}],"messages":"not an array"}`,
	`{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"stream":true,"stream_options":{"include_usage":false,"include_usage":true}}`,
	`{"model":"m","messages":[{"content":"x"}],"stream":true,"stream_options":{"include_usage":true,"include_usage":false}}`,
	`{"model":"m","messages":[{"content":"x"}],"stream":true,"stream_options":{"include_usage":true,"include\u005fusage":false}}`,
	`{"model":"m","messages":[{"content":"x"}],"stream":true,"stream_options":{"include\u005Fusage":false}}`,
	`{"model":"m","messages":[{"content":"x"}],"stream":true,"stream_options":{"include_usage":true},"stream\u005foptions":{}}`,
	`{"model":"m","messages":[{"content":"x"}],"max_tokens":10,"max_tokens":100000}`,
	`{"model":"m","messages":[{"content":"x"}],"messages":[{"content":"y"}]}`,
	`{"model":"m","messages":[{"content":[{"type":"text","text":"a","t\u0065xt":"bbbbbbbb"}]}]}`,
	`{"model":"m","messages":[],"stream":true,"stream_options":null}`,
	`{"model":"m","messages":[],"stream":true,"stream_options":[1]}`,
	`{"model":"m","messages":[],"stream":true,"stream_options":{"x":{"include_usage":true}}}`,
	`{"model":"m","messages":[],"max_tokens":10,"max_tokens":20,"max_completion_tokens":null}`,
	`{"model":"m","messages":[],"max_tokens":1e400}`,
	`{"model":"m","messages":[],"max_tokens":9007199254740993}`,
	`{"model":"m","messages":[],"max_tokens":2.0,"temperature":1.9999,"top_p":1e-300}`,
	`{"model":"m","messages":[],"temperature":1e400}`,
	`{"model":"m","messages":[],"stop":["a",1,"b","c","d","e"]}`,
	`{"model":"m","messages":[],"stop":{"a":1}}`,
	`{"model":"m\u00e9\"x","messages":[]}`,
	`{"model":"gpt\ud800\u0041","messages":[{"content":"x"}]}`,
	"{\"model\":\"\x87\",\"messages\":[{\"content\":\"x\"}]}",
	`{"model":null,"messages":[]}`,
	`{"model":"m","messages":null}`,
	`{"model":"m","stream":"yes","model":"n","messages":[]}`,
	`{"model":"m","temperature":5,"messages":[],"x":[}`,
	` {"model":"m","messages":[]} `,
	`{"model":"m","messages":[]} {}`,
	`"a string"`, `[]`, `null`, `{}`, ``,
	`{"model":"claude","system":"be brief","messages":[{"role":"user","content":[{"type":"tool_result","content":"12345678"}]}],"max_tokens":1024}`,
	`{"model":"claude","system":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}},{"type":"image"}],"system":"last","messages":[],"max_tokens":-5}`,
	`{"model":"claude","messages":[],"max_tokens":1.5e2,"max_tokens":"x","stream":null,"tools":[{"name":"t","input_schema":{}}]}`,
	`{"model":"claude","messages":[],"max_tokens":1e30}`,
}

// inspectors are the request inspections and their oracles.
var inspectors = []struct {
	name   string
	proto  dialect.Wire
	got    func([]byte, int) (dialect.Inspected, *apierror.Error)
	oracle func([]byte, int) oracleReading
}{
	{"chat", streamUsageWire{usage: true}, InspectChat, func(b []byte, d int) oracleReading { return oracleInspect(b, d, true) }},
	{"messages", streamUsageWire{}, InspectMessages, func(b []byte, d int) oracleReading { return oracleInspect(b, d, false) }},
	{"responses", streamUsageWire{}, InspectResponses, oracleInspectResponses},
	{"embeddings", streamUsageWire{}, InspectEmbeddings, func(b []byte, d int) oracleReading { return oracleInspectPassThrough(b, d, "input") }},
	{"count_tokens", streamUsageWire{}, InspectCountTokens, func(b []byte, d int) oracleReading {
		return oracleInspectPassThrough(b, d, "messages", "system", "tools")
	}},
}

// compareInspect checks that each inspection of body reads it as a
// last-wins parser (encoding/json) does, or refuses it with one of the
// errors the oracle allows; and that what the gateway sends after its
// edits is read upstream as the gateway assumes.
func compareInspect(t *testing.T, body []byte, limit int) {
	t.Helper()
	for _, p := range inspectors {
		got, ge := p.got(body, limit)
		want := p.oracle(body, limit)
		switch {
		case ge != nil && want.errs == nil:
			t.Errorf("%s %.200q: refused (%s: %s), the oracle reads %+v", p.name, body, paramOf(ge), ge.Message, want.in)
		case ge != nil:
			if !slices.ContainsFunc(want.errs, func(w *apierror.Error) bool {
				return w.Message == ge.Message && paramOf(w) == paramOf(ge) && w.Status == ge.Status
			}) {
				t.Errorf("%s %.200q: refused (%s: %s), the oracle allows %s", p.name, body, paramOf(ge), ge.Message, errList(want.errs))
			}
		case want.errs != nil:
			t.Errorf("%s %.200q: accepted as %+v, the oracle refuses it: %s", p.name, body, got, errList(want.errs))
		default:
			located := got
			got.Located = dialect.Located{}
			if got != want.in {
				t.Errorf("%s %.200q:\n got %+v\nwant %+v", p.name, body, got, want.in)
			}
			checkUpstreamReading(t, p.name, p.proto, body, located)
		}
	}
}

// checkUpstreamReading prepares body as the gateway sends it, with a model
// alias, and checks that a last-wins parser reads the alias, and usage
// asked for on an OpenAI stream whose stream_options the gateway can edit.
func checkUpstreamReading(t *testing.T, name string, p dialect.Wire, body []byte, in dialect.Inspected) {
	t.Helper()
	const alias = "upstream-\"alias\""
	out, injected, err := dialect.PrepareBody(p, body, in, alias)
	if err != nil {
		t.Errorf("%s %.200q: PrepareBody: %v", name, body, err)
		return
	}
	model, usage, err := upstreamReading(out)
	if err != nil {
		t.Errorf("%s %.200q: the upstream cannot read %.200q: %v", name, body, out, err)
		return
	}
	if model != alias {
		t.Errorf("%s %.200q: the upstream reads model %q in %.200q", name, body, model, out)
	}
	so := gjson.GetBytes(body, "stream_options")
	editable := !so.Exists() || so.Type == gjson.Null || so.IsObject()
	if p.StreamUsage() && name == "chat" && in.Stream && editable {
		if !usage {
			t.Errorf("%s %.200q: the gateway counts on usage, the upstream reads no include_usage true in %.200q", name, body, out)
		}
		if injected == in.IncludeUsage {
			t.Errorf("%s %.200q: injected %v although the client asked for usage: %v", name, body, injected, in.IncludeUsage)
		}
	}
}

// errList lists errors for a message.
func errList(es []*apierror.Error) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "[%s: %s] ", paramOf(e), e.Message)
	}
	return b.String()
}

func paramOf(e *apierror.Error) string {
	if e.Param == nil {
		return ""
	}
	return *e.Param
}

func TestInspectDifferential(t *testing.T) {
	for _, body := range differentialCorpus {
		compareInspect(t, []byte(body), 0)
		compareInspect(t, []byte(body), 2)
	}
	for _, size := range []int{1 << 10, 64 << 10, 200 << 10} {
		compareInspect(t, longchat.Body("m", size, `"stream":true`), 0)
	}
}

// FuzzInspect checks, on any input, that the one-pass inspection refuses
// as invalid exactly what encoding/json's Valid refuses (the depth limit
// aside), and otherwise reads as encoding/json does or refuses as the
// oracle allows.
func FuzzInspect(f *testing.F) {
	for _, body := range differentialCorpus {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		const limit = 10000 // encoding/json's own cap
		_, e := InspectChat(body, limit)
		invalid := e != nil && e.Message == "the request body is not valid JSON"
		if invalid == json.Valid(body) {
			t.Fatalf("%q: json.Valid %v, inspection says %v", body, json.Valid(body), e)
		}
		compareInspect(t, body, 3)
	})
}

// streamUsageWire stands for a wire in PrepareBody, which asks it only
// whether a stream's usage must be asked for: chat completions' (usage)
// or another's.
type streamUsageWire struct {
	dialect.Wire
	usage bool
}

func (w streamUsageWire) StreamUsage() bool { return w.usage }
