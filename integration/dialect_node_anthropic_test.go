package integration

import (
	"bufio"
	"encoding/json"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// nodeMatrixPrices prices every model the npm Anthropic SDK matrix calls,
// with cache writes at 1.25× and reads at 0.1× the input price.
const nodeMatrixPrices = `{"currency":"USD","models":{
	"mock-gpt":{"tiers":[{"input":"1","output":"2"}],"cache":{"creation":"1.25","read":"0.1"}},
	"mock-reasoner":{"tiers":[{"input":"3","output":"15"}],"cache":{"creation":"1.25","read":"0.1"}},
	"mock-gemini":{"tiers":[{"input":"0.3","output":"2.5"}],"cache":{"creation":"1.25","read":"0.1"}},
	"mock-vertex":{"tiers":[{"input":"1.25","output":"10"}],"cache":{"creation":"1.25","read":"0.1"}},
	"claude-bedrock":{"tiers":[{"input":"3","output":"15"}],"cache":{"creation":"1.25","read":"0.1"}}}}`

// TestNodeAnthropicMatrix runs integration/node/anthropic_matrix.test.mjs:
// the npm `@anthropic-ai/sdk` against an openai model (plain, stream,
// streamed tool call and result, reasoning across two turns, an image,
// 429, 5xx, a cut stream), gemini and vertex models (thinking across two
// turns, an image, 429, 5xx, cut streams) and a bedrock model (an image,
// 429, 5xx). Then every answer the SDK was shown is priced exactly in
// the ledger, and every upstream exchange left exactly one record.
func TestNodeAnthropicMatrix(t *testing.T) {
	sa := serviceAccountFile(t, serviceKey(), "http://localhost:9080/mock/token")
	up, up2 := failingChat(t), failingChat(t)
	// Providers of their own: a 429 takes a provider's key out of
	// rotation, and that state outlives a test's config.
	bedrock := "provider aws-nm {\n\t\t\tprotocol bedrock\n\t\t\tregion us-east-1\n\t\t\tbase_url http://localhost:9080/mock/bedrock\n" +
		"\t\t\taccess_key_id AKIDMOCKBEDROCK\n\t\t\tsecret_access_key mock-bedrock-secret\n\t\t\tretries 0\n\t\t\tmin_requests 1000\n\t\t}"
	startGateway(t, gatewayOptions{
		MockOptions: "vertex_service_account " + sa + "\n\t\t\t" + bedrockMock,
		Providers: mockGoogleProvider("gem-nm", "gemini", sa) + "\n\t\t" + mockGoogleProvider("gem-nm-errors", "gemini", sa) + "\n\t\t" +
			mockGoogleProvider("vtx-nm", "vertex", sa) + "\n\t\t" + mockGoogleProvider("vtx-nm-errors", "vertex", sa) + "\n\t\t" +
			providerBlock("rec-nm-openai", "openai", "retries 0", up) + "\n\t\t" + providerBlock("rec-nm-openai2", "openai", "retries 0", up2) + "\n\t\t" +
			bedrock,
		Models: "model mock-gemini gem-nm gemini-2.5-flash\n\t\tmodel mock-gemini-errors gem-nm-errors gemini-2.5-flash\n\t\t" +
			"model mock-vertex vtx-nm gemini-2.5-pro\n\t\tmodel mock-vertex-errors vtx-nm-errors gemini-2.5-pro\n\t\t" +
			"model rec-gpt rec-nm-openai\n\t\tmodel rec-gpt2 rec-nm-openai2\n\t\t" +
			"model claude-bedrock aws-nm anthropic.claude-3-7-sonnet-20250219-v1:0\n\t\tmodel claude-bedrock-errors aws-nm anthropic.claude-3-7-sonnet-20250219-v1:0",
		Prices: nodeMatrixPrices,
	})
	key, _ := createKey(t, "node-matrix")
	if _, err := os.Stat("node/node_modules/@anthropic-ai/sdk"); err != nil {
		t.Fatalf("the npm SDKs are not installed (run scripts/test.sh, or npm ci in integration/node): %v", err)
	}
	usageOut := filepath.Join(t.TempDir(), "usage.jsonl")
	cmd := exec.Command("node", "--test", "--test-reporter=spec", "anthropic_matrix.test.mjs")
	cmd.Dir = "node"
	cmd.Env = append(os.Environ(), "GATEWAY_URL="+baseURL, "AIR_KEY="+key, "USAGE_OUT="+usageOut)
	out, err := cmd.CombinedOutput()
	t.Logf("node --test:\n%s", out)
	if err != nil {
		t.Fatalf("the npm SDK tests failed: %v", err)
	}

	// openai: 1 + 1 + 2 (tool) + 2 (reasoning) + 2 (image) + 3 (500,
	// cut, 429); each Google model: 3 (thinking, the forged one
	// included) + 2 (image) + 5 (500, two cuts, 503, 429); bedrock: 2 + 3.
	recs := waitLedger(t, "node-matrix", 11+2*10+5)
	byID := make(map[string]ledgerRecord, len(recs))
	outcomes := map[string]int{}
	for _, r := range recs {
		byID[r.ID] = r
		outcomes[r.Outcome]++
		if r.Endpoint != "messages" {
			t.Errorf("record %+v", r)
		}
	}
	// openai's 500, cut and 429; each Google model's refused forged
	// signature, 500, two cuts, 503 and 429; bedrock's 500, 503 and 429.
	if outcomes["upstream_error"] != 3+2*6+3 || outcomes["ok"] != 18 {
		t.Errorf("outcomes %v", outcomes)
	}
	f, err := os.Open(usageOut)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var prices struct {
		Models map[string]struct {
			Tiers []struct{ Input, Output string }
			Cache struct{ Creation, Read string }
		}
	}
	if err := json.Unmarshal([]byte(nodeMatrixPrices), &prices); err != nil {
		t.Fatal(err)
	}
	rat := func(s string) *big.Rat { r, _ := new(big.Rat).SetString(s); return r }
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); n++ {
		var shown struct {
			ID    string `json:"id"`
			Model string `json:"model"`
			Usage struct {
				Input      int64 `json:"input_tokens"`
				Output     int64 `json:"output_tokens"`
				CacheRead  int64 `json:"cache_read_input_tokens"`
				CacheWrite int64 `json:"cache_creation_input_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(sc.Bytes(), &shown); err != nil {
			t.Fatal(err)
		}
		r, ok := byID[shown.ID]
		u := shown.Usage
		if !ok || r.Model != shown.Model || r.Outcome != "ok" || !r.Priced || r.Usage.Input != u.Input || r.Usage.Output != u.Output ||
			r.Usage.CacheRead != u.CacheRead || r.Usage.CacheCreation != u.CacheWrite {
			t.Errorf("answer %s: record %+v", sc.Bytes(), r)
			continue
		}
		p := prices.Models[shown.Model]
		in, outp := rat(p.Tiers[0].Input), rat(p.Tiers[0].Output)
		want := new(big.Rat).Mul(big.NewRat(u.Input, 1), in)
		want.Add(want, new(big.Rat).Mul(big.NewRat(u.Output, 1), outp))
		want.Add(want, new(big.Rat).Mul(new(big.Rat).Mul(big.NewRat(u.CacheWrite, 1), in), rat(p.Cache.Creation)))
		want.Add(want, new(big.Rat).Mul(new(big.Rat).Mul(big.NewRat(u.CacheRead, 1), in), rat(p.Cache.Read)))
		want.Quo(want, big.NewRat(1_000_000, 1))
		if got, ok := new(big.Rat).SetString(r.Cost); !ok || got.Cmp(want) != 0 {
			t.Errorf("answer %s: cost %s, want %s", sc.Bytes(), r.Cost, want.FloatString(12))
		}
	}
	// 2 + 2 (reasoning) + 2 (image) on openai, 2 + 2 on each Google
	// model, 2 on bedrock.
	if n != 16 {
		t.Errorf("%d priced answers checked", n)
	}
}
