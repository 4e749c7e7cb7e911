package caddymodule

import (
	"net/http"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/tags"
	"github.com/caddy-air/caddy-air/teams"
)

// Variables under which air_auth leaves the caller's team (a
// *teams.Team, absent for a user of no team) and the request's tags (a
// []string, absent without tags).
const (
	varTeam = "air.team"
	varTags = "air.tags"
)

// tagsHeaderKey is tags.Header in its canonical form, as a map key of
// http.Header: no canonicalization on each request.
var tagsHeaderKey = http.CanonicalHeaderKey(tags.Header)

// teamOf returns the team of r's caller, or nil.
func teamOf(r *http.Request) *teams.Team {
	t, _ := caddyhttp.GetVar(r.Context(), varTeam).(*teams.Team)
	return t
}

// subjectOf is who r is billed to: key's user and key, the user's team
// (key ⊂ user ⊂ team) and the request's tags, or the key's default tags
// when the request names none.
func subjectOf(r *http.Request, key *keys.Key) billing.Subject {
	s := billing.Subject{User: key.User, KeyID: key.ID, Tags: key.Tags}
	if t := teamOf(r); t != nil {
		s.Team = t.Name
	}
	if list, ok := caddyhttp.GetVar(r.Context(), varTags).([]string); ok {
		s.Tags = list
	}
	return s
}

// readCaller finds the team of key's user and reads r's x-air-tags
// header, leaving both in r's variables; a malformed or repeated header
// is a 400 invalid_request_error (param x-air-tags).
func readCaller(r *http.Request, st *state, key *keys.Key) *apierror.Error {
	if t := st.teams.Of(key.User); t != nil {
		caddyhttp.SetVar(r.Context(), varTeam, t)
	}
	vals := r.Header[tagsHeaderKey]
	switch len(vals) {
	case 0:
		return nil
	case 1:
	default:
		return apierror.InvalidRequest(tags.Header, "the x-air-tags header is repeated: send the tags comma-separated in one header")
	}
	list, err := tags.Parse(vals[0])
	if err != nil {
		return apierror.InvalidRequest(tags.Header, "x-air-tags: "+err.Error())
	}
	if list != nil {
		caddyhttp.SetVar(r.Context(), varTags, list)
	}
	return nil
}

// allowModel refuses a request of key for a model outside the key's
// scope, or its team's: 403 model_not_allowed (permission_error in
// Anthropic's shape). Every endpoint that names a model checks it here,
// once the model is known.
func allowModel(r *http.Request, key *keys.Key, model string) *apierror.Error {
	return gateway.AllowModel(key, teamOf(r), model)
}
