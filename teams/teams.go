// Package teams manages teams of users: their members and admins, the
// models they may use, and the membership that the gateway reads on every
// request (Service.Of, an atomic read of an in-memory snapshot). A team's
// spend and rate limits are a budget of scope "team" (package billing);
// a user belongs to one team at most.
package teams

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// Errors of the service; callers map them to 404, 409 and 400.
var (
	// ErrNotFound is an unknown team, or a user who is not its member.
	ErrNotFound = errors.New("no such team or member")
	// ErrExists is a taken team name, or a user of another team.
	ErrExists = errors.New("already exists")
	// ErrInvalid is a malformed name or model pattern.
	ErrInvalid = errors.New("invalid")
)

// Team is a team with its members.
type Team struct {
	// Name identifies the team: 1 to 64 letters, digits and "-_.".
	Name string `json:"name"`
	// Models, if not empty, are the model ids or globs (path.Match
	// syntax) the team's members may use; empty means every model.
	Models []string `json:"models,omitempty"`
	// CreatedAt is when the team was created.
	CreatedAt time.Time `json:"created_at"`
	// Members are the team's users, sorted by name.
	Members []Member `json:"members"`
	// LogRequests is set when the bodies of the members' requests are
	// kept (request logs); off by default.
	LogRequests bool `json:"log_requests,omitempty"`
}

// Member is a user of a team.
type Member struct {
	// User is the user's name.
	User string `json:"user"`
	// Admin lets the user manage the team's members and keys.
	Admin bool `json:"admin,omitempty"`
}

// Allows reports whether the team's members may use model: the team
// names no models, or one of them is model or a glob matching it.
func (t *Team) Allows(model string) bool {
	if t == nil || len(t.Models) == 0 {
		return true
	}
	for _, m := range t.Models {
		if m == model {
			return true
		}
		if ok, _ := path.Match(m, model); ok {
			return true
		}
	}
	return false
}

// IsAdmin reports whether user is an admin of the team.
func (t *Team) IsAdmin(user string) bool {
	for _, m := range t.Members {
		if m.User == user {
			return m.Admin
		}
	}
	return false
}

// Service keeps teams in the store and their membership in memory.
type Service struct {
	s    store.Teams
	mu   sync.Mutex // serializes changes with the reloads of snap
	snap atomic.Pointer[map[string]*Team]
}

// NewService loads the teams of s. With refresh > 0 it reloads them every
// refresh until ctx ends, so that changes made through other instances
// sharing the store apply within that time.
func NewService(ctx context.Context, s store.Teams, refresh time.Duration) (*Service, error) {
	svc := &Service{s: s}
	if err := svc.reload(ctx); err != nil {
		return nil, fmt.Errorf("loading teams: %w", err)
	}
	if refresh > 0 {
		go svc.refreshLoop(ctx, refresh)
	}
	return svc, nil
}

// refreshLoop reloads the teams every d until ctx ends; a failed reload
// keeps the last snapshot.
func (s *Service) refreshLoop(ctx context.Context, d time.Duration) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = s.reload(ctx)
		}
	}
}

// reload replaces the membership snapshot by the store's.
func (s *Service) reload(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reloadLocked(ctx)
}

func (s *Service) reloadLocked(ctx context.Context) error {
	list, err := s.s.List(ctx)
	if err != nil {
		return err
	}
	byUser := make(map[string]*Team, len(list))
	for i := range list {
		t := fromStore(&list[i])
		for _, m := range t.Members {
			byUser[m.User] = t
		}
	}
	s.snap.Store(&byUser)
	return nil
}

// Of returns the team of user, or nil. It reads memory only.
func (s *Service) Of(user string) *Team {
	if s == nil {
		return nil
	}
	if m := s.snap.Load(); m != nil {
		return (*m)[user]
	}
	return nil
}

// List returns every team, read from the store, sorted by name.
func (s *Service) List(ctx context.Context) ([]Team, error) {
	list, err := s.s.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Team, len(list))
	for i := range list {
		out[i] = *fromStore(&list[i])
	}
	return out, nil
}

// Get returns team name, read from the store.
func (s *Service) Get(ctx context.Context, name string) (Team, error) {
	t, err := s.s.Get(ctx, name)
	if err != nil {
		return Team{}, mapErr(err)
	}
	return *fromStore(&t), nil
}

// Create creates team name with no members.
func (s *Service) Create(ctx context.Context, name string, models []string, now time.Time) (Team, error) {
	if err := CheckName(name); err != nil {
		return Team{}, err
	}
	if err := checkModels(models); err != nil {
		return Team{}, err
	}
	t := store.Team{Name: name, Models: models, CreatedAt: now.UTC().Truncate(time.Microsecond)}
	if err := s.change(ctx, func() error { return s.s.Create(ctx, t) }); err != nil {
		return Team{}, err
	}
	return *fromStore(&t), nil
}

// SetModels replaces the models the team's members may use.
func (s *Service) SetModels(ctx context.Context, name string, models []string) error {
	if err := checkModels(models); err != nil {
		return err
	}
	return s.change(ctx, func() error { return s.s.SetModels(ctx, name, models) })
}

// SetLogRequests switches request logs of team name on or off.
func (s *Service) SetLogRequests(ctx context.Context, name string, on bool) error {
	return s.change(ctx, func() error { return s.s.SetLogRequests(ctx, name, on) })
}

// Add makes user a member (or admin, with admin) of team name.
func (s *Service) Add(ctx context.Context, name, user string, admin bool) error {
	if user == "" || strings.TrimSpace(user) != user {
		return fmt.Errorf("%w: a user name is not empty and has no spaces around it", ErrInvalid)
	}
	return s.change(ctx, func() error { return s.s.AddMember(ctx, name, user, admin) })
}

// Remove takes user out of team name.
func (s *Service) Remove(ctx context.Context, name, user string) error {
	return s.change(ctx, func() error { return s.s.RemoveMember(ctx, name, user) })
}

// change runs fn, which writes to the store, and reloads the snapshot so
// that the change applies to this instance's next request.
func (s *Service) change(ctx context.Context, fn func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := fn(); err != nil {
		return mapErr(err)
	}
	return s.reloadLocked(ctx)
}

// mapErr maps the store's errors to the service's.
func mapErr(err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return ErrNotFound
	case errors.Is(err, store.ErrExists):
		return ErrExists
	}
	return err
}

// CheckName checks a team name: 1 to 64 ASCII letters, digits and "-_.".
func CheckName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("%w: a team name has 1 to 64 characters", ErrInvalid)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("%w: team name %q: only letters, digits and - _ . are allowed", ErrInvalid, name)
		}
	}
	return nil
}

// checkModels checks that every model pattern is a valid glob.
func checkModels(models []string) error {
	for _, m := range models {
		if m == "" {
			return fmt.Errorf("%w: an empty model", ErrInvalid)
		}
		if _, err := path.Match(m, ""); err != nil {
			return fmt.Errorf("%w: model pattern %q: %v", ErrInvalid, m, err)
		}
	}
	return nil
}

// fromStore returns the team of a storage shape.
func fromStore(t *store.Team) *Team {
	out := &Team{Name: t.Name, Models: t.Models, CreatedAt: t.CreatedAt, Members: make([]Member, len(t.Members)), LogRequests: t.LogRequests}
	for i, m := range t.Members {
		out.Members[i] = Member(m)
	}
	return out
}
