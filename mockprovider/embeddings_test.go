package mockprovider

import (
	"encoding/base64"
	"math"
	"net/http"
	"testing"

	"github.com/tidwall/gjson"
)

func TestEmbeddings(t *testing.T) {
	base := newServer(t, Config{})
	for i, tc := range []struct {
		body         string
		status       int
		n, dims      int
		promptTokens int64
		base64       bool
	}{
		{`{"model":"mock-embed","input":"0123456789abcdef"}`, 200, 1, 8, 4, false},
		{`{"model":"mock-embed","input":["0123456789abcdef","01234567"],"dimensions":3}`, 200, 2, 3, 6, false},
		{`{"model":"mock-embed","input":[1,2,3,4,5]}`, 200, 1, 8, 5, false},
		{`{"model":"mock-embed","input":[[1,2],[3]],"encoding_format":"base64","dimensions":4}`, 200, 2, 4, 3, true},
		{`{"model":"mock-embed","input":""}`, 400, 0, 0, 0, false},
		{`{"model":"mock-embed","input":"x","encoding_format":"hex"}`, 400, 0, 0, 0, false},
		{`{"input":"x"}`, 400, 0, 0, 0, false},
	} {
		status, _, body := post(t, base+"/embeddings", tc.body)
		if status != tc.status {
			t.Fatalf("Test %d: status %d, body %s", i, status, body)
		}
		if status != http.StatusOK {
			if gjson.Get(body, "error.message").Str == "" {
				t.Errorf("Test %d: error not in OpenAI's shape: %s", i, body)
			}
			continue
		}
		r := gjson.Parse(body)
		if r.Get("object").Str != "list" || int(r.Get("data.#").Int()) != tc.n || r.Get("usage.prompt_tokens").Int() != tc.promptTokens ||
			r.Get("usage.total_tokens").Int() != tc.promptTokens {
			t.Errorf("Test %d: got %s", i, body)
			continue
		}
		for _, d := range r.Get("data").Array() {
			var norm float64
			if tc.base64 {
				raw, err := base64.StdEncoding.DecodeString(d.Get("embedding").Str)
				if err != nil || len(raw) != 4*tc.dims {
					t.Fatalf("Test %d: base64 embedding %q: %v", i, d.Get("embedding").Str, err)
				}
				for j := 0; j < len(raw); j += 4 {
					f := float64(math.Float32frombits(uint32(raw[j]) | uint32(raw[j+1])<<8 | uint32(raw[j+2])<<16 | uint32(raw[j+3])<<24))
					norm += f * f
				}
			} else {
				vec := d.Get("embedding").Array()
				if len(vec) != tc.dims {
					t.Fatalf("Test %d: %d dimensions, want %d", i, len(vec), tc.dims)
				}
				for _, f := range vec {
					norm += f.Float() * f.Float()
				}
			}
			if math.Abs(norm-1) > 1e-4 {
				t.Errorf("Test %d: not a unit vector (norm² %v)", i, norm)
			}
		}
	}
}
