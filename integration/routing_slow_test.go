package integration

import (
	"net/http"
	"testing"
)

// TestRoutingSlowDeployment routes a model over two deployments under
// lb_policy lowest_latency, one of them an air_mock instance in its slow
// mode (400ms to the first byte). Each deployment is measured once (one
// never measured counts as the fastest); from then on every request goes
// to the fast one. No request fails, and the ledger shows it.
func TestRoutingSlowDeployment(t *testing.T) {
	startGateway(t, gatewayOptions{
		Site:      faultMock("mslow", "fault {\n\t\t\t\trate 1\n\t\t\t\tmode slow\n\t\t\t\tdelay 400ms\n\t\t\t}"),
		Providers: faultProvider("pslow", "openai", "mslow", ""),
		Models: `model fm-slow {
			lb_policy lowest_latency
			to pslow xslow
			to mock okfast
		}`,
	})
	key, _ := createKey(t, "slow-ttfb")
	const n = 12
	for i := range n {
		if status, _, body := call(t, http.MethodPost, "/v1/chat/completions", key, chatBody("fm-slow")); status != http.StatusOK {
			t.Fatalf("request %d: %d %s", i, status, body)
		}
	}
	served := map[string]int{}
	for _, rec := range ledgerOf(t, "slow-ttfb") {
		if rec.Status != http.StatusOK {
			t.Errorf("ledger record %+v, want status 200", rec)
		}
		served[rec.Deployment]++
	}
	if served["pslow/xslow"] != 1 || served["mock/okfast"] != n-1 {
		t.Errorf("deployments that answered %d requests: %v, want pslow/xslow once (to be measured) and mock/okfast for the other %d", n, served, n-1)
	}
}
