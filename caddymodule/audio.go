package caddymodule

import (
	"fmt"
	"slices"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/chatproxy"
	"github.com/caddy-air/caddy-air/providers"
)

func init() {
	caddy.RegisterModule(Speech{})
	httpcaddyfile.RegisterHandlerDirective("air_speech", parseHandler[Speech])
	httpcaddyfile.RegisterDirectiveOrder("air_speech", httpcaddyfile.Before, "respond")
}

// Speech is the `air_speech` handler: `POST /v1/audio/speech`, text to
// speech. The JSON request is passed through to the provider of the
// model (of kind speech) byte for byte but for the model alias; the audio
// answer is forwarded as it arrives, never held whole (its last 32 KiB
// wait for the ledger record). It is billed per input character, or per
// estimated input token, as the model's price says.
type Speech struct{ proxyHandler }

// CaddyModule returns the Caddy module information.
func (Speech) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.air_speech", New: func() caddy.Module { return new(Speech) }}
}

// Provision sets the handler up for OpenAI speech.
func (h *Speech) Provision(ctx caddy.Context) error {
	return h.provision(ctx, protocolSpec{
		protocol: chatproxy.OpenAI, endpoint: billing.EndpointSpeech, path: "/audio/speech",
		kind: providers.KindSpeech, inspect: chatproxy.InspectSpeech, noOutput: true,
		usage: speechUsage, check: speechFormat, binary: true,
	})
}

// speechUsage bills a speech request on its input: its characters and its
// estimated tokens (the model's price picks which, billing.Usage). The
// provider did the whole synthesis once it answered, also when the
// client left before the end of the audio.
func speechUsage(in chatproxy.Inspected, _ *chatproxy.Result) (billing.Usage, billing.Source) {
	u := chatproxy.EstimateRequest(in, 0)
	return billing.Usage{Input: u.Input, Characters: u.Characters}, billing.SourceUnits
}

// speechFormat refuses a response_format the model's formats do not list.
func speechFormat(in chatproxy.Inspected, route *providers.Route) *apierror.Error {
	if len(route.Formats) == 0 || slices.Contains(route.Formats, in.Format) {
		return nil
	}
	return apierror.InvalidRequest("response_format", fmt.Sprintf("the model %q does not produce %q audio: use one of %s",
		in.Model, in.Format, strings.Join(route.Formats, ", ")))
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Speech)(nil)
	_ caddyhttp.MiddlewareHandler = (*Speech)(nil)
	_ caddyfile.Unmarshaler       = (*Speech)(nil)
)
