package badger

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/caddy-air/caddy-air/store"
)

// Key layout of the tasks repository, as the versions that kept tasks in
// the key-value store directly wrote it:
//
//	t/<id>                         the task document (TTL: until it expires)
//	tu/<user>/<inverted time><id>  empty; lists a user's tasks newest first
//	tr/<id>                        the task's Due (Unix nanoseconds, 8 bytes)
//	                               while it is Working; empty in entries of
//	                               earlier versions, which count as due
//	tm/<id>                        the task's Created (Unix nanoseconds, 8
//	                               bytes) and User (TTL: the task's); tasks
//	                               of earlier versions have none, and read
//	                               with a zero User and Created
const (
	taskPrefix = "t/"
	userPrefix = "tu/"
	runPrefix  = "tr/"
	metaPrefix = "tm/"
)

// The key prefixes of files and batches (NewDocs): "xf/", "xfu/", ...
const (
	filesSpace   = "xf"
	batchesSpace = "xb"
)

// maxListScan bounds the index entries one ListByUser reads.
const maxListScan = 1000

// Tasks is the tasks repository on a DB. Its leases hold between the
// goroutines of one process (Badger's conflict detection makes a claim a
// compare-and-set); one Badger store serves one instance.
type Tasks struct {
	db *DB
	ns taskSpace
}

// taskSpace is the key prefixes of one repository of task-shaped
// documents.
type taskSpace struct{ doc, user, run, meta string }

// tasksSpace is the tasks repository's.
var tasksSpace = taskSpace{taskPrefix, userPrefix, runPrefix, metaPrefix}

// NewTasks returns the tasks repository of db.
func NewTasks(db *DB) *Tasks { return &Tasks{db: db, ns: tasksSpace} }

// NewDocs returns a repository of task-shaped documents of db under its
// own key prefixes ns+"/", ns+"u/", ns+"r/" and ns+"m/" (files and
// batches keep theirs so). ns must be no other repository's prefix.
func NewDocs(db *DB, ns string) *Tasks {
	return &Tasks{db: db, ns: taskSpace{ns + "/", ns + "u/", ns + "r/", ns + "m/"}}
}

func (r *Tasks) taskKey(id string) []byte { return []byte(r.ns.doc + id) }
func (r *Tasks) runKey(id string) []byte  { return []byte(r.ns.run + id) }
func (r *Tasks) metaKey(id string) []byte { return []byte(r.ns.meta + id) }

// setMeta stores t's Created and User.
func (r *Tasks) setMeta(txn *badger.Txn, t *store.TaskRecord, ttl time.Duration) error {
	v := binary.BigEndian.AppendUint64(nil, uint64(t.Created.UnixNano()))
	return setEntry(txn, r.metaKey(t.ID), append(v, t.User...), ttl)
}

// userIndexPrefix is the prefix of a user's index keys; the user name is
// encoded so that no user's prefix is a prefix of another's.
func (r *Tasks) userIndexPrefix(user string) []byte {
	return []byte(r.ns.user + base64.RawURLEncoding.EncodeToString([]byte(user)) + "/")
}

// userKey orders a user's tasks newest first.
func (r *Tasks) userKey(user string, created time.Time, id string) []byte {
	k := r.userIndexPrefix(user)
	k = binary.BigEndian.AppendUint64(k, math.MaxUint64-uint64(created.UnixNano()))
	return append(k, id...)
}

// ttlUntil is the TTL of an entry that expires at t (never zero, which
// would mean no expiry).
func ttlUntil(t time.Time) time.Duration {
	return max(time.Until(t), time.Millisecond)
}

// update runs fn in a read-write transaction, retrying it on conflicts.
// Like every write, it is refused when the disk may not have room for it
// (room.go).
func (s *DB) update(ctx context.Context, fn func(txn *badger.Txn) error) error {
	if err := s.writable(); err != nil {
		return err
	}
	defer s.wrote()
	for i := 0; ; i++ {
		err := s.db.Update(fn)
		if !errors.Is(err, badger.ErrConflict) || i >= maxConflictRetries {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// Insert implements store.Tasks.
func (r *Tasks) Insert(ctx context.Context, t store.TaskRecord) error {
	return r.db.update(ctx, func(txn *badger.Txn) error {
		if _, err := txn.Get(r.taskKey(t.ID)); err == nil {
			return fmt.Errorf("task %s: %w", t.ID, store.ErrExists)
		}
		ttl := ttlUntil(t.Expires)
		if err := setEntry(txn, r.taskKey(t.ID), t.Data, ttl); err != nil {
			return err
		}
		if err := setEntry(txn, r.userKey(t.User, t.Created, t.ID), []byte{}, ttl); err != nil {
			return err
		}
		if err := r.setMeta(txn, &t, ttl); err != nil {
			return err
		}
		return r.setRun(txn, &t, ttl)
	})
}

// setRun keeps t's running-index entry in step with t.
func (r *Tasks) setRun(txn *badger.Txn, t *store.TaskRecord, ttl time.Duration) error {
	if !t.Working {
		return txn.Delete(r.runKey(t.ID))
	}
	return setEntry(txn, r.runKey(t.ID), binary.BigEndian.AppendUint64(nil, uint64(t.Due.UnixNano())), ttl)
}

// get reads task id in txn.
func (r *Tasks) get(txn *badger.Txn, id string) (store.TaskRecord, error) {
	item, err := txn.Get(r.taskKey(id))
	if err != nil {
		return store.TaskRecord{}, mapErr(err)
	}
	t := store.TaskRecord{ID: id, Expires: time.Unix(int64(item.ExpiresAt()), 0)}
	if t.Data, err = item.ValueCopy(nil); err != nil {
		return t, err
	}
	switch meta, err := txn.Get(r.metaKey(id)); {
	case err == nil:
		if err := meta.Value(func(v []byte) error {
			if len(v) >= 8 {
				t.Created = time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC()
				t.User = string(v[8:])
			}
			return nil
		}); err != nil {
			return t, err
		}
	case !errors.Is(err, badger.ErrKeyNotFound):
		return t, err
	}
	run, err := txn.Get(r.runKey(id))
	switch {
	case err == nil:
		t.Working = true
		err = run.Value(func(v []byte) error {
			if len(v) == 8 {
				t.Due = time.Unix(0, int64(binary.BigEndian.Uint64(v)))
			}
			return nil
		})
	case errors.Is(err, badger.ErrKeyNotFound):
		err = nil
	}
	return t, err
}

// Get implements store.Tasks.
func (r *Tasks) Get(_ context.Context, id string) (store.TaskRecord, error) {
	var t store.TaskRecord
	err := r.db.db.View(func(txn *badger.Txn) error {
		var err error
		t, err = r.get(txn, id)
		return err
	})
	return t, err
}

// Update implements store.Tasks.
func (r *Tasks) Update(ctx context.Context, id string, fn func(t *store.TaskRecord) (bool, error)) (store.TaskRecord, bool, error) {
	var out store.TaskRecord
	var changed bool
	err := r.db.update(ctx, func(txn *badger.Txn) error {
		changed = false
		t, err := r.get(txn, id)
		if errors.Is(err, store.ErrNotFound) {
			if err := txn.Delete(r.runKey(id)); err != nil {
				return err
			}
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		t.ID = id
		user := t.User
		if changed, err = fn(&t); err != nil || !changed {
			out = t
			return err
		}
		t.ID, t.User = id, user
		out = t
		ttl := ttlUntil(t.Expires)
		if err := setEntry(txn, r.taskKey(id), t.Data, ttl); err != nil {
			return err
		}
		if t.User != "" {
			// Not for a task of an earlier version, which has no User.
			if err := r.setMeta(txn, &t, ttl); err != nil {
				return err
			}
		}
		return r.setRun(txn, &t, ttl)
	})
	if errors.Is(err, store.ErrNotFound) {
		// The stale running-index entry was deleted; report the task gone.
		return store.TaskRecord{}, false, store.ErrNotFound
	}
	return out, changed, err
}

// ClaimDue implements store.Tasks: it reads the running index and claims
// each due task in a transaction of its own, which conflicts with any
// other claim or update of the task.
func (r *Tasks) ClaimDue(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.TaskRecord, error) {
	// Candidates beyond a few times limit are left for the next call: a
	// claim that loses a race only costs a candidate.
	candidates := max(4*limit, 64)
	var due []string
	err := r.db.Scan(ctx, []byte(r.ns.run), ScanOptions{}, func(k, v []byte) error {
		if len(v) == 8 && time.Unix(0, int64(binary.BigEndian.Uint64(v))).After(now) {
			return nil
		}
		due = append(due, string(k[len(r.ns.run):]))
		if len(due) >= candidates {
			return store.ErrStop
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []store.TaskRecord
	for _, id := range due {
		if len(out) >= limit {
			break
		}
		t, claimed, err := r.Update(ctx, id, func(t *store.TaskRecord) (bool, error) {
			if !t.Working || t.Due.After(now) {
				return false, nil
			}
			t.Due = now.Add(lease)
			return true, nil
		})
		switch {
		case errors.Is(err, store.ErrNotFound):
			continue
		case err != nil:
			return out, err
		case claimed:
			out = append(out, t)
		}
	}
	return out, nil
}

// ListByUser implements store.Tasks: the index orders a user's tasks
// newest first and, within a nanosecond, by id.
func (r *Tasks) ListByUser(ctx context.Context, user string, after store.TaskCursor, limit int) ([]store.TaskRecord, error) {
	prefix := r.userIndexPrefix(user)
	var start []byte
	switch {
	case after.Created.IsZero():
	case after.ID != "":
		// Right after the cursor's own index entry.
		start = append(r.userKey(user, after.Created, after.ID), 0)
	default:
		start = binary.BigEndian.AppendUint64(append([]byte{}, prefix...), math.MaxUint64-uint64(after.Created.UnixNano()-1))
	}
	var ids []string
	scanned := 0
	err := r.db.Scan(ctx, prefix, ScanOptions{KeysOnly: true, Start: start}, func(k, _ []byte) error {
		if len(k) < len(prefix)+8 {
			return nil
		}
		ids = append(ids, string(k[len(prefix)+8:]))
		if scanned++; scanned >= maxListScan {
			return store.ErrStop
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]store.TaskRecord, 0, min(limit, len(ids)))
	for _, id := range ids {
		if len(out) >= limit {
			break
		}
		t, err := r.Get(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		t.User = user
		out = append(out, t)
	}
	return out, nil
}

// Interface guard.
var _ store.Tasks = (*Tasks)(nil)
