package gateway

import (
	"testing"

	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/anthropic"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"github.com/caddy-air/caddy-air/providers"
)

// TestProviderWire checks the wire a provider's API passes through in:
// Messages' (x-api-key, Anthropic's error shape and usage) for anthropic,
// Chat Completions' for the OpenAI-compatible others.
func TestProviderWire(t *testing.T) {
	for _, tc := range []struct {
		protocol string
		want     dialect.Wire
	}{
		{providers.ProtocolAnthropic, anthropic.Wire},
		{providers.ProtocolOpenAI, openai.Wire},
		{providers.ProtocolDashScope, openai.Wire},
	} {
		if got := ProviderWire(&providers.Provider{Protocol: tc.protocol}); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.protocol, got, tc.want)
		}
	}
}
