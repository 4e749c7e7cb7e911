package tasks

import (
	"context"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/providers"
)

func TestReportedSeconds(t *testing.T) {
	for _, c := range []struct {
		json   string
		want   int64
		wantOK bool
	}{
		{`null`, 0, true},
		{`8`, 8, true},
		{`"8"`, 8, true},
		{`" 12 "`, 12, true},
		{`4.2`, 5, true},
		{`3600`, 3600, true},
		{`0.001`, 1, true},
		{`3600.5`, 0, false},
		{`1e12`, 0, false},
		{`1e30`, 0, false},
		{`1e400`, 0, false},
		{`"1e12"`, 0, false},
		{`-5`, 0, false},
		{`0`, 0, false},
		{`"NaN"`, 0, false},
		{`"Inf"`, 0, false},
		{`"-Inf"`, 0, false},
		{`"abc"`, 0, false},
		{`""`, 0, false},
		{`true`, 0, false},
		{`{"s":8}`, 0, false},
		{`[8]`, 0, false},
	} {
		got, ok := reportedSeconds(gjson.Parse(c.json))
		if got != c.want || ok != c.wantOK {
			t.Errorf("reportedSeconds(%s) = %d, %v; want %d, %v", c.json, got, ok, c.want, c.wantOK)
		}
	}
}

// TestVideoSecondsBound checks that a hostile or broken provider cannot
// make the gateway bill an absurd duration: an implausible report is
// replaced by the requested duration, else the default.
func TestVideoSecondsBound(t *testing.T) {
	for _, c := range []struct {
		name     string
		create   string // the create body
		reported string // the "seconds" member of the completed video, raw
		want     int64
	}{
		{"plausible", `{"model":"sora-2","prompt":"x","seconds":8}`, `"8"`, 8},
		{"rounded up", `{"model":"sora-2","prompt":"x","seconds":4}`, `7.5`, 8},
		{"none reported", `{"model":"sora-2","prompt":"x","seconds":12}`, `null`, 12},
		{"none asked", `{"model":"sora-2","prompt":"x"}`, `20`, 20},
		{"huge, none asked", `{"model":"sora-2","prompt":"x"}`, `1e12`, defaultOpenAISeconds},
		{"overflowing, none asked", `{"model":"sora-2","prompt":"x"}`, `1e30`, defaultOpenAISeconds},
		{"huge, asked", `{"model":"sora-2","prompt":"x","seconds":8}`, `1e12`, 8},
		{"huge string", `{"model":"sora-2","prompt":"x","seconds":8}`, `"1e12"`, 8},
		{"max int", `{"model":"sora-2","prompt":"x","seconds":8}`, `9223372036854775807`, 8},
		{"over an hour", `{"model":"sora-2","prompt":"x"}`, `3601`, defaultOpenAISeconds},
		{"far over the request", `{"model":"sora-2","prompt":"x","seconds":4}`, `3600`, 4},
		{"twice the request", `{"model":"sora-2","prompt":"x","seconds":4}`, `8`, 8},
		{"negative", `{"model":"sora-2","prompt":"x","seconds":8}`, `-8`, 8},
		{"zero", `{"model":"sora-2","prompt":"x"}`, `0`, defaultOpenAISeconds},
		{"NaN", `{"model":"sora-2","prompt":"x","seconds":4}`, `"NaN"`, 4},
		{"Inf", `{"model":"sora-2","prompt":"x","seconds":4}`, `"+Inf"`, 4},
		{"not a number", `{"model":"sora-2","prompt":"x","seconds":4}`, `{"value":4000}`, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "sora-2", Kind: providers.KindVideo})
			f := &fakeOpenAIVideo{}
			f.install(e)
			f.set(`{"id":"video_123","object":"video","status":"completed","progress":100,"seconds":` + c.reported + `}`)
			s := e.service(nil)
			e.run(s)
			tk, aerr := s.Create(context.Background(), alice, []byte(c.create), testMediaBase)
			if aerr != nil {
				t.Fatal(aerr)
			}
			done := waitBilled(t, s, tk.ID)
			if done.VideoSeconds != c.want {
				t.Errorf("task video_seconds %d, want %d", done.VideoSeconds, c.want)
			}
			if ch := e.biller.charges(); len(ch) != 1 || ch[0].VideoSeconds != c.want {
				t.Errorf("charges %+v, want one of %d s", ch, c.want)
			}
		})
	}
}

func TestDashScopeVideoSecondsBound(t *testing.T) {
	for _, c := range []struct {
		usage string
		want  int64
	}{
		{`{"video_duration":5}`, 5},
		{`{"duration":10}`, 10},
		{`{"video_duration":1e12}`, 8},
		{`{"video_duration":"Infinity","duration":5}`, 8},
		{`{"duration":-1}`, 8},
	} {
		e := newEnv(t, providers.ProtocolDashScope, &providers.Route{Pattern: "wan2.2-t2v-plus", Kind: providers.KindVideo})
		f := &fakeDashScope{}
		f.install(e)
		f.setScript(`{"request_id":"r","output":{"task_id":"ds-task-1","task_status":"SUCCEEDED","video_url":"https://dashscope-result.oss.example/v.mp4"},"usage":` + c.usage + `}`)
		s := e.service(nil)
		e.run(s)
		tk, aerr := s.Create(context.Background(), alice, []byte(`{"model":"wan2.2-t2v-plus","prompt":"a wave","duration":8}`), testMediaBase)
		if aerr != nil {
			t.Fatalf("usage %s: %v", c.usage, aerr)
		}
		if done := waitBilled(t, s, tk.ID); done.VideoSeconds != c.want {
			t.Errorf("usage %s: billed %d s, want %d", c.usage, done.VideoSeconds, c.want)
		}
	}
}
