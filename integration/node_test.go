package integration

import (
	"os"
	"os/exec"
	"testing"
)

// TestNodeSDKs runs integration/node's tests, which use the official
// `openai` (v6) and `@anthropic-ai/sdk` npm packages against the gateway,
// whose mock provider also serves a gemini and a vertex model.
// scripts/test.sh installs them; a missing Node or package fails the test.
func TestNodeSDKs(t *testing.T) {
	sa := serviceAccountFile(t, serviceKey(), "http://localhost:9080/mock/token")
	startGateway(t, gatewayOptions{
		MockOptions: "vertex_service_account " + sa,
		Providers: `provider mock-gemini {
			protocol gemini
			base_url http://localhost:9080/mock
			api_key mock-upstream-key
		}
		provider mock-vertex {
			protocol vertex
			base_url http://localhost:9080/mock
			project mock-project
			region us-central1
			credentials_file ` + sa + `
		}`,
		Models: "model mock-gemini mock-gemini gemini-2.5-flash\n\t\tmodel mock-vertex mock-vertex gemini-2.5-pro",
	})
	key, _ := createKey(t, "node")
	if _, err := os.Stat("node/node_modules/openai"); err != nil {
		t.Fatalf("the npm SDKs are not installed (run scripts/test.sh, or npm ci in integration/node): %v", err)
	}
	cmd := exec.Command("node", "--test", "--test-reporter=spec", "sdk.test.mjs", "gemini.test.mjs")
	cmd.Dir = "node"
	cmd.Env = append(os.Environ(), "GATEWAY_URL="+baseURL, "AIR_KEY="+key)
	out, err := cmd.CombinedOutput()
	t.Logf("node --test:\n%s", out)
	if err != nil {
		t.Fatalf("the npm SDK tests failed: %v", err)
	}
}
