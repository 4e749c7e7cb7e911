// Package authn writes what every request to a provider carries
// whatever its endpoint: the credential headers of the provider's
// protocol. It is the one place that knows how each protocol
// authenticates, used by the chat proxy, the health checks, the task
// adapters and the Responses poller alike.
package authn

import "net/http"

// Protocol names, as providers.Provider.Protocol spells them.
const (
	protocolAnthropic = "anthropic"
	protocolGemini    = "gemini"
)

// DefaultAnthropicVersion is the anthropic-version header sent to an
// Anthropic provider when the client sent none (an OpenAI-protocol client
// translated to Anthropic, a health check).
const DefaultAnthropicVersion = "2023-06-01"

// SetAuth writes into h the credential headers of a request to a provider
// of protocol with key (none when key is empty). client, when not nil, is
// the client's request header: an Anthropic request forwards its
// anthropic-version and anthropic-beta. Header keys are written in
// canonical form without http.Header.Set's canonicalization cost.
func SetAuth(h http.Header, protocol, key string, client http.Header) {
	if protocol == protocolGemini {
		// Google AI Studio: the key in x-goog-api-key, never in the URL
		// (where logs keep it).
		if key != "" {
			h["X-Goog-Api-Key"] = []string{key}
		}
		return
	}
	if protocol == protocolAnthropic {
		if key != "" {
			h["X-Api-Key"] = []string{key}
		}
		if v := client.Values("Anthropic-Version"); len(v) > 0 {
			h["Anthropic-Version"] = v
		} else {
			h["Anthropic-Version"] = []string{DefaultAnthropicVersion}
		}
		if v := client.Values("Anthropic-Beta"); len(v) > 0 {
			h["Anthropic-Beta"] = v
		}
		return
	}
	// openai, dashscope and every OpenAI-compatible service: a bearer key.
	if key != "" {
		h["Authorization"] = []string{"Bearer " + key}
	}
}
