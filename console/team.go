package console

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/caddy-air/caddy-air/billing"
)

// TeamService serves the team admins' page and the operators' list of
// teams. Every call of a team admin names the admin, never a team: the
// service acts on the team that the admin administers, so no input can
// reach another team.
type TeamService interface {
	// AdminTeam returns the team that user administers; ErrNotFound when
	// user administers none.
	AdminTeam(ctx context.Context, user string) (Team, error)
	// AddMember adds member to admin's team (or changes its admin flag).
	// A member of another team is refused with an error wrapping
	// ErrInvalid.
	AddMember(ctx context.Context, admin, member string, asAdmin bool) error
	// RemoveMember removes member from admin's team; ErrNotFound when
	// member is not in it. An admin cannot remove itself (ErrInvalid).
	RemoveMember(ctx context.Context, admin, member string) error
	// RevokeKey revokes key id when its user is a member of admin's team;
	// ErrNotFound otherwise.
	RevokeKey(ctx context.Context, admin, id string) error
	// CreateKey makes a key for member, who must be a member of admin's
	// team (ErrNotFound otherwise), and returns its secret.
	CreateKey(ctx context.Context, admin, member string, o NewKey) (secret string, k Key, err error)
	// Teams lists every team, for operators.
	Teams(ctx context.Context) ([]Team, error)
}

// Team is a team as the console shows it.
type Team struct {
	// Name names the team.
	Name string
	// Models are the models its members may use (empty: all).
	Models []string
	// Members are its users, sorted by name.
	Members []TeamMember
	// Keys are its members' keys, newest first (AdminTeam only).
	Keys []Key
	// Budget is the team's limits and spend.
	Budget billing.BudgetStatus
}

// TeamMember is a user of a team.
type TeamMember struct {
	// User is the user's name.
	User string
	// Admin marks the team's admins.
	Admin bool
}

// teamData is the team page's data.
type teamData struct {
	Team Team
	// Member echoes the add form after an error.
	Member string
	// Secret is the key just created for a member, shown once; KeyUser
	// is its user.
	Secret, KeyUser string
	// FormToken is the key form's one-time token.
	FormToken string
	// TagCostChart is the team's cost by day and tag; ByTag its sums.
	TagCostChart *chart
	ByTag        *billing.Report
}

// teamDays is how many days the team page charts.
const teamDays = 30

// teamPage shows the team that the signed-in user administers: its
// members, their keys, its limits and spend, and its cost by tag.
func (h *Handler) teamPage(w http.ResponseWriter, r *http.Request) {
	h.showTeam(w, r, http.StatusOK, "", "")
}

// createTeamKey creates a key for a member of the admin's team and shows
// its secret once, on the team page.
func (h *Handler) createTeamKey(w http.ResponseWriter, r *http.Request) {
	if err := h.useFormToken(userOf(r), r.PostFormValue("form_token")); errors.Is(err, errFormUsed) {
		http.Redirect(w, r, h.cfg.Prefix+"/team", http.StatusSeeOther)
		return
	} else if err != nil {
		h.showTeam(w, r, http.StatusBadRequest, "", err.Error())
		return
	}
	member := strings.TrimSpace(r.PostFormValue("user"))
	o, msg := h.postedKey(r)
	if msg != "" {
		h.showTeam(w, r, http.StatusBadRequest, "", msg)
		return
	}
	h.teamChange(w, r, "", func(svc TeamService, admin string) error {
		secret, k, err := svc.CreateKey(r.Context(), admin, member, o)
		if err == nil {
			h.setFlash(w, r, "/team", admin, secret, k.ID)
		}
		return err
	})
}

// showTeam renders the team page with an error message.
func (h *Handler) showTeam(w http.ResponseWriter, r *http.Request, status int, member, msg string) {
	svc := h.cfg.Services.Teams
	if svc == nil {
		h.fail(w, r, http.StatusNotFound, "teams are not served here")
		return
	}
	t, err := svc.AdminTeam(r.Context(), userOf(r))
	if errors.Is(err, ErrNotFound) {
		h.fail(w, r, http.StatusForbidden, "the team page is for the admins of a team, and you administer none")
		return
	}
	if err != nil {
		h.internal(w, r, "reading your team", err)
		return
	}
	d := teamData{Team: t, Member: member, ByTag: &billing.Report{}, FormToken: h.formToken(userOf(r))}
	if secret, id, ok := h.takeFlash(w, r, "/team", userOf(r)); ok {
		d.Secret = secret
		for _, k := range t.Keys {
			if k.ID == id {
				d.KeyUser = k.User
			}
		}
	}
	if u := h.cfg.Services.Usage; u != nil {
		until := h.cfg.Now().UTC().Truncate(24 * time.Hour)
		since := until.AddDate(0, 0, -(teamDays - 1))
		reps, err := u.Reports(r.Context(), billing.ReportFilter{Team: t.Name, Since: since, Until: until}, billing.ByDayTag, billing.ByTag)
		if err != nil {
			h.internal(w, r, "reading your team's usage", err)
			return
		}
		d.TagCostChart, _ = usageCharts(reps[0], since, until, seriesTag)
		d.ByTag = reps[1]
	}
	h.renderMsg(w, r, status, "team", "Team "+t.Name, d, msg)
}

// teamChange runs a team admin's change and answers with the team page:
// a redirect to it, or the page with the refusal.
func (h *Handler) teamChange(w http.ResponseWriter, r *http.Request, member string, change func(svc TeamService, admin string) error) {
	svc := h.cfg.Services.Teams
	if svc == nil {
		h.fail(w, r, http.StatusNotFound, "teams are not served here")
		return
	}
	err := change(svc, userOf(r))
	switch {
	case err == nil:
		http.Redirect(w, r, h.cfg.Prefix+"/team", http.StatusSeeOther)
	case errors.Is(err, ErrInvalid):
		h.showTeam(w, r, http.StatusBadRequest, member, err.Error())
	case errors.Is(err, ErrNotFound):
		h.showTeam(w, r, http.StatusNotFound, member, "not found in your team")
	default:
		h.internal(w, r, "changing your team", err)
	}
}

// addTeamMember adds the form's user to the admin's team.
func (h *Handler) addTeamMember(w http.ResponseWriter, r *http.Request) {
	member := strings.TrimSpace(r.PostFormValue("user"))
	asAdmin := r.PostFormValue("admin") == "on"
	h.teamChange(w, r, member, func(svc TeamService, admin string) error {
		if member == "" {
			return Invalid(errors.New("name the user to add"))
		}
		return svc.AddMember(r.Context(), admin, member, asAdmin)
	})
}

// removeTeamMember removes a member from the admin's team.
func (h *Handler) removeTeamMember(w http.ResponseWriter, r *http.Request) {
	h.teamChange(w, r, "", func(svc TeamService, admin string) error {
		return svc.RemoveMember(r.Context(), admin, r.PathValue("user"))
	})
}

// revokeTeamKey revokes a key of a member of the admin's team.
func (h *Handler) revokeTeamKey(w http.ResponseWriter, r *http.Request) {
	h.teamChange(w, r, "", func(svc TeamService, admin string) error {
		return svc.RevokeKey(r.Context(), admin, r.PathValue("id"))
	})
}

// teamsPage lists every team, for operators.
func (h *Handler) teamsPage(w http.ResponseWriter, r *http.Request) {
	svc := h.cfg.Services.Teams
	if svc == nil {
		h.fail(w, r, http.StatusNotFound, "teams are not served here")
		return
	}
	list, err := svc.Teams(r.Context())
	if err != nil {
		h.internal(w, r, "listing teams", err)
		return
	}
	h.render(w, r, http.StatusOK, "teams", "Teams", list)
}
