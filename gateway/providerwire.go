package gateway

import (
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/providers"
)

// ProviderWire is the wire a provider's own API is passed through in,
// untranslated (air_passthrough): its credentials, error shape and usage
// tap. An anthropic provider speaks Messages; the others are served as
// OpenAI-compatible.
func ProviderWire(p *providers.Provider) dialect.Wire { return protocolOf(p.Protocol) }
