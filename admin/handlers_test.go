package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/console"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/teams"
)

// fakeServices answer every call with err (nil: success), and remember
// what they were asked.
type fakeServices struct {
	err     error
	created keys.CreateOptions
	grace   time.Duration
}

func (f *fakeServices) List(context.Context, string) ([]*keys.Key, error) { return nil, f.err }
func (f *fakeServices) Create(_ context.Context, o keys.CreateOptions) (string, *keys.Key, error) {
	f.created = o
	return "sk-new", &keys.Key{ID: "k1", User: o.User}, f.err
}
func (f *fakeServices) Update(context.Context, string, keys.Change) (*keys.Key, error) {
	return &keys.Key{ID: "k1"}, f.err
}
func (f *fakeServices) Revoke(context.Context, string) (*keys.Key, error) {
	return &keys.Key{ID: "k1"}, f.err
}
func (f *fakeServices) Regenerate(_ context.Context, _ string, grace time.Duration) (string, *keys.Key, error) {
	f.grace = grace
	return "sk-regen", &keys.Key{ID: "k1"}, f.err
}
func (f *fakeServices) Budgets(context.Context) ([]billing.BudgetEntry, error) { return nil, f.err }
func (f *fakeServices) Status(billing.Scope, string) billing.BudgetStatus {
	return billing.BudgetStatus{}
}
func (f *fakeServices) SetBudget(context.Context, billing.Scope, string, billing.Limits) error {
	return f.err
}
func (f *fakeServices) DeleteBudget(context.Context, billing.Scope, string) error { return f.err }

// fakeTeams is a TeamService whose changes fail with err.
type fakeTeams struct{ err error }

func (t fakeTeams) List(context.Context) ([]teams.Team, error) { return nil, t.err }
func (t fakeTeams) Get(_ context.Context, name string) (teams.Team, error) {
	return teams.Team{Name: name}, nil
}
func (t fakeTeams) Create(_ context.Context, name string, _ []string, _ time.Time) (teams.Team, error) {
	return teams.Team{Name: name}, t.err
}
func (t fakeTeams) SetModels(context.Context, string, []string) error     { return t.err }
func (t fakeTeams) SetLogRequests(context.Context, string, bool) error    { return t.err }
func (t fakeTeams) AddMember(context.Context, string, string, bool) error { return t.err }
func (t fakeTeams) RemoveMember(context.Context, string, string) error    { return t.err }

// startedGateway is a gateway whose config has started with s.
type startedGateway struct {
	fakeGateway
	s *Services
}

func (g startedGateway) Started() (*Services, error) { return g.s, nil }

// TestHandlerStatuses checks how the handlers answer their services'
// errors and the requests they refuse themselves.
func TestHandlerStatuses(t *testing.T) {
	for i, tc := range []struct {
		err                error
		method, path, body string
		status             int
		msg                string // the error's text, when not 2xx
	}{
		{nil, "DELETE", "/air/keys/k1", "", 200, ""},
		{keys.ErrNoSuchKey, "DELETE", "/air/keys/k1", "", 404, `no key with id "k1"`},
		{errors.New("disk"), "DELETE", "/air/keys/k1", "", 500, "disk"},
		{keys.ErrNoSuchKey, "PATCH", "/air/keys/k1", `{"name":"x"}`, 404, `no key with id "k1"`},
		{errors.New("bad glob"), "PATCH", "/air/keys/k1", `{"name":"x"}`, 400, "bad glob"},
		{nil, "PUT", "/air/keys/k1", "", 405, "method PUT not allowed"},
		{nil, "POST", "/air/keys", `{"user":"al","expires_in":"-1h"}`, 400, `expires_in: bad duration "-1h"`},
		{fmt.Errorf("creating a key: %w", store.ErrStorageFull), "POST", "/air/keys", `{"user":"al"}`, 507, "creating a key: storage full"},
		{keys.ErrRevoked, "POST", "/air/keys/k1/regenerate", `{"grace":"1h"}`, 409, "key k1 is revoked: create a new one"},
		{nil, "POST", "/air/keys/k1/regenerate", `{"grace":"soon"}`, 400, `grace: bad duration "soon"`},
		{nil, "GET", "/air/keys/k1/regenerate", "", 405, "method GET not allowed"},
		{console.Invalid(errors.New("no such user")), "PUT", "/air/budgets/user/al", `{"rpm":1}`, 400, "no such user"},
		{errors.New("disk"), "PUT", "/air/budgets/user/al", `{"rpm":1}`, 500, "disk"},
		{nil, "PUT", "/air/budgets/user/al", `{"rpn":1}`, 400, `decoding limits: json: unknown field "rpn"`},
		{nil, "GET", "/air/budgets/org/al", "", 404, "use /air/budgets/user/<user>, /air/budgets/key/<key id> or /air/budgets/team/<team>"},
		{nil, "PUT", "/air/budgets/", "", 405, "method PUT not allowed"},
		{teams.ErrExists, "POST", "/air/teams", `{"name":"red"}`, 409, "already exists"},
		{teams.ErrInvalid, "PUT", "/air/teams/red/models", `{"models":["["]}`, 400, "invalid"},
		{teams.ErrNotFound, "DELETE", "/air/teams/red/members/al", "", 404, "no such team or member"},
		{nil, "PATCH", "/air/teams/red", `{}`, 400, `PATCH /air/teams/<team> takes {"log_requests": true|false}`},
		{nil, "POST", "/air/teams/red/x", "", 404, "use GET /air/teams/<team>, PUT /air/teams/<team>/models|limits or PUT|DELETE /air/teams/<team>/members/<user>"},
		{nil, "GET", "/air/request-logs/req_1", "", 404, "no such request log"},
		{nil, "GET", "/air/records?order=up", "", 400, `bad order "up": want asc or desc`},
		{nil, "GET", "/air/audit?limit=0", "", 400, `bad limit "0": want 1 to 1000`},
		{nil, "GET", "/air/alerts?limit=1001", "", 400, `limit: want 1 to 1000, got "1001"`},
	} {
		f := &fakeServices{err: tc.err}
		s := &Services{Keys: f, Budgets: f, Teams: fakeTeams{tc.err}}
		a := API{Gateway: startedGateway{s: s}}
		var err error
		mux := http.NewServeMux()
		for _, rt := range a.Routes() {
			mux.HandleFunc(rt.Pattern, func(w http.ResponseWriter, r *http.Request) { err = rt.Handler(w, r) })
		}
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body)))
		var ae *Error
		switch {
		case tc.status/100 == 2 && (err != nil || w.Code != tc.status):
			t.Errorf("Test %d: %s %s: %d %v, want %d", i, tc.method, tc.path, w.Code, err, tc.status)
		case tc.status/100 != 2 && (!errors.As(err, &ae) || ae.Status != tc.status || ae.Error() != tc.msg):
			t.Errorf("Test %d: %s %s: %#v, want %d %q", i, tc.method, tc.path, err, tc.status, tc.msg)
		}
	}
}

// TestCreateKeyExpiresIn: expires_in is read with the API's
// ParseDuration, and the key created expires that long from now; the
// secret is in the answer, once.
func TestCreateKeyExpiresIn(t *testing.T) {
	f := &fakeServices{}
	days := func(s string) (time.Duration, error) {
		n, err := time.ParseDuration(strings.TrimSuffix(s, "d") + "h")
		return 24 * n, err
	}
	a := API{Gateway: startedGateway{s: &Services{Keys: f}}, ParseDuration: days}
	w := httptest.NewRecorder()
	r := httptest.NewRequest("POST", "/air/keys", strings.NewReader(`{"user":"al","expires_in":"30d"}`))
	if err := a.handleKeys(w, r); err != nil || w.Code != 201 {
		t.Fatalf("%d %v", w.Code, err)
	}
	if f.created.User != "al" || f.created.ExpiresAt == nil || time.Until(*f.created.ExpiresAt).Round(time.Hour) != 30*24*time.Hour {
		t.Errorf("created %+v", f.created)
	}
	var out struct{ ID, Key string }
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || out.ID != "k1" || out.Key != "sk-new" {
		t.Errorf("answer %s", w.Body)
	}
}
