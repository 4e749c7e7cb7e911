package caddymodule

import (
	"context"
	"errors"
	"io"

	"github.com/caddy-air/caddy-air/audit"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/console"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/refusals"
	"github.com/caddy-air/caddy-air/store"
)

// Refused implements console.UsageService: the user's entries of the
// refusals log.
func (consoleServices) Refused(user string, limit int) []refusals.Entry {
	if user == "" {
		return nil
	}
	return recentRefusals.List(refusals.Filter{User: user, Limit: limit})
}

// Refusals implements console.OperatorService: GET /air/refusals.
func (consoleServices) Refusals(f refusals.Filter) []refusals.Entry { return recentRefusals.List(f) }

// Budget implements console.KeyService: the user's own limits and spend,
// as GET /air/budgets/user/{id} reports them.
func (s consoleServices) Budget(_ context.Context, user string) (billing.BudgetStatus, error) {
	st, err := s.state()
	if err != nil {
		return billing.BudgetStatus{}, err
	}
	return st.Budgets.Status(billing.ScopeUser, user), nil
}

// AllKeys implements console.OperatorService: GET /air/keys.
func (s consoleServices) AllKeys(ctx context.Context) ([]console.Key, error) {
	st, err := s.state()
	if err != nil {
		return nil, err
	}
	list, err := st.Keys.List(ctx, "")
	if err != nil {
		return nil, err
	}
	out := make([]console.Key, len(list))
	for i, k := range list {
		out[i] = consoleKey(st, k)
	}
	return out, nil
}

// CreateKeyFor implements console.OperatorService: POST /air/keys.
func (s consoleServices) CreateKeyFor(ctx context.Context, user string, o console.NewKey) (string, console.Key, error) {
	return s.Create(ctx, user, o)
}

// UpdateKey implements console.OperatorService: PATCH /air/keys/{id}.
func (s consoleServices) UpdateKey(ctx context.Context, id string, e console.KeyEdit) (console.Key, error) {
	st, err := s.state()
	if err != nil {
		return console.Key{}, err
	}
	c := keys.Change{Name: &e.Name, Models: &e.Models, ExpiresAt: e.ExpiresAt, NoExpiry: e.ExpiresAt == nil}
	k, err := st.UpdateKey(ctx, id, c)
	if errors.Is(err, keys.ErrNoSuchKey) {
		return console.Key{}, console.ErrNotFound
	}
	if err != nil {
		return console.Key{}, console.Invalid(err)
	}
	return consoleKey(st, k), nil
}

// RevokeKey implements console.OperatorService: DELETE /air/keys/{id}.
func (s consoleServices) RevokeKey(ctx context.Context, id string) error {
	st, err := s.state()
	if err != nil {
		return err
	}
	_, err = st.RevokeKey(ctx, "", id)
	if errors.Is(err, keys.ErrNoSuchKey) {
		return console.ErrNotFound
	}
	return err
}

// Trail implements console.AuditService: GET /air/audit.
func (s consoleServices) Trail(ctx context.Context, q audit.Query) (*audit.Page, error) {
	st, err := s.state()
	if err != nil {
		return nil, err
	}
	if q.Before != "" {
		if _, _, err := store.ParseAuditCursor(q.Before); err != nil {
			return nil, console.Invalid(err)
		}
	}
	return st.Audit.List(ctx, q)
}

// ExportTrail implements console.AuditService: GET
// /air/audit?format=csv|jsonl.
func (s consoleServices) ExportTrail(ctx context.Context, q store.AuditQuery, format string, w io.Writer) error {
	st, err := s.state()
	if err != nil {
		return err
	}
	return st.Audit.Export(ctx, q, format, w)
}
