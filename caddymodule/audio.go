package caddymodule

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/chatproxy"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/providers"
)

func init() {
	caddy.RegisterModule(Speech{})
	caddy.RegisterModule(Transcriptions{})
	caddy.RegisterModule(Translations{})
	gateway.RegisterKind(providers.KindSpeech, "POST /v1/audio/speech")
	gateway.RegisterKind(providers.KindTranscription, "POST /v1/audio/transcriptions")
	httpcaddyfile.RegisterHandlerDirective("air_speech", parseHandler[Speech])
	httpcaddyfile.RegisterHandlerDirective("air_transcriptions", parseHandler[Transcriptions])
	httpcaddyfile.RegisterHandlerDirective("air_translations", parseHandler[Translations])
	httpcaddyfile.RegisterDirectiveOrder("air_speech", httpcaddyfile.Before, "respond")
	httpcaddyfile.RegisterDirectiveOrder("air_transcriptions", httpcaddyfile.Before, "respond")
	httpcaddyfile.RegisterDirectiveOrder("air_translations", httpcaddyfile.Before, "respond")
}

// maxUpload bounds the multipart body of a transcription or translation,
// the audio file with the form: OpenAI's limit of 25 MB, and a little
// room for the form. A larger one gets 413 before any upstream sees it.
// The body is buffered, within max_buffered_bodies, so that a retry or a
// fallback can send it again.
const maxUpload = 25<<20 + 64<<10

// Transcriptions is the `air_transcriptions` handler: `POST
// /v1/audio/transcriptions`, speech to text. The multipart form is
// passed through to the provider of the model (of kind transcription)
// byte for byte but for the model field's alias; the answer (json,
// verbose_json, text, srt or vtt) comes back as the provider wrote it. It
// is billed on the usage the provider reports (tokens, or seconds), else
// on the audio's duration.
type Transcriptions struct{ proxyHandler }

// Translations is the `air_translations` handler: `POST
// /v1/audio/translations`, speech to English text, as Transcriptions.
type Translations struct{ proxyHandler }

// CaddyModule returns the Caddy module information.
func (Transcriptions) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.air_transcriptions", New: func() caddy.Module { return new(Transcriptions) }}
}

// CaddyModule returns the Caddy module information.
func (Translations) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.air_translations", New: func() caddy.Module { return new(Translations) }}
}

// Provision sets the handler up for OpenAI transcriptions.
func (h *Transcriptions) Provision(ctx caddy.Context) error {
	return h.provision(ctx, transcriptionEndpoint(billing.EndpointTranscriptions, "/audio/transcriptions"))
}

// Provision sets the handler up for OpenAI translations.
func (h *Translations) Provision(ctx caddy.Context) error {
	return h.provision(ctx, transcriptionEndpoint(billing.EndpointTranslations, "/audio/translations"))
}

// transcriptionEndpoint is the endpoint of speech to text.
func transcriptionEndpoint(name, path string) gateway.Endpoint {
	return gateway.Endpoint{
		Name: name, Path: path, Kind: providers.KindTranscription,
		Wire:    gateway.Wire{Protocol: openai.TranscriptWire},
		Billing: gateway.Billing{Usage: transcriptionUsage},
		Body:    gateway.BodyPolicy{Multipart: &transcriptionForm, MaxBody: maxUpload},
	}
}

// transcriptionForm reads and edits the multipart forms of speech to
// text, in OpenAI's form fields.
var transcriptionForm = gateway.MultipartForm{Inspect: openai.InspectTranscription, Prepare: openai.PrepareMultipart}

// transcriptionUsage reads the usage of a JSON answer, or of a stream's
// transcript.text.done event (openai.TranscriptUsage: tokens or
// seconds), else verbose_json's duration; an answer without any (text,
// srt, vtt, a stream cut before its end) is billed on the audio's
// duration, read from the file (source units) or estimated from its size.
func transcriptionUsage(in dialect.Inspected, res *chatproxy.Result) (billing.Usage, billing.Source) {
	if in.Stream && res.Source == billing.SourceReported {
		return res.Usage, res.Source
	}
	body := res.Held.Body()
	if u, ok := openai.TranscriptUsage(gjson.GetBytes(body, "usage")); ok {
		return u, billing.SourceReported
	}
	var u billing.Usage
	if d := gjson.GetBytes(body, "duration"); d.Type == gjson.Number {
		u.AudioMillis = int64(math.Round(d.Float() * 1000))
		return u.Bounded(), billing.SourceReported
	}
	u.AudioMillis = in.AudioMillis
	if in.AudioEstimated {
		return u.Bounded(), billing.SourceEstimated
	}
	return u.Bounded(), billing.SourceUnits
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
	return h.provision(ctx, gateway.Endpoint{
		Name: billing.EndpointSpeech, Path: "/audio/speech", Kind: providers.KindSpeech,
		Wire:    gateway.Wire{Protocol: openai.Wire, Inspect: openai.InspectSpeech},
		Billing: gateway.Billing{NoOutput: true, Usage: speechUsage},
		Body:    gateway.BodyPolicy{Binary: true},
		Check:   speechFormat,
	})
}

// speechUsage bills a speech request on its input: its characters and its
// estimated tokens (the model's price picks which, billing.Usage). The
// provider did the whole synthesis once it answered, also when the
// client left before the end of the audio.
func speechUsage(in dialect.Inspected, _ *chatproxy.Result) (billing.Usage, billing.Source) {
	u := dialect.EstimateRequest(in, 0)
	return billing.Usage{Input: u.Input, Characters: u.Characters}, billing.SourceUnits
}

// speechFormat refuses a response_format the model's formats do not list.
func speechFormat(in dialect.Inspected, route *providers.Route) *apierror.Error {
	if len(route.Formats) == 0 || slices.Contains(route.Formats, in.Format) {
		return nil
	}
	return apierror.InvalidRequest("response_format", fmt.Sprintf("the model %q does not produce %q audio: use one of %s",
		in.Model, in.Format, strings.Join(route.Formats, ", ")))
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Speech)(nil)
	_ caddy.Provisioner           = (*Transcriptions)(nil)
	_ caddy.Provisioner           = (*Translations)(nil)
	_ caddyhttp.MiddlewareHandler = (*Transcriptions)(nil)
	_ caddyhttp.MiddlewareHandler = (*Translations)(nil)
	_ caddyhttp.MiddlewareHandler = (*Speech)(nil)
	_ caddyfile.Unmarshaler       = (*Speech)(nil)
	_ caddyfile.Unmarshaler       = (*Transcriptions)(nil)
	_ caddyfile.Unmarshaler       = (*Translations)(nil)
)
