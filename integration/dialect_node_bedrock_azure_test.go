package integration

import (
	"os"
	"os/exec"
	"testing"
)

// TestNodeSDKBedrockAzure runs integration/node/bedrock_azure.test.mjs:
// the npm `@anthropic-ai/sdk` against a bedrock model, `openai` against
// an azure model and its `responses.create` (stream) against a bedrock
// model, through the gateway, against the mock's fake
// Bedrock and Azure front. A missing Node or package fails the test.
func TestNodeSDKBedrockAzure(t *testing.T) {
	startGateway(t, gatewayOptions{MockOptions: bedrockMock, Providers: bedrockProviders + "\n\t\t" + azureProviders,
		Models: bedrockModels + "\n\t\t" + azureModels, Prices: bedrockPrices})
	key, _ := createKey(t, "node-clouds")
	if _, err := os.Stat("node/node_modules/@anthropic-ai/sdk"); err != nil {
		t.Fatalf("the npm SDKs are not installed (run scripts/test.sh, or npm ci in integration/node): %v", err)
	}
	cmd := exec.Command("node", "--test", "--test-reporter=spec", "bedrock_azure.test.mjs")
	cmd.Dir = "node"
	cmd.Env = append(os.Environ(), "GATEWAY_URL="+baseURL, "AIR_KEY="+key)
	out, err := cmd.CombinedOutput()
	t.Logf("node --test:\n%s", out)
	if err != nil {
		t.Fatalf("the npm SDK tests failed: %v", err)
	}
	// Every exchange left its record: 2 + 2 + 2 + 1 (the cut stream) + 1
	// (the Responses stream, last) on bedrock, 2 + 2 on azure.
	recs := waitLedger(t, "node-clouds", 12)
	if r := recs[len(recs)-1]; len(recs) != 12 || r.Endpoint != "responses" || r.Provider != "aws" || r.Outcome != "ok" || !r.Priced || r.Usage.Output == 0 {
		t.Errorf("%d records, the last %+v", len(recs), r)
	}
}
