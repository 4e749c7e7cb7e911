package chatproxy

import (
	"encoding/json"
	"testing"

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

// compareInspect checks that the one-pass inspection of body decides as
// the oracle does, with the same result or the same error.
func compareInspect(t *testing.T, body []byte, limit int) {
	t.Helper()
	for _, p := range []struct {
		name        string
		got, oracle func([]byte, int) (Inspected, *apierror.Error)
	}{
		{"chat", InspectChat, oracleInspectChat},
		{"messages", InspectMessages, oracleInspectMessages},
	} {
		got, ge := p.got(body, limit)
		want, we := p.oracle(body, limit)
		switch {
		case (ge == nil) != (we == nil):
			t.Errorf("%s %.200q: error %v, oracle %v", p.name, body, ge, we)
		case ge != nil && (ge.Message != we.Message || paramOf(ge) != paramOf(we) || ge.Status != we.Status):
			t.Errorf("%s %.200q: error %q (%s), oracle %q (%s)", p.name, body, ge.Message, paramOf(ge), we.Message, paramOf(we))
		case got != want:
			t.Errorf("%s %.200q:\n got %+v\nwant %+v", p.name, body, got, want)
		}
	}
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
// aside), and otherwise decides as the gjson-based oracle.
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
