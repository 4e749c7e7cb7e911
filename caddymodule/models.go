package caddymodule

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-air/caddy-air/airmetrics"
	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/teams"
)

func init() {
	caddy.RegisterModule(Models{})
	httpcaddyfile.RegisterHandlerDirective("air_models", parseHandler[Models])
	httpcaddyfile.RegisterDirectiveOrder("air_models", httpcaddyfile.Before, "respond")
}

// Models is the `air_models` handler. `GET /v1/models` lists the
// configured model ids (globs excluded; behind air_auth, only those the
// key's scope allows) in OpenAI's list format, or in
// Anthropic's when the request carries an anthropic-version header (as
// Anthropic's SDKs send), so that SDKs and tools can discover them.
// `GET /v1/models/{id}` answers one model object in the same two shapes,
// for a listed id or one a glob serves; any other id gets a 404
// model_not_found error in OpenAI's shape (not_found_error in Anthropic's
// for Anthropic clients). Other paths under the matcher go to the next
// handler.
type Models struct {
	app     *App // counts the reads in the metrics
	created time.Time
	routes  *providers.Table
	openAI  []byte
	anthr   []byte
}

// CaddyModule returns the Caddy module information.
func (Models) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.air_models",
		New: func() caddy.Module { return new(Models) },
	}
}

// openAIModel is a model object in OpenAI's shape.
type openAIModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	// Kind is the gateway's model kind (chat, messages, embedding,
	// moderation, speech, transcription, rerank, image, video): the
	// endpoint that serves it. OpenAI's SDKs ignore the member.
	Kind string `json:"kind"`
}

// anthropicModel is a model object in Anthropic's shape.
type anthropicModel struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	CreatedAt   string `json:"created_at"`
}

// Provision renders the model lists once per config.
func (m *Models) Provision(ctx caddy.Context) error {
	app, err := appFrom(ctx)
	if err != nil {
		return err
	}
	m.app, m.created = app, time.Now().UTC().Truncate(time.Second)
	m.routes = app.Routes()
	m.openAI, m.anthr, err = m.render(nil)
	return err
}

// render encodes the model lists in both shapes, of the models that
// allows (every model when allows is nil).
func (m *Models) render(allows func(model string) bool) (openAI, anthr []byte, err error) {
	var oa []openAIModel
	var an []anthropicModel
	for _, r := range m.routes.Models() {
		if allows != nil && !allows(r.Pattern) {
			continue
		}
		oa = append(oa, m.openAIModel(r.Pattern, r))
		an = append(an, m.anthropicModel(r.Pattern))
	}
	if openAI, err = json.Marshal(struct {
		Object string        `json:"object"`
		Data   []openAIModel `json:"data"`
	}{"list", nonNil(oa)}); err != nil {
		return nil, nil, err
	}
	list := struct {
		Data    []anthropicModel `json:"data"`
		HasMore bool             `json:"has_more"`
		FirstID *string          `json:"first_id"`
		LastID  *string          `json:"last_id"`
	}{Data: nonNil(an)}
	if len(an) > 0 {
		list.FirstID, list.LastID = &an[0].ID, &an[len(an)-1].ID
	}
	anthr, err = json.Marshal(list)
	return openAI, anthr, err
}

// nonNil returns s, or an empty slice for nil, which encodes as [].
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (m *Models) openAIModel(id string, r *providers.Route) openAIModel {
	return openAIModel{ID: id, Object: "model", Created: m.created.Unix(), OwnedBy: r.Provider.Name, Kind: r.Kind}
}

func (m *Models) anthropicModel(id string) anthropicModel {
	return anthropicModel{Type: "model", ID: id, DisplayName: id, CreatedAt: m.created.Format(time.RFC3339)}
}

// ServeHTTP answers GET and HEAD with the list or one model.
func (m *Models) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	p := r.URL.Path
	i := strings.Index(p, "/models")
	if i < 0 {
		return next.ServeHTTP(w, r)
	}
	rest := p[i+len("/models"):]
	if rest != "" && rest != "/" && !strings.HasPrefix(rest, "/") {
		return next.ServeHTTP(w, r) // /v1/modelsX
	}
	anthropic := r.Header.Get("Anthropic-Version") != ""
	// HEAD answers GET's headers: Go's server drops the body of a HEAD.
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", allowGet)
		return m.fail(w, r, anthropic, apierror.New(http.StatusMethodNotAllowed, apierror.TypeInvalidRequest, "method_not_allowed", "use GET on "+p))
	}
	id := strings.TrimPrefix(rest, "/")
	// A key restricted to some models, or of a team that is, sees only
	// those (air_auth in front sets the key and the team; without it the
	// whole list is public).
	key, team := identity(r), teamOf(r)
	if key != nil && len(key.Models) == 0 && (team == nil || len(team.Models) == 0) {
		key = nil
	}
	if id == "" {
		return m.list(w, r, key, team, anthropic)
	}
	return m.one(w, r, key, id, anthropic)
}

// list answers the models list, of the models key and team allow (all
// for a nil key).
func (m *Models) list(w http.ResponseWriter, r *http.Request, key *keys.Key, team *teams.Team, anthropic bool) error {
	oa, an := m.openAI, m.anthr
	if key != nil {
		var err error
		if oa, an, err = m.render(func(model string) bool { return key.Allows(model) && team.Allows(model) }); err != nil {
			return err
		}
	}
	m.app.countRead(r, nil, airmetrics.OutcomeOK, http.StatusOK)
	if anthropic {
		return writeRawJSON(w, http.StatusOK, an)
	}
	return writeRawJSON(w, http.StatusOK, oa)
}

// one answers model id, if key (nil: any) allows it.
func (m *Models) one(w http.ResponseWriter, r *http.Request, key *keys.Key, id string, anthropic bool) error {
	if key != nil {
		if aerr := allowModel(r, key, id); aerr != nil {
			return m.fail(w, r, anthropic, aerr)
		}
	}
	route, err := m.routes.Lookup(id)
	if err != nil {
		return m.fail(w, r, anthropic, apierror.NotFound("model_not_found",
			fmt.Sprintf("The model '%s' does not exist or is not served here", id)).WithParam("model"))
	}
	m.app.countRead(r, m.app.metricsRoute(id), airmetrics.OutcomeOK, http.StatusOK)
	if anthropic {
		return writeJSON(w, http.StatusOK, m.anthropicModel(id))
	}
	return writeJSON(w, http.StatusOK, m.openAIModel(id, route))
}

// fail answers e in OpenAI's shape, or Anthropic's for its clients, and
// counts the refusal.
func (m *Models) fail(w http.ResponseWriter, r *http.Request, anthropic bool, e *apierror.Error) error {
	m.app.observeRefusal(w, r, nil, r.URL.Path, e)
	if anthropic {
		e.WriteAnthropic(w)
	} else {
		e.Write(w)
	}
	return caddyhttp.Error(e.Status, e)
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	air_models [<matcher>]
//
// The matcher should cover /v1/models and the paths below it, as
// /v1/models* does.
func (m *Models) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next()
	if d.NextArg() {
		return d.ArgErr()
	}
	return nil
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Models)(nil)
	_ caddyhttp.MiddlewareHandler = (*Models)(nil)
	_ caddyfile.Unmarshaler       = (*Models)(nil)
)
