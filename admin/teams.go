package admin

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/teams"
)

// TeamView is a team as the admin API shows it: its members, models,
// limits and spend.
type TeamView struct {
	teams.Team
	// Budget is the team's limits (scope team) and spend.
	Budget billing.BudgetStatus `json:"budget"`
}

// CreateTeamRequest is the body of POST /air/teams.
type CreateTeamRequest struct {
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
func (a API) teamRoutes() []Route {
	return []Route{
		{Pattern: "/air/teams", Handler: a.handleTeams},
		{Pattern: "/air/teams/", Handler: a.handleTeam},
	}
}

// viewOf is the admin view of t.
func viewOf(s *Services, t teams.Team) TeamView {
	return TeamView{Team: t, Budget: s.Budgets.Status(billing.ScopeTeam, t.Name)}
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

func (a API) handleTeams(w http.ResponseWriter, r *http.Request) error {
	s, err := a.started()
	if err != nil {
		return err
	}
	switch r.Method {
	case http.MethodGet:
		list, err := s.Teams.List(r.Context())
		if err != nil {
			return apiErr(http.StatusInternalServerError, err)
		}
		out := make([]TeamView, 0, len(list))
		for _, t := range list {
			out = append(out, viewOf(s, t))
		}
		return writeJSON(w, http.StatusOK, out)
	case http.MethodPost:
		var req CreateTeamRequest
		if err := a.decodeBody(w, r, &req, true, "team"); err != nil {
			return err
		}
		t, err := s.Teams.Create(r.Context(), req.Name, req.Models, time.Now())
		if err != nil {
			return teamErr(err)
		}
		return writeJSON(w, http.StatusCreated, viewOf(s, t))
	}
	return notAllowed(r)
}

func (a API) handleTeam(w http.ResponseWriter, r *http.Request) error {
	s, err := a.started()
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
		if err := a.decodeBody(w, r, &req, true, "team"); err != nil {
			return err
		}
		if req.LogRequests == nil {
			return apiErr(http.StatusBadRequest, fmt.Errorf("PATCH /air/teams/<team> takes {\"log_requests\": true|false}"))
		}
		if err := s.Teams.SetLogRequests(ctx, name, *req.LogRequests); err != nil {
			return teamErr(err)
		}
	case len(parts) == 2 && parts[1] == "models" && r.Method == http.MethodPut:
		var req struct {
			Models []string `json:"models"`
		}
		if err := a.decodeBody(w, r, &req, true, "models"); err != nil {
			return err
		}
		if err := s.Teams.SetModels(ctx, name, req.Models); err != nil {
			return teamErr(err)
		}
	case len(parts) == 2 && parts[1] == "limits" && r.Method == http.MethodPut:
		var lim billing.Limits
		if err := a.decodeBody(w, r, &lim, true, "limits"); err != nil {
			return err
		}
		if err := setLimits(r, s, billing.ScopeTeam, name, lim); err != nil {
			return err
		}
	case len(parts) == 3 && parts[1] == "members" && parts[2] != "" && r.Method == http.MethodPut:
		var req struct {
			Admin bool `json:"admin"`
		}
		if r.ContentLength != 0 {
			if err := a.decodeBody(w, r, &req, true, "member"); err != nil {
				return err
			}
		}
		if err := s.Teams.AddMember(ctx, name, parts[2], req.Admin); err != nil {
			return teamErr(err)
		}
	case len(parts) == 3 && parts[1] == "members" && parts[2] != "" && r.Method == http.MethodDelete:
		if err := s.Teams.RemoveMember(ctx, name, parts[2]); err != nil {
			return teamErr(err)
		}
	default:
		return apiErr(http.StatusNotFound, fmt.Errorf("use GET /air/teams/<team>, PUT /air/teams/<team>/models|limits or PUT|DELETE /air/teams/<team>/members/<user>"))
	}
	t, err := s.Teams.Get(ctx, name)
	if err != nil {
		return teamErr(err)
	}
	return writeJSON(w, http.StatusOK, viewOf(s, t))
}
