// Package providers holds the gateway's routing table: the upstream
// providers (their protocol, base URLs, keys and timeouts) and the model
// routes that map a client's model id, or a glob of ids, to one provider.
package providers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"
	"time"
)

// Protocols a provider can speak.
const (
	// ProtocolOpenAI is OpenAI's HTTP API: chat completions, images, videos.
	ProtocolOpenAI = "openai"
	// ProtocolAnthropic is Anthropic's Messages API.
	ProtocolAnthropic = "anthropic"
	// ProtocolDashScope is Alibaba DashScope's native asynchronous
	// generation API (image and video tasks).
	ProtocolDashScope = "dashscope"
	// ProtocolGemini is Google AI Studio's Gemini API (generateContent),
	// reached through a translation from every client protocol.
	ProtocolGemini = "gemini"
	// ProtocolVertex is Gemini on Google Cloud's Vertex AI, reached as
	// ProtocolGemini is, with OAuth2 bearer tokens.
	ProtocolVertex = "vertex"
	// ProtocolCohere is Cohere's v2 API (rerank); its base URL ends in
	// /v2.
	ProtocolCohere = "cohere"
	// ProtocolBedrock is Amazon Bedrock Runtime's Converse API, signed
	// with SigV4.
	ProtocolBedrock = "bedrock"
	// ProtocolAzure is Azure OpenAI: OpenAI's chat completions on a
	// deployment (or v1) path, with an api-key header.
	ProtocolAzure = "azure"
)

// IsCloud reports a protocol whose requests an Endpoint builds: its URLs
// name the model, its credentials are more than a key header.
func IsCloud(protocol string) bool {
	return protocol == ProtocolGemini || protocol == ProtocolVertex || protocol == ProtocolBedrock
}

// Endpoint builds and authenticates the requests of a provider whose
// protocol needs more than a base URL and a key header (IsCloud).
type Endpoint interface {
	// NewRequest returns the chat request of body, already in the
	// provider's protocol, for model to attempt a (its base URL and key),
	// authenticated: a streamed one when stream is set.
	NewRequest(ctx context.Context, a Attempt, model string, stream bool, body []byte) (*http.Request, error)
	// Authorize sets the credentials of req, another request to attempt
	// a (a health check).
	Authorize(req *http.Request, a Attempt) error
}

// Kinds of model, which decide the endpoint that serves them.
const (
	// KindChat models are served by /v1/chat/completions.
	KindChat = "chat"
	// KindMessages models are served by /v1/messages.
	KindMessages = "messages"
	// KindImage models are served synchronously by /v1/tasks.
	KindImage = "image"
	// KindVideo models are served asynchronously by /v1/tasks.
	KindVideo = "video"
	// KindEmbedding models are served by /v1/embeddings.
	KindEmbedding = "embedding"
	// KindModeration models are served by /v1/moderations.
	KindModeration = "moderation"
	// KindSpeech models are served by /v1/audio/speech.
	KindSpeech = "speech"
	// KindTranscription models are served by /v1/audio/transcriptions and
	// /v1/audio/translations.
	KindTranscription = "transcription"
	// KindRerank models are served by /v1/rerank.
	KindRerank = "rerank"
)

// Provider is one upstream service.
type Provider struct {
	// Name identifies the provider in model routes and the ledger.
	Name string
	// Protocol is one of the Protocol* constants.
	Protocol string
	// BaseURLs each end before the API path, e.g.
	// "https://api.openai.com/v1".
	BaseURLs []string
	// APIKeys are the provider credentials; package routing balances
	// requests over BaseURLs × APIKeys.
	APIKeys []string
	// Timeout bounds a whole non-streaming request, and the wait for the
	// response headers of a streaming one. Zero means the default.
	Timeout time.Duration
	// Retries is how many further attempts a request gets, on the next base
	// URL or key, when an attempt fails before the first response byte.
	Retries int
	// Endpoint builds and authenticates the requests of a cloud provider
	// (IsCloud(Protocol)); nil for the others.
	Endpoint Endpoint
}

// Attempt is one (base URL, API key) pair to send a request to.
type Attempt struct {
	// BaseURL is the provider base URL, without a trailing slash.
	BaseURL string
	// APIKey is the credential to send with it.
	APIKey string
}

// Deployment is one way to serve a model: a provider, the model name sent
// to it, and optionally a subset of its keys, with a weight and limits.
type Deployment struct {
	// Provider serves the deployment.
	Provider *Provider
	// UpstreamModel, if set, replaces the model id in the upstream request.
	UpstreamModel string
	// Keys, when set, are the indexes in Provider.APIKeys this deployment
	// may use; empty means all of them.
	Keys []int
	// Weight is the deployment's share of the traffic under the
	// weighted_random policy; zero means 1.
	Weight int
	// MaxConcurrent bounds the deployment's requests in flight; zero is
	// no bound.
	MaxConcurrent int
	// RPM and TPM bound the requests and (estimated) tokens per minute
	// sent to the deployment; zero is no bound.
	RPM, TPM int
}

// Name identifies the deployment: "provider/upstream_model", or the
// provider's name alone when no upstream model is set.
func (d *Deployment) Name() string {
	if d.UpstreamModel == "" {
		return d.Provider.Name
	}
	return d.Provider.Name + "/" + d.UpstreamModel
}

// Route maps a model id or glob to its deployments.
type Route struct {
	// Pattern is a model id, or a glob such as "qwen3-*" (path.Match syntax).
	Pattern string
	// Provider serves the model: the first deployment's provider.
	Provider *Provider
	// UpstreamModel, if set, replaces the model id in the upstream request
	// of the first deployment.
	UpstreamModel string
	// Deployments serve the model. NewTable fills it with one deployment
	// of Provider and UpstreamModel when it is empty, and sets Provider and
	// UpstreamModel from the first deployment otherwise.
	Deployments []*Deployment
	// Fallbacks are model ids tried in order when no deployment of this
	// model answers before its first byte; each must be an exact model of
	// the same kind and protocol, or, for chat and messages models, of
	// either kind and any protocol (its requests are translated).
	Fallbacks []string
	// Policy selects a deployment: "weighted_random" (the default),
	// "round_robin", "least_requests" or "lowest_latency".
	Policy string
	// Kind is one of the Kind* constants.
	Kind string
	// Sizes lists the allowed "<width>x<height>" sizes of an image or video
	// model; empty allows any well-formed size.
	Sizes []string
	// Formats lists the response formats a speech model produces (mp3,
	// wav, …); empty allows any.
	Formats []string
	// TypicalDuration is how long a video usually takes to generate; it is
	// used to derive progress when the upstream reports none.
	TypicalDuration time.Duration
	// MaxOutputTokens is the model's output ceiling: the output a request
	// without max_tokens is reserved at. NewTable sets
	// DefaultMaxOutputTokens when it is zero.
	MaxOutputTokens int64
	// DropParams makes a request translated to another protocol drop the
	// parameters its provider cannot honour (listed in a response header)
	// instead of being refused with a 400 naming the first.
	DropParams bool
	// MaxTokens is the model's configured max_output_tokens, zero when
	// the operator set none: the max_tokens sent to a provider that
	// requires one (Anthropic) when a translated request set none (zero
	// sends 4096, which every Claude model accepts).
	MaxTokens int64
}

// DefaultMaxOutputTokens is the output ceiling of a model that sets none.
// A request without max_tokens reserves the cost of this much output while
// it runs. 16,384 is the largest default output of the common chat models
// (OpenAI's GPT-4o family and Anthropic's Claude 3.5 family cap at 16,384
// or less; reasoning and long-output models allow more and should set
// max_output_tokens), so a request that sets no bound is reserved at what
// it can most often really cost, where the former 1,024 let one reasoning
// request cost 50 times its reservation.
const DefaultMaxOutputTokens = 16384

// IsGlob reports whether the route's pattern is a glob rather than an id.
func (r *Route) IsGlob() bool { return strings.ContainsAny(r.Pattern, "*?[") }

// Table is an immutable routing table.
type Table struct {
	providers map[string]*Provider
	exact     map[string]*Route
	globs     []*Route
	ordered   []*Route
}

// ErrUnknownModel is returned by Lookup for a model no route serves.
var ErrUnknownModel = errors.New("unknown model")

// NewTable builds a routing table. Exact ids win over globs; globs are tried
// in the order given. It fails on a route naming an unknown provider, a
// duplicate exact id, a malformed glob or an unknown kind.
func NewTable(provs []*Provider, routes []*Route) (*Table, error) {
	t := &Table{providers: make(map[string]*Provider), exact: make(map[string]*Route)}
	for _, p := range provs {
		if p.Name == "" {
			return nil, errors.New("provider without a name")
		}
		if _, dup := t.providers[p.Name]; dup {
			return nil, fmt.Errorf("provider %q declared twice", p.Name)
		}
		switch p.Protocol {
		case ProtocolOpenAI, ProtocolAnthropic, ProtocolDashScope, ProtocolCohere:
		case ProtocolGemini, ProtocolVertex, ProtocolBedrock, ProtocolAzure:
			if p.Endpoint == nil {
				return nil, fmt.Errorf("provider %q: a %s provider needs an endpoint", p.Name, p.Protocol)
			}
		default:
			return nil, fmt.Errorf("provider %q: unknown protocol %q", p.Name, p.Protocol)
		}
		if len(p.BaseURLs) == 0 {
			return nil, fmt.Errorf("provider %q: no base_url", p.Name)
		}
		t.providers[p.Name] = p
	}
	for _, r := range routes {
		if err := t.deployments(r); err != nil {
			return nil, err
		}
		if r.Kind == "" {
			r.Kind = DefaultKind(r.Provider.Protocol)
		}
		if r.MaxOutputTokens < 0 {
			return nil, fmt.Errorf("model %q: max_output_tokens must be positive", r.Pattern)
		}
		if r.MaxOutputTokens == 0 {
			r.MaxOutputTokens = DefaultMaxOutputTokens
		}
		switch r.Kind {
		case KindChat, KindMessages, KindImage, KindVideo, KindEmbedding, KindModeration, KindSpeech, KindTranscription, KindRerank:
		default:
			return nil, fmt.Errorf("model %q: unknown kind %q", r.Pattern, r.Kind)
		}
		if err := checkMixed(r); err != nil {
			return nil, err
		}
		if IsCloud(r.Provider.Protocol) && !translated(r.Kind) {
			return nil, fmt.Errorf("model %q: a %s provider serves chat and messages models, not %s", r.Pattern, r.Provider.Protocol, r.Kind)
		}
		if r.Provider.Protocol == ProtocolAzure && r.Kind != KindChat {
			return nil, fmt.Errorf("model %q: an azure provider serves chat models (which /v1/messages reaches too), not %s", r.Pattern, r.Kind)
		}
		if r.IsGlob() {
			if _, err := path.Match(r.Pattern, ""); err != nil {
				return nil, fmt.Errorf("model %q: bad glob: %v", r.Pattern, err)
			}
			t.globs = append(t.globs, r)
		} else {
			if _, dup := t.exact[r.Pattern]; dup {
				return nil, fmt.Errorf("model %q declared twice", r.Pattern)
			}
			t.exact[r.Pattern] = r
		}
		t.ordered = append(t.ordered, r)
	}
	for _, r := range t.ordered {
		if err := t.checkFallbacks(r); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Policies of Route.Policy.
const (
	PolicyWeightedRandom = "weighted_random"
	PolicyRoundRobin     = "round_robin"
	PolicyLeastRequests  = "least_requests"
	PolicyLowestLatency  = "lowest_latency"
)

// translated reports a kind whose requests are translated to and from
// the other chat protocol (chat ↔ messages).
func translated(kind string) bool { return kind == KindChat || kind == KindMessages }

// DefaultKind is the model kind a provider protocol serves when a route
// names none.
func DefaultKind(protocol string) string {
	switch protocol {
	case ProtocolAnthropic:
		return KindMessages
	case ProtocolDashScope:
		return KindImage
	case ProtocolCohere:
		return KindRerank
	default: // openai and azure, and the clouds, whose chat models both chat protocols reach
		return KindChat
	}
}
