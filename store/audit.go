package store

import (
	"context"
	"time"
)

// AuditEntry is one change an operator or a user made, as the audit
// trail keeps it. Before and After are JSON documents with secrets
// already removed (package audit redacts them); either is empty when the
// target did not exist before or no longer exists after.
type AuditEntry struct {
	// ID is unique; entries with the same Time sort by it.
	ID string `json:"id"`
	// Time is when the change was made, in UTC.
	Time time.Time `json:"time"`
	// Actor is who made it: a console user, "admin-api" or "cli".
	Actor string `json:"actor"`
	// Identity is what else is known of the actor: the admin API client
	// certificate's subject, or the operating-system user the CLI ran as.
	Identity string `json:"identity,omitempty"`
	// Via is where the change came from: "admin-api", "cli", "console" or
	// "config".
	Via string `json:"via"`
	// ClientIP is the address the change came from.
	ClientIP string `json:"client_ip,omitempty"`
	// Action names the change, e.g. "key.create" or "budget.set".
	Action string `json:"action"`
	// TargetType and TargetID name what changed, e.g. "key" and its id.
	TargetType string `json:"target_type"`
	TargetID   string `json:"target_id"`
	// Before and After are the target's values around the change.
	Before []byte `json:"before,omitempty"`
	After  []byte `json:"after,omitempty"`
}

// AuditQuery selects audit entries. Zero fields select everything.
type AuditQuery struct {
	// Since and Until bound Time: Since <= Time < Until.
	Since, Until time.Time
	// Actor, Action and TargetID select exact values.
	Actor, Action, TargetID string
	// Before is a cursor: only entries older than the entry with this
	// cursor are returned (Cursor of the last entry of a page).
	Before string
}

// Audit keeps the audit trail. It is append-only: there is no way to
// change or delete an entry through it. On a shared backend every
// instance sees every instance's entries.
type Audit interface {
	// Append stores e; an entry with e's ID already stored is ErrExists.
	Append(ctx context.Context, e AuditEntry) error
	// List calls fn with the entries q selects, newest first, and the
	// cursor of each (for AuditQuery.Before). fn may return ErrStop.
	List(ctx context.Context, q AuditQuery, fn func(e AuditEntry, cursor string) error) error
}
