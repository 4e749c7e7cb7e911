// Package keyed holds the dialect modules of the protocols whose
// providers need only base URLs and keys, sent as the protocol's key
// header: air.dialects.openai, air.dialects.anthropic,
// air.dialects.dashscope and air.dialects.cohere. They take no settings
// of their own; the gateway builds their requests itself.
package keyed

import (
	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-air/caddy-air/caddymodule/airmod"
	"github.com/caddy-air/caddy-air/providers"
)

func init() {
	caddy.RegisterModule(OpenAI{})
	caddy.RegisterModule(Anthropic{})
	caddy.RegisterModule(DashScope{})
	caddy.RegisterModule(Cohere{})
}

// OpenAI is OpenAI's HTTP API (chat completions, responses, images,
// videos, audio, embeddings, moderations, files and batches), and any
// provider that speaks it.
type OpenAI struct{}

// Anthropic is Anthropic's Messages API.
type Anthropic struct{}

// DashScope is Alibaba DashScope: its OpenAI-compatible chat and its
// native asynchronous image and video tasks.
type DashScope struct{}

// Cohere is Cohere's v2 API (rerank).
type Cohere struct{}

// module is the module information of protocol's dialect.
func module(protocol string, m caddy.Module) caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: caddy.ModuleID(airmod.DialectNamespace + "." + protocol), New: func() caddy.Module { return m }}
}

// CaddyModule returns the Caddy module information.
func (OpenAI) CaddyModule() caddy.ModuleInfo {
	return module(providers.ProtocolOpenAI, new(OpenAI))
}

// CaddyModule returns the Caddy module information.
func (Anthropic) CaddyModule() caddy.ModuleInfo {
	return module(providers.ProtocolAnthropic, new(Anthropic))
}

// CaddyModule returns the Caddy module information.
func (DashScope) CaddyModule() caddy.ModuleInfo {
	return module(providers.ProtocolDashScope, new(DashScope))
}

// CaddyModule returns the Caddy module information.
func (Cohere) CaddyModule() caddy.ModuleInfo {
	return module(providers.ProtocolCohere, new(Cohere))
}

// Protocol implements airmod.Dialect.
func (OpenAI) Protocol() string { return providers.ProtocolOpenAI }

// Protocol implements airmod.Dialect.
func (Anthropic) Protocol() string { return providers.ProtocolAnthropic }

// Protocol implements airmod.Dialect.
func (DashScope) Protocol() string { return providers.ProtocolDashScope }

// Protocol implements airmod.Dialect.
func (Cohere) Protocol() string { return providers.ProtocolCohere }

// Setup implements airmod.Dialect: the provider's base URLs and keys are
// all it needs.
func (OpenAI) Setup(*providers.Provider, airmod.SetupOptions) error { return nil }

// Setup implements airmod.Dialect.
func (Anthropic) Setup(*providers.Provider, airmod.SetupOptions) error { return nil }

// Setup implements airmod.Dialect.
func (DashScope) Setup(*providers.Provider, airmod.SetupOptions) error { return nil }

// Setup implements airmod.Dialect.
func (Cohere) Setup(*providers.Provider, airmod.SetupOptions) error { return nil }

// Interface guards.
var (
	_ airmod.Dialect = (*OpenAI)(nil)
	_ airmod.Dialect = (*Anthropic)(nil)
	_ airmod.Dialect = (*DashScope)(nil)
	_ airmod.Dialect = (*Cohere)(nil)
)
