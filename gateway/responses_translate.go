package gateway

import (
	"fmt"
	"net/http"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/dialect"
	dresponses "github.com/caddy-air/caddy-air/dialect/responses"
	"github.com/caddy-air/caddy-air/providers"
)

// refuseStateful refuses a Responses request that uses a stateful
// feature of the Responses API on a model reached by translation, whose
// provider stores no responses: previous_response_id (a stored
// conversation), background (a stored, polled response), conversation
// and prompt (stored objects). The 400 names the parameter whatever the
// model's drop_params, as dropping any of them would answer another
// question than the one asked. (store, which only keeps the answer for
// later retrieval, is dropped and reported in X-Air-Dropped-Params
// instead.) A model that passes through is not concerned; its
// translated fallbacks, tried only when it fails, answer a background
// request in the foreground, and are never tried for a continued
// response, which is pinned to its deployment.
func (e *Engine) refuseStateful(body []byte, in dialect.Inspected, route *providers.Route) *apierror.Error {
	if e.Endpoint.Wire.Protocol != dresponses.Wire || e.translator(route) == nil {
		return nil
	}
	param := ""
	switch {
	case in.PreviousResponseID != "":
		param = "previous_response_id"
	case in.Background:
		param = "background"
	default:
		for _, p := range [...]string{"conversation", "prompt"} {
			if v := gjson.GetBytes(body, p); v.Exists() && v.Type != gjson.Null {
				param = p
				break
			}
		}
	}
	if param == "" {
		return nil
	}
	return apierror.New(http.StatusBadRequest, apierror.TypeInvalidRequest, "unsupported_parameter", fmt.Sprintf("%s is not supported for the model %q: its provider (protocol %s) is reached by translation and stores no responses; "+
		"send the whole conversation in input instead", param, in.Model, route.Provider.Protocol)).WithParam(param)
}
