package integration

import (
	"os"
	"os/exec"
	"testing"
)

// TestNodeSDKs runs integration/node's tests, which use the official
// `openai` (v6) and `@anthropic-ai/sdk` npm packages against the gateway.
// scripts/test.sh installs them; a missing Node or package fails the test.
func TestNodeSDKs(t *testing.T) {
	startGateway(t, gatewayOptions{})
	key, _ := createKey(t, "node")
	if _, err := os.Stat("node/node_modules/openai"); err != nil {
		t.Fatalf("the npm SDKs are not installed (run scripts/test.sh, or npm ci in integration/node): %v", err)
	}
	cmd := exec.Command("node", "--test", "--test-reporter=spec", "sdk.test.mjs")
	cmd.Dir = "node"
	cmd.Env = append(os.Environ(), "GATEWAY_URL="+baseURL, "AIR_KEY="+key)
	out, err := cmd.CombinedOutput()
	t.Logf("node --test:\n%s", out)
	if err != nil {
		t.Fatalf("the npm SDK tests failed: %v", err)
	}
}
