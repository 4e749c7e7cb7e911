package mockprovider

import (
	"testing"

	"github.com/tidwall/gjson"
)

func TestModerations(t *testing.T) {
	base := newServer(t, Config{})
	for i, tc := range []struct {
		body    string
		status  int
		flagged []bool
		model   string
	}{
		{`{"model":"omni-moderation-latest","input":"I will kill it"}`, 200, []bool{true}, "omni-moderation-latest"},
		{`{"input":["hello","gore everywhere"]}`, 200, []bool{false, true}, "omni-moderation-latest"},
		{`{"model":"m","input":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}`, 200, []bool{false}, "m"},
		{`{"model":"m","input":[]}`, 400, nil, ""},
		{`{"model":"m","input":["a",{"type":"text","text":"b"}]}`, 400, nil, ""},
		{`{"model":"m"}`, 400, nil, ""},
	} {
		status, _, body := post(t, base+"/moderations", tc.body)
		if status != tc.status {
			t.Fatalf("Test %d: status %d, body %s", i, status, body)
		}
		r := gjson.Parse(body)
		if status != 200 {
			if r.Get("error.param").Str != "input" {
				t.Errorf("Test %d: error %s", i, body)
			}
			continue
		}
		res := r.Get("results").Array()
		if len(res) != len(tc.flagged) || r.Get("model").Str != tc.model || r.Get("id").Str == "" {
			t.Fatalf("Test %d: %s", i, body)
		}
		for j, f := range tc.flagged {
			if res[j].Get("flagged").Bool() != f || len(res[j].Get("category_scores").Map()) != len(moderationCategories) {
				t.Errorf("Test %d: result %d: %s", i, j, res[j].Raw)
			}
		}
	}
}
