// Package audit is caddy-air's audit trail: every change an operator or a
// user makes (keys, budgets and limits, users, prices, providers) is
// recorded once, with who made it, when, from where, what it changed and
// its values before and after, secrets removed. The trail is append-only:
// this package can add entries and read them, nothing else.
//
// A mutation adds its entry with one call:
//
//	st.audit.Record(ctx, audit.Entry{Action: "key.revoke", TargetType: "key", TargetID: id, Before: old, After: k})
//
// The actor (who and from where) travels in ctx (WithActor), set once by
// the admin API or the console for each request.
package audit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// Ways a change reaches the gateway, for Actor.Via.
const (
	ViaAdminAPI = "admin-api"
	ViaCLI      = "cli"
	ViaConsole  = "console"
	ViaConfig   = "config"
)

// Actor is who made a change and from where.
type Actor struct {
	// Name is the console user, or "admin-api" or "cli" for the admin
	// API and its command-line client.
	Name string
	// Identity is what else is known of the actor: the admin API
	// client certificate's subject, or the operating-system user that the
	// CLI reported.
	Identity string
	// Via is one of the Via constants.
	Via string
	// ClientIP is the address the change came from.
	ClientIP string
}

type actorKey struct{}

// WithActor returns ctx carrying a, for Record.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorOf returns the actor ctx carries; ok is false when it carries none.
func ActorOf(ctx context.Context) (a Actor, ok bool) {
	a, ok = ctx.Value(actorKey{}).(Actor)
	return a, ok
}

// Entry is one change to record.
type Entry struct {
	// Action names the change: "<target type>.<verb>", e.g. "key.create",
	// "key.update", "key.revoke", "budget.set", "budget.delete",
	// "prices.reload", "providers.change", "team.create", "team.models",
	// "team.member.add", "team.member.remove", "team.admin.grant" (the
	// full list is in docs/config/audit.md).
	Action string
	// TargetType and TargetID name what changed.
	TargetType, TargetID string
	// Before and After are the target's values around the change (nil
	// when it did not exist before or does not after): any value that
	// encodes as JSON. Secrets are removed before they are stored
	// (Redact).
	Before, After any
}

// Log records and reads the audit trail in a store.
type Log struct {
	repo store.Audit
	// Now returns the current time; nil is time.Now.
	Now func() time.Time
}

// New returns the audit trail kept in repo.
func New(repo store.Audit) *Log { return &Log{repo: repo} }

// Record adds e to the trail, with the actor ctx carries (an actor named
// "unknown" when it carries none, so that a change is never left out for
// want of one). A nil Log records nothing.
func (l *Log) Record(ctx context.Context, e Entry) error {
	if l == nil {
		return nil
	}
	a, ok := ActorOf(ctx)
	if !ok {
		a = Actor{Name: "unknown", Via: "unknown"}
	}
	before, err := Redact(e.Before)
	if err != nil {
		return err
	}
	after, err := Redact(e.After)
	if err != nil {
		return err
	}
	now := time.Now
	if l.Now != nil {
		now = l.Now
	}
	return l.repo.Append(ctx, store.AuditEntry{
		ID: newID(), Time: now().UTC(),
		Actor: a.Name, Identity: a.Identity, Via: a.Via, ClientIP: a.ClientIP,
		Action: e.Action, TargetType: e.TargetType, TargetID: e.TargetID,
		Before: before, After: after,
	})
}

// newID returns a random id of 16 hex digits.
func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Latest returns the newest entry of action (nil when there is none).
func (l *Log) Latest(ctx context.Context, action string) (*store.AuditEntry, error) {
	var out *store.AuditEntry
	err := l.repo.List(ctx, store.AuditQuery{Action: action}, func(e store.AuditEntry, _ string) error {
		out = &e
		return store.ErrStop
	})
	return out, err
}

// RecordChange records e unless e.After is what the newest entry of
// e.Action recorded after it: for changes noticed rather than made, such
// as a reloaded config, which every instance notices. e.Before is
// replaced by that entry's After. It reports whether it recorded e.
func (l *Log) RecordChange(ctx context.Context, e Entry) (bool, error) {
	last, err := l.Latest(ctx, e.Action)
	if err != nil {
		return false, err
	}
	after, err := Redact(e.After)
	if err != nil {
		return false, err
	}
	e.Before = nil
	if last != nil {
		if SameJSON(last.After, after) {
			return false, nil
		}
		e.Before = json.RawMessage(last.After)
	}
	e.After = json.RawMessage(after)
	return true, l.Record(ctx, e)
}

// Query selects entries: store.AuditQuery and a page size.
type Query struct {
	store.AuditQuery
	// Limit is the page size; zero or less reads every entry.
	Limit int
}

// Page is a page of entries, newest first.
type Page struct {
	// Entries are the page's entries.
	Entries []store.AuditEntry `json:"entries"`
	// Next is the cursor of the next (older) page, for Query.Before; ""
	// on the last page.
	Next string `json:"next,omitempty"`
}

// List returns a page of the entries q selects, newest first.
func (l *Log) List(ctx context.Context, q Query) (*Page, error) {
	p := &Page{Entries: []store.AuditEntry{}}
	var last string
	err := l.repo.List(ctx, q.AuditQuery, func(e store.AuditEntry, cursor string) error {
		if q.Limit > 0 && len(p.Entries) == q.Limit {
			p.Next = last
			return store.ErrStop
		}
		p.Entries = append(p.Entries, e)
		last = cursor
		return nil
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Each calls fn with every entry q selects, newest first (q.Limit is
// ignored), for exports.
func (l *Log) Each(ctx context.Context, q store.AuditQuery, fn func(store.AuditEntry) error) error {
	return l.repo.List(ctx, q, func(e store.AuditEntry, _ string) error { return fn(e) })
}
