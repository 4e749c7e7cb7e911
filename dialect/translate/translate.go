// Package translate is the seam between a client's protocol and a
// provider's, modelled on envoy ai-gateway's translator: a Translator per
// (client protocol, provider protocol) pair, made of the client's codec
// (dialect.ClientCodec) and the provider's (dialect.ProviderCodec). A
// request whose client protocol is the provider's has no translator: it
// passes through byte for byte, never decoded.
//
// A translated request is decoded into the neutral model once (Translator.
// Request) and encoded for each upstream it is tried on (Exchange.Body);
// the answer is translated back by a Writer that wraps the client's
// http.ResponseWriter, so that the proxy forwards, taps, holds and bills
// the provider's own bytes exactly as it does when passing them through.
package translate

import (
	"fmt"
	"strings"

	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/anthropic"
	"github.com/caddy-air/caddy-air/dialect/bedrock"
	"github.com/caddy-air/caddy-air/dialect/gemini"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"github.com/caddy-air/caddy-air/dialect/responses"
	"github.com/caddy-air/caddy-air/dialect/vertex"
)

// Protocol names of the wire protocols, as providers name them.
const (
	// Chat is OpenAI's Chat Completions.
	Chat = "openai"
	// Messages is Anthropic's Messages.
	Messages = "anthropic"
	// Responses is OpenAI's Responses, a client protocol only here: a
	// provider that speaks it is reached without translation.
	Responses = "responses"
	// Gemini is Google AI Studio's generateContent, a cloud protocol.
	Gemini = "gemini"
	// Vertex is Vertex AI's generateContent, a cloud protocol.
	Vertex = "vertex"
	// Bedrock is Amazon Bedrock Runtime's Converse, a cloud protocol.
	Bedrock = "bedrock"
)

// DroppedHeader is the response header that lists, comma-separated, the
// request parameters a translated request left out: those the provider
// cannot honour, dropped under the model's drop_params, and those it
// needs no translation of (cache_control for a provider that caches by
// itself).
const DroppedHeader = "X-Air-Dropped-Params"

// Translator translates exchanges from one client protocol to one
// provider protocol.
type Translator struct {
	// Client and Provider name the two protocols.
	Client, Provider string
	// Wire is the protocol the proxy reads the answers in: Provider's, or
	// Messages for a cloud provider, whose answers are transcoded into it
	// (Exchange.Transcode) before the proxy taps them.
	Wire string
	// Path is the provider's request path below its base URL; "" for a
	// cloud provider, whose endpoint builds its URLs.
	Path     string
	client   dialect.ClientCodec
	provider dialect.ProviderCodec
	// answer decodes what the proxy reads (Wire's codec); cloud is the
	// provider's codec behind a transcoding, nil for the others.
	answer, cloud dialect.ProviderCodec
}

// codecs are the protocols with a dialect, by name, and their paths. A
// protocol without a client codec is a cloud provider's: no client speaks
// it, and its answers are transcoded into Messages. A protocol without a
// provider codec (nor path) is one only clients speak through the gateway.
var codecs = map[string]struct {
	client   dialect.ClientCodec
	provider dialect.ProviderCodec
	path     string
	// count is how the protocol's providers count tokens; nil: they do
	// not (the gateway estimates).
	count *dialect.Counter
}{
	Chat:      {openai.Codec{}, openai.Codec{}, openai.Path, nil},
	Messages:  {anthropic.Codec{}, anthropic.Codec{}, anthropic.Path, nil},
	Responses: {responses.Codec{}, nil, "", nil},
	Gemini:    {nil, gemini.Codec{}, "", &gemini.Count},
	Vertex:    {nil, vertex.Codec{}, "", &vertex.Count},
	Bedrock:   {nil, bedrock.Codec{}, "", nil},
}

// CounterOf is how providers of protocol count a request's tokens, nil
// when they do not.
func CounterOf(protocol string) *dialect.Counter { return codecs[protocol].count }

// translators are made once: they hold no state of an exchange.
var translators = func() map[[2]string]*Translator {
	m := make(map[[2]string]*Translator)
	for c, cc := range codecs {
		if cc.client == nil {
			continue
		}
		for p, pc := range codecs {
			if c == p || pc.provider == nil {
				continue
			}
			t := &Translator{Client: c, Provider: p, Wire: p, Path: pc.path, client: cc.client, provider: pc.provider, answer: pc.provider}
			if pc.client == nil {
				t.Wire, t.answer, t.cloud = Messages, anthropic.Codec{}, pc.provider
			}
			m[[2]string{c, p}] = t
		}
	}
	return m
}()

// For returns the translator from client to provider, nil when the two
// are one protocol (pass through) or no translation between them exists.
func For(client, provider string) *Translator { return translators[[2]string{client, provider}] }

// Options are the model's settings a translation follows.
type Options struct {
	// DropParams drops the parameters the provider cannot honour instead
	// of refusing the request.
	DropParams bool
	// MaxTokens is the output ceiling sent when the client set none and
	// the provider requires one; zero is the provider codec's default.
	MaxTokens int64
}

// Exchange is one translated request.
type Exchange struct {
	t   *Translator
	req *dialect.Request
	// Dropped lists the parameters left out, for DroppedHeader.
	Dropped []string
}

// UnsupportedError is a request parameter the provider cannot honour.
type UnsupportedError struct {
	// Param names it.
	Param string
	// Provider names the provider's protocol.
	Provider string
}

// Error implements error.
func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("the parameter %q cannot be translated for this model's provider (protocol %s); the model's drop_params setting would drop it", e.Param, e.Provider)
}

// Request decodes a client's request for translation. It fails with the
// client codec's error on a request it cannot read, and with an
// *UnsupportedError naming the first parameter the provider cannot honour
// unless o.DropParams is set.
func (t *Translator) Request(body []byte, o Options) (*Exchange, error) {
	req, err := t.client.DecodeRequest(body)
	if err != nil {
		return nil, err
	}
	if req.MaxTokens <= 0 && o.MaxTokens > 0 {
		req.MaxTokens = o.MaxTokens
	}
	x := &Exchange{t: t, req: req}
	// One encoding finds what the provider cannot express.
	if _, err := t.provider.EncodeRequest(nil, req); err != nil {
		return nil, err
	}
	if pn, ok := t.client.(paramNamer); ok {
		rename(pn, req.Unsupported)
		rename(pn, req.Dropped)
	}
	if len(req.Unsupported) > 0 && !o.DropParams {
		return nil, &UnsupportedError{Param: req.Unsupported[0], Provider: t.Provider}
	}
	x.Dropped = append(append(x.Dropped, req.Unsupported...), req.Dropped...)
	return x, nil
}

// paramNamer is a client codec that names in its own protocol's terms the
// parameters a provider codec records as unsupported or dropped (which
// use the Chat Completions and Messages names).
type paramNamer interface {
	// ClientParam is the client's name of the parameter param.
	ClientParam(param string) string
}

// rename renames params in place.
func rename(pn paramNamer, params []string) {
	for i, p := range params {
		params[i] = pn.ClientParam(p)
	}
}

// DroppedValue is the value of DroppedHeader, "" when nothing was dropped.
func (x *Exchange) DroppedValue() string { return strings.Join(x.Dropped, ", ") }

// Body returns the provider's request body for upstreamModel ("" keeps
// the client's model name).
func (x *Exchange) Body(upstreamModel string) ([]byte, error) {
	r := *x.req
	if upstreamModel != "" {
		r.Model = upstreamModel
	}
	r.Unsupported, r.Dropped = nil, nil
	return x.t.provider.EncodeRequest(nil, &r)
}

// Path is the provider's request path.
func (x *Exchange) Path() string { return x.t.Path }

// Model is the model named upstream: upstreamModel, or the client's when
// it is "".
func (x *Exchange) Model(upstreamModel string) string {
	if upstreamModel != "" {
		return upstreamModel
	}
	return x.req.Model
}

// Stream reports whether the client asked for a stream.
func (x *Exchange) Stream() bool { return x.req.Stream }

// Wire is the protocol the proxy reads x's answers in (Translator.Wire).
func (x *Exchange) Wire() string { return x.t.Wire }
