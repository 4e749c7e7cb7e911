package store

import (
	"context"
	"time"
)

// TaskRecord is a stored task. The store indexes the fields it needs
// (owner, creation, expiry, whether and when it is due for work); Data is
// the task itself, opaque to the store (tasks.Task as JSON). User and
// Created are set by Insert and returned by every read (on Badger, tasks
// stored by versions before 2026-11 read with them zero; the document
// holds them too).
type TaskRecord struct {
	// ID is the task's public id.
	ID string
	// User owns the task; ListByUser goes by it.
	User string
	// Created is when the task was created; lists are newest first by it.
	Created time.Time
	// Expires is when the task is dropped; Get and lists no longer return
	// it after.
	Expires time.Time
	// Working is set while a poller still has work on the task (polling
	// or billing); only working tasks are claimed.
	Working bool
	// Due is when the task next needs work. A claim moves it to the end of
	// the claim's lease: nobody else claims the task until then.
	Due time.Time
	// Data is the task document.
	Data []byte
}

// Tasks keeps image and video tasks and their leases.
//
// A lease is the time until which one poller owns a task: ClaimDue moves
// a due task's Due to the end of the lease in the same atomic step in
// which it selects it, so concurrent claims (from goroutines or instances)
// never return the same task twice within a lease. The owner advances the
// task with Update and sets Due to the next poll; if it dies, the lease
// ends and the next ClaimDue after it takes the task over.
type Tasks interface {
	// Insert stores a new task; a taken ID is ErrExists.
	Insert(ctx context.Context, t TaskRecord) error
	// Get returns task id, or ErrNotFound if there is none or it expired.
	Get(ctx context.Context, id string) (TaskRecord, error)
	// Update atomically reads task id, calls fn on it and, if fn reports a
	// change, writes back what fn left (ID and User cannot change). It
	// returns the task as fn left it and whether it changed. fn may run
	// more than once (on a conflict) and must have no other side effect.
	// A missing or expired task is ErrNotFound, without calling fn.
	Update(ctx context.Context, id string, fn func(t *TaskRecord) (bool, error)) (TaskRecord, bool, error)
	// ClaimDue claims up to max working tasks whose Due is at or before
	// now, setting their Due to now+lease, and returns them as claimed.
	// A task is returned by at most one ClaimDue until its lease ends.
	ClaimDue(ctx context.Context, now time.Time, lease time.Duration, max int) ([]TaskRecord, error)
	// ListByUser returns up to limit unexpired tasks of user that come
	// after the cursor, newest first; tasks created at the same instant
	// (as the store keeps it) follow one another in the byte order of
	// their IDs.
	ListByUser(ctx context.Context, user string, after TaskCursor, limit int) ([]TaskRecord, error)
}

// TaskCursor is where a list of a user's tasks resumes (Tasks.ListByUser).
// The zero cursor starts with the newest task.
type TaskCursor struct {
	// Created is the creation time of the last task listed, as given to
	// Insert (a store that keeps less precision rounds it the way it
	// rounded the task's).
	Created time.Time
	// ID is the last task listed: the list goes on with the tasks after it
	// in list order, those created at the same instant included. Empty:
	// with the tasks created before Created.
	ID string
}

// PendingResponse is a stored response the gateway still has work on
// (a background response to bill once it finishes), as ClaimDue returns
// it.
type PendingResponse struct {
	// ID is the response id.
	ID string
	// Value is what is stored under ID.
	Value []byte
	// Due is when the response next needs work: after a claim, the end of
	// the claim's lease.
	Due time.Time
}

// Responses maps response ids (of APIs with stored responses: OpenAI's
// Responses API) to what the gateway needs to find them again: the user,
// provider, deployment and model that created them.
//
// A mapping may also be pending: a background response that the gateway
// polls until it can bill it. Pending mappings are claimed with leases,
// as tasks are (see Tasks): ClaimDue moves a due mapping's Due to the end
// of the lease in the same atomic step in which it selects it, so
// concurrent claims (from goroutines or instances) never return the same
// id twice within a lease. Put ends the pending state.
type Responses interface {
	// Put stores value under id until ttl passes, replacing any; the id is
	// no longer pending.
	Put(ctx context.Context, id string, value []byte, ttl time.Duration) error
	// PutPending is Put that leaves id pending, due at due.
	PutPending(ctx context.Context, id string, value []byte, ttl time.Duration, due time.Time) error
	// Get returns the value under id, or ErrNotFound if none or expired.
	Get(ctx context.Context, id string) ([]byte, error)
	// ClaimDue claims up to max pending, unexpired ids whose Due is at or
	// before now, setting their Due to now+lease, and returns them as
	// claimed. An id is returned by at most one ClaimDue until its lease
	// ends.
	ClaimDue(ctx context.Context, now time.Time, lease time.Duration, max int) ([]PendingResponse, error)
	// Reschedule sets the Due of pending id and reports true; it reports
	// false, changing nothing, when id is missing, expired or no longer
	// pending.
	Reschedule(ctx context.Context, id string, due time.Time) (bool, error)
}
