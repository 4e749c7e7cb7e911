package caddymodule

import (
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/billing"
)

// TestAuditConfigChanges checks that a config start records its prices
// and providers once, then only when they change, with the provider's
// API keys and the credentials of its base URL left out.
func TestAuditConfigChanges(t *testing.T) {
	_, st := auditTestState(t)
	pt, err := billing.LoadPrices("../prices.example.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg := func(baseURL string, pt *billing.PriceTable) *App {
		return &App{logger: zap.NewNop(), Prices: "prices.json", prices: pt,
			Providers: []*ProviderConfig{{Name: "up", DialectRaw: dialectJSON("openai"), BaseURLs: []string{baseURL}, APIKeys: []string{"sk-provider-secret-123456"}}},
			Models:    []*ModelConfig{{Pattern: "gpt-*", Provider: "up"}}}
	}
	actions := func() string {
		var s []string
		for _, e := range auditEntries(t, st) {
			s = append(s, e.Action)
		}
		return strings.Join(s, " ")
	}
	cfg("https://u:hunter2@up.example/v1?api-key=sk-in-query-0000", pt).auditConfig(st)
	if got := actions(); got != "providers.change prices.reload" {
		t.Fatalf("after the first start: %q", got)
	}
	cfg("https://u:hunter2@up.example/v1?api-key=sk-in-query-0000", pt).auditConfig(st) // a reload with the same config
	if got := actions(); got != "providers.change prices.reload" {
		t.Errorf("a reload without changes recorded: %q", got)
	}
	cfg("https://up2.example/v1", pt).auditConfig(st)
	if got := actions(); got != "providers.change providers.change prices.reload" {
		t.Errorf("after a provider's base URL changed: %q", got)
	}
	cfg("https://up2.example/v1", nil).auditConfig(st)
	if got := actions(); got != "prices.reload providers.change providers.change prices.reload" {
		t.Errorf("after the prices changed: %q", got)
	}
	all := auditEntries(t, st)
	if e := all[1]; !strings.Contains(string(e.Before), "https://up.example/v1") || !strings.Contains(string(e.After), "https://up2.example/v1") || e.Actor != "config" {
		t.Errorf("the provider change: %+v", e)
	}
	for _, e := range all {
		for _, secret := range []string{"hunter2", "sk-provider-secret", "sk-in-query"} {
			if strings.Contains(string(e.Before)+string(e.After), secret) {
				t.Errorf("entry %s holds %q: %s / %s", e.Action, secret, e.Before, e.After)
			}
		}
	}
}
