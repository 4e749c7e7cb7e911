package caddymodule

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-air/caddy-air/mockprovider"
)

func init() {
	caddy.RegisterModule(Mock{})
	httpcaddyfile.RegisterHandlerDirective("air_mock", parseHandler[Mock])
	httpcaddyfile.RegisterDirectiveOrder("air_mock", httpcaddyfile.Before, "respond")
}

// Mock is the `air_mock` handler: a deterministic offline provider that
// speaks the wire formats of OpenAI chat completions, images and videos and
// of Anthropic messages. Mount it under a path and point a provider's
// base_url at "<that path>/v1". It answers every request itself.
type Mock struct {
	// APIKey, if set, is the key the mock requires from callers.
	APIKey string `json:"api_key,omitempty"`
	// VideoDuration is how long a mock video takes. Default: 10s.
	VideoDuration caddy.Duration `json:"video_duration,omitempty"`
	// FailureRate is the share of videos that fail, from 0 to 1.
	FailureRate float64 `json:"failure_rate,omitempty"`
	// ChunkDelay is the pause between two streamed events.
	ChunkDelay caddy.Duration `json:"chunk_delay,omitempty"`
	// Faults fail a share of this instance's API requests, so that two
	// instances stand for a healthy and a failing upstream. Their rates
	// add up to at most 1.
	Faults []MockFault `json:"faults,omitempty"`
	// FaultSeed seeds the draws that pick the failing requests, so that a
	// run can be repeated. Default (0): a random seed.
	FaultSeed uint64 `json:"fault_seed,omitempty"`
	// Bedrock, if set, mounts a fake Bedrock Runtime that verifies SigV4
	// signatures (see MockBedrock).
	Bedrock *MockBedrock `json:"bedrock,omitempty"`
	// AzureKey, if set, mounts a fake Azure OpenAI resource requiring
	// this api-key on …/openai/deployments/… and …/openai/v1/…,
	// answering as the mock's chat completions. Placeholders like {env.X}
	// are expanded.
	AzureKey string `json:"azure_key,omitempty"`
	// VertexServiceAccount is the path of the service account key file
	// (JSON) whose tokens the mock's fake Vertex AI takes: its token
	// endpoint is the mount's /token (a vertex provider's token_url), its
	// API the mount itself (the provider's base_url). Empty: no fake
	// Vertex AI. The fake Gemini API is always mounted (/v1beta/models/…).
	VertexServiceAccount string `json:"vertex_service_account,omitempty"`
	// VertexProject is the fake Vertex AI's project. Default:
	// mock-project.
	VertexProject string `json:"vertex_project,omitempty"`
	// VertexRegion is the fake Vertex AI's region. Default: us-central1.
	VertexRegion string `json:"vertex_region,omitempty"`

	handler *mockprovider.Handler
}

// CaddyModule returns the Caddy module information.
func (Mock) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.air_mock",
		New: func() caddy.Module { return new(Mock) },
	}
}

// Provision builds the mock provider. Its request bodies nest at most the
// air app's max_json_depth; the mock also runs without the app, and then
// the default applies.
func (m *Mock) Provision(ctx caddy.Context) error {
	depth := 0
	if v, err := ctx.AppIfConfigured("air"); err == nil {
		depth = v.(*App).MaxJSONDepth
	} else if !errors.Is(err, caddy.ErrNotConfigured) {
		return err
	}
	if err := m.check(); err != nil {
		return err
	}
	faults, err := m.providerFaults()
	if err != nil {
		return err
	}
	var sa []byte
	if m.VertexServiceAccount != "" {
		if sa, err = os.ReadFile(m.VertexServiceAccount); err != nil {
			return fmt.Errorf("air_mock: vertex_service_account: %w", err)
		}
	}
	c := mockprovider.Config{
		VertexServiceAccount: sa,
		VertexProject:        m.VertexProject,
		VertexRegion:         m.VertexRegion,
		APIKey:               caddy.NewReplacer().ReplaceAll(m.APIKey, ""),
		VideoDuration:        time.Duration(m.VideoDuration),
		FailureRate:          m.FailureRate,
		ChunkDelay:           time.Duration(m.ChunkDelay),
		MaxJSONDepth:         depth,
		OriginalPath:         originalPath,
		Faults:               faults,
		FaultSeed:            m.FaultSeed,
	}
	if err := m.mockClouds(&c); err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return fmt.Errorf("air_mock: %w", err)
	}
	m.handler = mockprovider.New(c)
	return nil
}

// Cleanup ends the requests that a hang or slow fault still holds, so
// that a reload or a stop does not wait for them.
func (m *Mock) Cleanup() error {
	if m.handler != nil {
		m.handler.Close()
	}
	return nil
}

// originalPath is the request path before handle_path stripped its prefix,
// so that the mock's file URLs point back at itself.
func originalPath(r *http.Request) string {
	orig, _ := r.Context().Value(caddyhttp.OriginalRequestCtxKey).(http.Request)
	if orig.URL == nil {
		return ""
	}
	return orig.URL.Path
}

// ServeHTTP answers the request as a provider would. An error answer (a
// status of 400 or more) is also returned as a caddyhttp.HandlerError, as
// every air handler does, so that Caddy's error log records it.
func (m *Mock) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	sw := &statusWriter{ResponseWriterWrapper: &caddyhttp.ResponseWriterWrapper{ResponseWriter: w}}
	m.handler.ServeHTTP(sw, r)
	if sw.status >= http.StatusBadRequest {
		return caddyhttp.Error(sw.status, fmt.Errorf("mock provider answered %d", sw.status))
	}
	return nil
}

// statusWriter remembers the status of the response written through it.
type statusWriter struct {
	*caddyhttp.ResponseWriterWrapper
	status int
}

// WriteHeader records the first status and passes it on.
func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 && status >= 200 {
		w.status = status
	}
	w.ResponseWriterWrapper.WriteHeader(status)
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	air_mock [<matcher>] {
//		api_key <key>
//		video_duration <duration>
//		failure_rate <0..1>
//		chunk_delay <duration>
//		fault_seed <uint64>
//		bedrock {
//			region <region>
//			access_key_id <id>
//			secret_access_key <secret>
//			retry_after <duration>
//		}
//		azure_key <key>
//		vertex_service_account <key.json>
//		vertex_project <project>
//		vertex_region <region>
//		fault [<rate> <mode>] {
//			rate <0..1>
//			mode <400..599>|hang|slow|reset|cut
//			retry_after <duration>
//			delay <duration>
//			for <duration>
//		}
//	}
//
// fault may be repeated; see parseMockFault.
func (m *Mock) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next()
	if d.NextArg() {
		return d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch d.Val() {
		case "api_key":
			if !d.AllArgs(&m.APIKey) {
				return d.ArgErr()
			}
		case "video_duration":
			m.VideoDuration, err = parseDuration(d)
		case "chunk_delay":
			m.ChunkDelay, err = parseDuration(d)
		case "failure_rate":
			var s string
			if !d.AllArgs(&s) {
				return d.ArgErr()
			}
			f, perr := strconv.ParseFloat(s, 64)
			if perr != nil {
				return d.Errf("failure_rate: want a number from 0 to 1, got %q", s)
			}
			m.FailureRate = f
		case "fault_seed":
			var s string
			if !d.AllArgs(&s) {
				return d.ArgErr()
			}
			n, perr := strconv.ParseUint(s, 10, 64)
			if perr != nil {
				return d.Errf("fault_seed: want an unsigned integer, got %q", s)
			}
			m.FaultSeed = n
		case "bedrock":
			m.Bedrock, err = parseMockBedrock(d)
		case "azure_key":
			if !d.AllArgs(&m.AzureKey) {
				return d.ArgErr()
			}
		case "vertex_service_account":
			if !d.AllArgs(&m.VertexServiceAccount) {
				return d.ArgErr()
			}
		case "vertex_project":
			if !d.AllArgs(&m.VertexProject) {
				return d.ArgErr()
			}
		case "vertex_region":
			if !d.AllArgs(&m.VertexRegion) {
				return d.ArgErr()
			}
		case "fault":
			f, ferr := parseMockFault(d)
			if ferr != nil {
				return ferr
			}
			m.Faults = append(m.Faults, f)
		default:
			return d.Errf("unrecognized air_mock option %q", d.Val())
		}
		if err != nil {
			return err
		}
	}
	if err := m.check(); err != nil {
		return d.Err(err.Error())
	}
	return nil
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Mock)(nil)
	_ caddy.CleanerUpper          = (*Mock)(nil)
	_ caddyhttp.MiddlewareHandler = (*Mock)(nil)
	_ caddyfile.Unmarshaler       = (*Mock)(nil)
)
