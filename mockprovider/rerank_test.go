package mockprovider

import (
	"testing"

	"github.com/tidwall/gjson"
)

func TestRerank(t *testing.T) {
	base := newServer(t, Config{})
	status, _, body := post(t, base+"/rerank", `{"model":"m","query":"red fox","documents":["dog","red fox",{"text":"red"}],"top_n":2}`)
	r := gjson.Parse(body)
	if status != 200 || r.Get("results.#").Int() != 2 || r.Get("results.0.index").Int() != 1 || r.Get("results.1.relevance_score").Float() != 0.5 ||
		r.Get("usage.total_tokens").Int() == 0 {
		t.Fatalf("jina: %d %s", status, body)
	}
	for i, bad := range []string{`{"model":"m","documents":["a"]}`, `{"model":"m","query":"q","documents":[]}`, `{"query":"q","documents":["a"]}`} {
		if status, _, body := post(t, base+"/rerank", bad); status != 400 || gjson.Get(body, "error.message").Str == "" {
			t.Errorf("Test %d: %d %s", i, status, body)
		}
	}
}
