package caddymodule

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/teams"
)

// teamView is a team as the admin API shows it: its members, models,
// limits and spend.
type teamView struct {
	teams.Team
	// Budget is the team's limits (scope team) and spend.
	Budget billing.BudgetStatus `json:"budget"`
}

// createTeamRequest is the body of POST /air/teams.
type createTeamRequest struct {
	// Name names the team.
	Name string `json:"name"`
	// Models are the model ids or globs the members may use; empty: all.
	Models []string `json:"models,omitempty"`
}

// teamRoutes are the admin routes over teams:
//
//	GET  /air/teams                               → every team, with members, limits and spend
//	POST /air/teams {"name","models"}             → creates a team (201)
//	GET  /air/teams/<team>                        → one team
//	PATCH /air/teams/<team> {"log_requests"}      → switches request logs of its members' requests
//	PUT  /air/teams/<team>/models {"models"}      → replaces the models its members may use
//	PUT  /air/teams/<team>/limits <billing.Limits> → sets its limits (as PUT /air/budgets/team/<team>)
//	PUT|DELETE /air/teams/<team>/members/<user> [{"admin":bool}] → adds (or changes) and removes a member
func (a Admin) teamRoutes() []caddy.AdminRoute {
	return []caddy.AdminRoute{
		{Pattern: "/air/teams", Handler: caddy.AdminHandlerFunc(a.handleTeams)},
		{Pattern: "/air/teams/", Handler: caddy.AdminHandlerFunc(a.handleTeam)},
	}
}

// viewOf is the admin view of t.
func viewOf(st *gateway.Shared, t teams.Team) teamView {
	return teamView{Team: t, Budget: st.Budgets.Status(billing.ScopeTeam, t.Name)}
}

// teamErr maps the teams service's errors to the admin API's.
func teamErr(err error) error {
	switch {
	case errors.Is(err, teams.ErrNotFound):
		return apiErr(http.StatusNotFound, err)
	case errors.Is(err, teams.ErrExists):
		return apiErr(http.StatusConflict, err)
	case errors.Is(err, teams.ErrInvalid):
		return apiErr(http.StatusBadRequest, err)
	}
	return apiErr(http.StatusInternalServerError, err)
}

func (Admin) handleTeams(w http.ResponseWriter, r *http.Request) error {
	st, err := startedState()
	if err != nil {
		return err
	}
	switch r.Method {
	case http.MethodGet:
		list, err := st.Teams.List(r.Context())
		if err != nil {
			return apiErr(http.StatusInternalServerError, err)
		}
		out := make([]teamView, 0, len(list))
		for _, t := range list {
			out = append(out, viewOf(st, t))
		}
		return writeAdminJSON(w, http.StatusOK, out)
	case http.MethodPost:
		var req createTeamRequest
		if err := decodeAdminBody(w, r, &req, true, "team"); err != nil {
			return err
		}
		t, err := st.CreateTeam(r.Context(), req.Name, req.Models, time.Now())
		if err != nil {
			return teamErr(err)
		}
		return writeAdminJSON(w, http.StatusCreated, viewOf(st, t))
	}
	return apiErr(http.StatusMethodNotAllowed, fmt.Errorf("method %s not allowed", r.Method))
}

func (Admin) handleTeam(w http.ResponseWriter, r *http.Request) error {
	st, err := startedState()
	if err != nil {
		return err
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/air/teams/"), "/")
	name := parts[0]
	ctx := r.Context()
	switch {
	case len(parts) == 1 && r.Method == http.MethodGet:
	case len(parts) == 1 && r.Method == http.MethodPatch:
		var req struct {
			LogRequests *bool `json:"log_requests"`
		}
		if err := decodeAdminBody(w, r, &req, true, "team"); err != nil {
			return err
		}
		if req.LogRequests == nil {
			return apiErr(http.StatusBadRequest, fmt.Errorf("PATCH /air/teams/<team> takes {\"log_requests\": true|false}"))
		}
		if err := st.SetTeamLogRequests(ctx, name, *req.LogRequests); err != nil {
			return teamErr(err)
		}
	case len(parts) == 2 && parts[1] == "models" && r.Method == http.MethodPut:
		var req struct {
			Models []string `json:"models"`
		}
		if err := decodeAdminBody(w, r, &req, true, "models"); err != nil {
			return err
		}
		if err := st.SetTeamModels(ctx, name, req.Models); err != nil {
			return teamErr(err)
		}
	case len(parts) == 2 && parts[1] == "limits" && r.Method == http.MethodPut:
		var lim billing.Limits
		if err := decodeAdminBody(w, r, &lim, true, "limits"); err != nil {
			return err
		}
		if err := setLimits(r, st, billing.ScopeTeam, name, lim); err != nil {
			return err
		}
	case len(parts) == 3 && parts[1] == "members" && parts[2] != "" && r.Method == http.MethodPut:
		var req struct {
			Admin bool `json:"admin"`
		}
		if r.ContentLength != 0 {
			if err := decodeAdminBody(w, r, &req, true, "member"); err != nil {
				return err
			}
		}
		if err := st.AddMember(ctx, name, parts[2], req.Admin); err != nil {
			return teamErr(err)
		}
	case len(parts) == 3 && parts[1] == "members" && parts[2] != "" && r.Method == http.MethodDelete:
		if err := st.RemoveMember(ctx, name, parts[2]); err != nil {
			return teamErr(err)
		}
	default:
		return apiErr(http.StatusNotFound, fmt.Errorf("use GET /air/teams/<team>, PUT /air/teams/<team>/models|limits or PUT|DELETE /air/teams/<team>/members/<user>"))
	}
	t, err := st.Teams.Get(ctx, name)
	if err != nil {
		return teamErr(err)
	}
	return writeAdminJSON(w, http.StatusOK, viewOf(st, t))
}
