package reqscan

import "testing"

func TestInspectSpeech(t *testing.T) {
	for i, c := range []struct {
		body   string
		param  string // "" when accepted
		chars  int64
		format string
	}{
		{`{"model":"tts-1","input":"héllo","voice":"alloy"}`, "", 5, "mp3"},
		{`{"model":"tts-1","input":"hi","voice":"alloy","response_format":"wav","speed":1.5}`, "", 2, "wav"},
		{`{"model":"tts-1","input":"hi","response_format":null,"stream_format":"audio"}`, "", 2, "mp3"},
		{`{"model":"tts-1","voice":"alloy"}`, "input", 0, ""},
		{`{"model":"tts-1","input":""}`, "input", 0, ""},
		{`{"model":"tts-1","input":["a"]}`, "input", 0, ""},
		{`{"input":"a"}`, "model", 0, ""},
		{`{"model":"tts-1","input":"a","response_format":3}`, "response_format", 0, ""},
		{`{"model":"tts-1","input":"a","stream_format":"sse"}`, "stream_format", 0, ""},
		// A repeated member the gateway reads is refused.
		{`{"model":"tts-1","input":"a","input":"bbbbbbbbbbbb"}`, "input", 0, ""},
		{`{"model":"tts-1","model":"tts-hd","input":"a"}`, "model", 0, ""},
		{`{"model":"tts-1","input":"a","response_format":"wav","response_format":"mp3"}`, "response_format", 0, ""},
	} {
		in, e := InspectSpeech([]byte(c.body), 0)
		switch {
		case c.param == "" && e != nil:
			t.Errorf("Test %d: %s refused: %s", i, c.body, e.Message)
		case c.param != "" && (e == nil || e.Param == nil || *e.Param != c.param):
			t.Errorf("Test %d: %s: error %+v, want one on %s", i, c.body, e, c.param)
		case c.param == "" && (in.Characters != c.chars || in.Format != c.format || in.Model != "tts-1"):
			t.Errorf("Test %d: %s: %+v", i, c.body, in)
		}
	}
}

func TestInspectRerank(t *testing.T) {
	for i, c := range []struct {
		body  string
		param string
		docs  int64
	}{
		{`{"model":"r","query":"q","documents":["a","bb",{"text":"ccc"}],"top_n":2}`, "", 3},
		{`{"model":"r","query":"q","documents":"a"}`, "documents", 0},
		{`{"model":"r","query":"q","documents":[]}`, "documents", 0},
		{`{"model":"r","query":"q"}`, "documents", 0},
		{`{"model":"r","query":"","documents":["a"]}`, "query", 0},
		{`{"model":"r","documents":["a"]}`, "query", 0},
		{`{"query":"q","documents":["a"]}`, "model", 0},
		{`{"model":"r","query":"q","query":"p","documents":["a"]}`, "query", 0},
	} {
		in, e := InspectRerank([]byte(c.body), 0)
		switch {
		case c.param == "" && e != nil:
			t.Errorf("Test %d: %s refused: %s", i, c.body, e.Message)
		case c.param != "" && (e == nil || e.Param == nil || *e.Param != c.param):
			t.Errorf("Test %d: %s: error %+v, want one on %s", i, c.body, e, c.param)
		case c.param == "" && (in.Documents != c.docs || in.PromptBytes == 0):
			t.Errorf("Test %d: %s: %+v", i, c.body, in)
		}
	}
}
