package tasks

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/providers"
)

func TestValidation(t *testing.T) {
	e := newEnv(t, providers.ProtocolOpenAI,
		&providers.Route{Pattern: "img", Kind: providers.KindImage, Sizes: []string{"1024x1024", "512x512"}},
		&providers.Route{Pattern: "vid", Kind: providers.KindVideo},
		&providers.Route{Pattern: "gpt-4o", Kind: providers.KindChat},
		&providers.Route{Pattern: "claude-x", Kind: providers.KindMessages},
	)
	e.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 500, `{}`) })
	s := e.service(nil)
	for i, c := range []struct {
		body       string
		wantStatus int
		wantParam  string
		wantInMsg  string
	}{
		{`not json`, 400, "", "JSON object"},
		{`[1,2]`, 400, "", "JSON object"},
		{``, 400, "", "JSON object"},
		{`{"prompt":"x"}`, 400, "model", "model"},
		{`{"model":7,"prompt":"x"}`, 400, "model", "model"},
		{`{"model":"nope","prompt":"x"}`, 404, "model", "does not exist"},
		{`{"model":"gpt-4o","prompt":"x"}`, 400, "model", "/v1/chat/completions"},
		{`{"model":"claude-x","prompt":"x"}`, 400, "model", "/v1/messages"},
		{`{"model":"img"}`, 400, "prompt", "prompt"},
		{`{"model":"img","prompt":""}`, 400, "prompt", "prompt"},
		{`{"model":"img","prompt":"   "}`, 400, "prompt", "prompt"},
		{`{"model":"img","prompt":["x"]}`, 400, "prompt", "prompt"},
		{`{"model":"img","prompt":"x","negative_prompt":3}`, 400, "negative_prompt", "string"},
		{`{"model":"img","prompt":"x","size":"1024"}`, 400, "size", "<width>x<height>"},
		{`{"model":"img","prompt":"x","size":"0x512"}`, 400, "size", "<width>x<height>"},
		{`{"model":"img","prompt":"x","size":"-5x512"}`, 400, "size", "<width>x<height>"},
		{`{"model":"img","prompt":"x","size":"1024*1024"}`, 400, "size", "<width>x<height>"},
		{`{"model":"img","prompt":"x","size":1024}`, 400, "size", "<width>x<height>"},
		{`{"model":"img","prompt":"x","size":"2048x2048"}`, 400, "size", "512x512"},
		{`{"model":"img","prompt":"x","n":0}`, 400, "n", "1 to 4"},
		{`{"model":"img","prompt":"x","n":5}`, 400, "n", "1 to 4"},
		{`{"model":"img","prompt":"x","n":1.5}`, 400, "n", "1 to 4"},
		{`{"model":"img","prompt":"x","n":"2"}`, 400, "n", "1 to 4"},
		{`{"model":"img","prompt":"x","seed":1.5}`, 400, "seed", "integer"},
		{`{"model":"img","prompt":"x","seed":"42"}`, 400, "seed", "integer"},
		{`{"model":"vid","prompt":"x","n":2}`, 400, "n", "one video"},
		{`{"model":"vid","prompt":"x","seconds":"abc"}`, 400, "seconds", "seconds"},
		{`{"model":"vid","prompt":"x","duration":-3}`, 400, "duration", "seconds"},
		{`{"model":"vid","prompt":"x","seconds":3601}`, 400, "seconds", "from 1 to 3600"},
		{`{"model":"vid","prompt":"x","seconds":"1000000000000"}`, 400, "seconds", "from 1 to 3600"},
		{`{"model":"vid","prompt":"x","duration":9223372036854775807}`, 400, "duration", "from 1 to 3600"},
		// A repeated member the gateway reads: the provider would take the
		// last one, past the checks made on the first.
		{`{"model":"img","prompt":"x","n":1,"n":5}`, 400, "n", `"n" appears more than once`},
		{`{"model":"img","prompt":"x","size":"512x512","size":"1792x1024"}`, 400, "size", "more than once"},
		{`{"model":"img","model":"nope","prompt":"x"}`, 400, "model", "more than once"},
		{`{"model":"img","prompt":"x","prompt":"y"}`, 400, "prompt", "more than once"},
		{`{"model":"img","prompt":"x","seed":1,"seed":2}`, 400, "seed", "more than once"},
		{`{"model":"img","prompt":"x","negative_prompt":"a","negative_prompt":"b"}`, 400, "negative_prompt", "more than once"},
		{`{"model":"vid","prompt":"x","seconds":4,"seconds":12}`, 400, "seconds", "more than once"},
		{`{"model":"vid","prompt":"x","duration":4,"duration":12}`, 400, "duration", "more than once"},
		// Both duration fields: the provider reads one, the gateway must
		// bill that one.
		{`{"model":"vid","prompt":"w","seconds":60,"duration":1}`, 400, "duration", "give it once"},
		{`{"model":"vid","prompt":"w","seconds":"8","duration":4}`, 400, "duration", "give it once"},
		{`{"model":"img","prompt":"x","n":1,"\u006e":5}`, 400, "n", "more than once"},
	} {
		tk, aerr := s.Create(context.Background(), alice, []byte(c.body), testMediaBase)
		if aerr == nil {
			t.Errorf("Test %d: %s accepted (task %+v)", i, c.body, tk)
			continue
		}
		param := ""
		if aerr.Param != nil {
			param = *aerr.Param
		}
		if aerr.Status != c.wantStatus || param != c.wantParam || !strings.Contains(aerr.Message, c.wantInMsg) {
			t.Errorf("Test %d: %s: got %d param %q %q, want %d param %q containing %q", i, c.body, aerr.Status, param, aerr.Message, c.wantStatus, c.wantParam, c.wantInMsg)
		}
	}
	if n := e.count("POST", "/"); n != 0 {
		t.Errorf("invalid requests reached the upstream %d times", n)
	}
	if n := runningCount(t, e); n != 0 {
		t.Errorf("invalid requests created %d tasks", n)
	}
}

func TestValidationAccepts(t *testing.T) {
	p := &providers.Provider{Name: "p", Protocol: "openai", BaseURLs: []string{"http://x"}}
	table, err := providers.NewTable([]*providers.Provider{p}, []*providers.Route{{Pattern: "img", Kind: providers.KindImage, Provider: p}})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		body     string
		wantSize string
		wantN    int
		wantSeed string
	}{
		{`{"model":"img","prompt":"x"}`, "1024x1024", 0, ""},
		{`{"model":"img","prompt":"x","size":"1792x1024","n":4,"seed":-7}`, "1792x1024", 4, "-7"},
		{`{"model":"img","prompt":"x","n":2.0,"seed":1e3,"size":null}`, "1024x1024", 2, "1000"},
		// Members the gateway does not read may repeat, as may nested ones.
		{`{"model":"img","prompt":"x","user":"a","user":"b","extra":{"n":1,"n":2},"n":3}`, "1024x1024", 3, ""},
	} {
		r, aerr := parseRequest([]byte(c.body), table, 0)
		if aerr != nil {
			t.Errorf("Test %d: %v", i, aerr)
			continue
		}
		if r.size != c.wantSize || r.n != c.wantN || r.seed != c.wantSeed {
			t.Errorf("Test %d: size %q n %d seed %q", i, r.size, r.n, r.seed)
		}
	}
}

func TestParseLimit(t *testing.T) {
	for i, c := range []struct {
		in   string
		want int
		bad  bool
	}{
		{"", 20, false},
		{"1", 1, false},
		{"100", 100, false},
		{"0", 0, true},
		{"101", 0, true},
		{"-1", 0, true},
		{"ten", 0, true},
		{"2.5", 0, true},
	} {
		got, aerr := ParseLimit(c.in)
		if (aerr != nil) != c.bad || got != c.want {
			t.Errorf("Test %d: ParseLimit(%q) = %d, %v", i, c.in, got, aerr)
		}
		if aerr != nil && (aerr.Status != 400 || aerr.Param == nil || *aerr.Param != "limit") {
			t.Errorf("Test %d: error %+v, want a 400 about limit", i, aerr)
		}
	}
}
