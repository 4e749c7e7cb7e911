package caddymodule

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/audit"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/keys"
)

// The mutations of keys and limits that the admin API and the console
// share. Each makes its change and records it in the audit trail with one
// call (state.record); the actor comes from ctx (audit.WithActor), set by
// admin.API.Routes for the admin API (through admin_services.go) and by
// Console.ServeHTTP for the console.

// record adds e to the audit trail. The change is made by then, so a
// failure to record it does not undo it or fail the request: it is
// logged as an error, for the operator to see.
func (st *state) record(ctx context.Context, e audit.Entry) {
	if err := st.audit.Record(ctx, e); err != nil {
		a, _ := audit.ActorOf(ctx)
		st.log.Error("the audit trail did not record a change", zap.String("action", e.Action),
			zap.String("target", e.TargetID), zap.String("actor", a.Name), zap.Error(err))
	}
}

// keyByID returns key id of any user, nil if there is none.
func (st *state) keyByID(ctx context.Context, id string) *keys.Key {
	list, err := st.keys.List(ctx, "")
	if err != nil {
		return nil
	}
	for _, k := range list {
		if k.ID == id {
			return k
		}
	}
	return nil
}

// auditKey is a key as the trail records it: its fields (never its
// secret or hash) and its limits.
type auditKey struct {
	*keys.Key
	Limits *billing.Limits `json:"limits,omitempty"`
}

// keySnapshot returns k with its limits for the trail, nil for no key.
func (st *state) keySnapshot(k *keys.Key) any {
	if k == nil {
		return nil
	}
	c := *k
	c.LastUsedAt, c.State = nil, "" // not changes anyone made
	return auditKey{Key: &c, Limits: st.budgets.Status(billing.ScopeKey, k.ID).Limits}
}

// createKey creates a key and records it.
func (st *state) createKey(ctx context.Context, o keys.CreateOptions) (string, *keys.Key, error) {
	secret, k, err := st.keys.Create(ctx, o)
	if err != nil {
		return "", nil, err
	}
	st.record(ctx, audit.Entry{Action: "key.create", TargetType: "key", TargetID: k.ID, After: st.keySnapshot(k)})
	return secret, k, nil
}

// updateKey changes a key and records it.
func (st *state) updateKey(ctx context.Context, id string, c keys.Change) (*keys.Key, error) {
	before := st.keySnapshot(st.keyByID(ctx, id))
	k, err := st.keys.Update(ctx, id, c)
	if err != nil {
		return nil, err
	}
	st.record(ctx, audit.Entry{Action: "key.update", TargetType: "key", TargetID: id, Before: before, After: st.keySnapshot(k)})
	return k, nil
}

// revokeKey revokes any user's key (user "") or user's own, and records
// it.
func (st *state) revokeKey(ctx context.Context, user, id string) (*keys.Key, error) {
	before := st.keySnapshot(st.keyByID(ctx, id))
	var k *keys.Key
	var err error
	if user == "" {
		k, err = st.keys.Revoke(ctx, id)
	} else {
		k, err = st.keys.RevokeOwn(ctx, user, id)
	}
	if err != nil {
		return nil, err
	}
	st.record(ctx, audit.Entry{Action: "key.revoke", TargetType: "key", TargetID: id, Before: before, After: st.keySnapshot(k)})
	return k, nil
}

// setLimits sets the limits of a user or key and records it.
func (st *state) setLimits(ctx context.Context, scope billing.Scope, id string, lim billing.Limits) error {
	before := st.budgets.Status(scope, id).Limits
	if err := st.budgets.SetLimits(ctx, scope, id, lim); err != nil {
		return err
	}
	st.record(ctx, audit.Entry{Action: "budget.set", TargetType: string(scope), TargetID: id, Before: before, After: st.budgets.Status(scope, id).Limits})
	return nil
}

// deleteLimits lifts the limits of a user or key and records it.
func (st *state) deleteLimits(ctx context.Context, scope billing.Scope, id string) error {
	before := st.budgets.Status(scope, id).Limits
	if err := st.budgets.DeleteLimits(ctx, scope, id); err != nil {
		return err
	}
	st.record(ctx, audit.Entry{Action: "budget.delete", TargetType: string(scope), TargetID: id, Before: before})
	return nil
}

// regenerateKey gives key id a new secret (the old one working for
// grace) and records it; the secrets are not recorded.
func (st *state) regenerateKey(ctx context.Context, id string, grace time.Duration) (string, *keys.Key, error) {
	before := st.keySnapshot(st.keyByID(ctx, id))
	secret, k, err := st.keys.Regenerate(ctx, id, grace)
	if err != nil {
		return "", nil, err
	}
	st.record(ctx, audit.Entry{Action: "key.regenerate", TargetType: "key", TargetID: id, Before: before,
		After: map[string]any{"key_state": st.keySnapshot(k), "grace": grace.String()}})
	return secret, k, nil
}
