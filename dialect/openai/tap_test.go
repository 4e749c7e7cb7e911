package openai

import (
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/internal/tapcore"
	"github.com/tidwall/gjson"
	"testing"
)

func TestDeleteMember(t *testing.T) {
	for i, tc := range []struct{ in, want string }{
		{`data: {"id":"1","usage":null}` + "\n\n", `data: {"id":"1"}` + "\n\n"},
		{`data: {"usage":null,"id":"1"}` + "\n\n", `data: {"id":"1"}` + "\n\n"},
		{`data: {"id":"1" , "usage" : null }` + "\n\n", `data: {"id":"1"  }` + "\n\n"},
		{`data: { "usage":null , "id":"1"}` + "\n\n", `data: {  "id":"1"}` + "\n\n"},
		{`data: {"usage":null}` + "\n\n", `data: {}` + "\n\n"},
		{`data: {"id":"1","usage":{"prompt_tokens":1},"x":[]}` + "\n\n", `data: {"id":"1","x":[]}` + "\n\n"},
	} {
		ev := []byte(tc.in)
		a, b, _ := tapcore.DataField(ev)
		u := gjson.Get(tapcore.Str(ev[a:b]), "usage")
		if got := string(deleteMember(ev, a, a+u.Index, a+u.Index+len(u.Raw))); got != tc.want {
			t.Errorf("Test %d: got %q, want %q", i, got, tc.want)
		}
	}
}

func TestTapChunkPrefix(t *testing.T) {
	tp := Wire.NewTap(dialect.TapConfig{Strip: true}).(*chatTap)
	for i, tc := range []struct {
		payload, want string
		prefix        string // the prefix the tap keeps afterwards
		out           int64  // output bytes counted so far
	}{
		{`{"id":"a","choices":[{"delta":{"content":"12"}}],"usage":null}`, `{"id":"a","choices":[{"delta":{"content":"12"}}]}`, `{"id":"a","choices":`, 2},
		{`{"id":"a","choices":[{"delta":{"content":"345"}}],"usage":null}`, `{"id":"a","choices":[{"delta":{"content":"345"}}]}`, `{"id":"a","choices":`, 5},
		{`{"id":"b","choices":[{"delta":{"content":"6"}}]}`, `{"id":"b","choices":[{"delta":{"content":"6"}}]}`, `{"id":"b","choices":`, 6},
		{`{"usage":null,"choices":[{"delta":{"content":"7"}}]}`, `{"choices":[{"delta":{"content":"7"}}]}`, `{"id":"b","choices":`, 7},
		{`{"id":"b","choices":[{"delta":{"content":"8"}}],"error":{"message":"x"}}`, `{"id":"b","choices":[{"delta":{"content":"8"}}],"error":{"message":"x"}}`, `{"id":"b","choices":`, 8},
		{`{"id":"b","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":6}}`, ``, `{"id":"b","choices":`, 8},
		{`{"id":"b","choices":[{"delta":`, `{"id":"b","choices":[{"delta":`, `{"id":"b","choices":`, 8 + 30},
	} {
		ev := "data: " + tc.payload + "\n\n"
		want := ""
		if tc.want != "" {
			want = "data: " + tc.want + "\n\n"
		}
		if got := string(tp.Event([]byte(ev))); got != want {
			t.Errorf("event %d: forwarded %q, want %q", i, got, want)
		}
		if string(tp.prefix) != tc.prefix || tp.OutBytes != tc.out {
			t.Errorf("event %d: prefix %q, %d output bytes; want %q, %d", i, tp.prefix, tp.OutBytes, tc.prefix, tc.out)
		}
	}
	r := tp.Result(0, false, false)
	u, src := r.Usage, r.Source
	if want := (billing.Usage{Input: 5, Output: 6}); u != want || src != billing.SourceReported || !tp.UpstreamErr {
		t.Errorf("usage %+v %s, error %v; want %+v reported, error", u, src, tp.UpstreamErr, want)
	}
}
