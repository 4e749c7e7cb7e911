package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/store"
)

const (
	// intentWait bounds how long Add waits for its intent's commit: a
	// database that takes longer refuses the request rather than let it
	// reach an upstream unrecorded.
	intentWait = 2 * time.Second
	// resolveInterval is how long resolved intents wait to be deleted when no
	// commit of new intents takes them along.
	resolveInterval = 20 * time.Millisecond
	// commitTimeout bounds one commit of the writer.
	commitTimeout = 5 * time.Second
	// IntentGather is the default least time between the starts of two commits
	// of new intents (group commit with a gather delay): under load the
	// intents added meanwhile share the next commit, so that commits
	// stay at most 1/IntentGather a second (50) whatever the rate,
	// instead of one per database round trip. An idle writer (its last
	// commit started IntentGather or longer ago) commits a new intent at
	// once, so the delay costs a request nothing on a quiet gateway and
	// at most IntentGather before its upstream call under load. 20 ms
	// keeps two instances at half the rate each within 1.3× bare Caddy's
	// CPU per request (5 ms: 1.4–1.5×; docs/perf/history.md, session 7).
	IntentGather = 20 * time.Millisecond
)

// Intents is the intents repository. Add returns once its intent is
// committed, so that a request never reaches an upstream with an intent
// that its instance's death could lose. The commits are grouped: one
// writer goroutine commits, in one statement on a connection of its own,
// every intent added since its previous commit started, and deletes the
// intents resolved meanwhile along with them. An idle writer commits at
// once, so a lone intent waits only for its own commit; under load a
// commit starts IntentGather after the previous one started (or when it
// ends, if it took longer), so the batches grow instead of the commits.
// Add fails after intentWait.
//
// The commit is asynchronous (synchronous_commit off for the writer's
// session): it returns once the database has the intent, without
// waiting for its WAL flush. So an intent survives any failure of the
// gateway (its process killed, its machine crashed), which is what it is
// for, and is lost only if the database server crashes before its WAL
// writer flushed it, at most 3 × wal_writer_delay (600 ms by default)
// later. A synchronous commit would add a WAL flush to every request's
// path before its upstream call (2 ms against 0.3 ms for a lone request
// on this project's virtual disks).
//
// Each intent belongs to its instance (see DB's instance lease).
// Interrupted takes over the intents of instances whose lease expired,
// drops those whose record is in the ledger, and returns the rest; the
// taker owns them until it resolves them, and if it dies first they are
// taken over again.
type Intents struct {
	db *DB

	mu      sync.Mutex
	next    *intentBatch // added, not yet taken by the writer
	resolve []string     // to delete
	closed  bool
	commits atomic.Int64 // statements that committed intents
	// gather is the least time between the starts of two commits of
	// new intents (Options.IntentGather, SetGather), in nanoseconds.
	gather atomic.Int64
	// conn is the writer's connection (see write); only the writer
	// goroutine uses it.
	conn *pgx.Conn
	// array and ids are the writer's buffers for a commit's records
	// and resolved ids, params its statement's parameters and instance
	// the first of them.
	array, ids, instance []byte
	params               [3][]byte
	kick                 chan struct{}
	// resolved tells the writer that resolve is no longer empty.
	resolved chan struct{}
	done     chan struct{}
	stop     context.CancelFunc
}

// intentBatch is the intents of one commit, in the order they were
// added, which Interrupted keeps.
type intentBatch struct {
	ids  []string
	recs [][]byte
	// committed is closed once err is set: nil when the batch is
	// committed.
	committed chan struct{}
	err       error
}

func newIntents(db *DB, gather time.Duration) *Intents {
	ctx, cancel := context.WithCancel(context.Background())
	in := &Intents{db: db, instance: []byte(db.instance), kick: make(chan struct{}, 1), resolved: make(chan struct{}, 1), done: make(chan struct{}), stop: cancel}
	in.gather.Store(int64(gather))
	go in.run(ctx)
	return in
}

// SetGather sets the least time between the starts of two commits of new
// intents from the next commit on (zero: each commit starts as soon as the
// previous one ended, so an intent waits for at most one commit in
// progress and its own). The gateway sets it from ledger_durability and
// intent_gather at every config load.
func (in *Intents) SetGather(d time.Duration) { in.gather.Store(int64(max(d, 0))) }

// Add implements store.Intents: it returns once the intent is committed,
// or with an error after intentWait.
func (in *Intents) Add(rec store.Record) error {
	b := appendIntent(make([]byte, 0, 512), &rec)
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		return errors.New("postgres: intents closed")
	}
	if in.next == nil {
		in.next = &intentBatch{committed: make(chan struct{})}
	}
	batch := in.next
	batch.ids, batch.recs = append(batch.ids, rec.ID), append(batch.recs, b)
	in.mu.Unlock()
	select {
	case in.kick <- struct{}{}:
	default:
	}
	t := time.NewTimer(intentWait)
	defer t.Stop()
	select {
	case <-batch.committed:
		return batch.err
	case <-t.C:
		return fmt.Errorf("postgres: an intent was not committed within %v", intentWait)
	}
}

// Resolve implements store.Intents: the intents are deleted with the
// next commit.
func (in *Intents) Resolve(ids []string) {
	in.mu.Lock()
	first := len(in.resolve) == 0
	in.resolve = append(in.resolve, ids...)
	in.mu.Unlock()
	if first {
		select {
		case in.resolved <- struct{}{}:
		default:
		}
	}
}

// Abandon implements store.Intents.
func (in *Intents) Abandon(id string) { in.Resolve([]string{id}) }

// Interrupted implements store.Intents. Each call takes over what
// instances that died since the last call left; the gateway calls it at
// start and then periodically, since an instance that died just before
// this one started still holds its lease for up to instanceLease.
func (in *Intents) Interrupted(ctx context.Context) ([]store.Record, error) {
	var out []store.Record
	err := retryTx(ctx, in.db, func(tx pgx.Tx) error {
		out = out[:0]
		rows, err := tx.Query(ctx, `WITH dead AS (
				DELETE FROM air_instances WHERE expires < now() RETURNING id),
			taken AS (
				UPDATE air_intents i SET instance = $1
				WHERE i.instance IN (SELECT id FROM dead)
					OR (i.instance <> $1 AND NOT EXISTS (SELECT 1 FROM air_instances a WHERE a.id = i.instance))
				RETURNING i.id, i.record, i.seq)
			SELECT t.id, t.record, EXISTS (SELECT 1 FROM air_ledger l WHERE l.id = t.id), t.record ? '`+journaledKey+`'
			FROM taken t ORDER BY t.seq`, in.db.instance)
		if err != nil {
			return err
		}
		var settled []string
		journaled := []byte{'['}
		for rows.Next() {
			var id string
			var raw []byte
			var inLedger, final bool
			if err := rows.Scan(&id, &raw, &inLedger, &final); err != nil {
				rows.Close()
				return err
			}
			if inLedger {
				settled = append(settled, id)
				continue
			}
			if final {
				// A finished record its instance journaled and did not
				// live to write to the ledger: written as it was.
				if len(journaled) > 1 {
					journaled = append(journaled, ',')
				}
				journaled = append(journaled, raw...)
				settled = append(settled, id)
				continue
			}
			var rec store.Record
			if err := json.Unmarshal(raw, &rec); err != nil {
				in.db.log.Error("skipping an undecodable ledger intent", zap.String("id", id), zap.Error(err))
				settled = append(settled, id)
				continue
			}
			out = append(out, rec)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(journaled) > 1 {
			var n int
			if err := tx.QueryRow(ctx, insertLedger, string(append(journaled, ']'))).Scan(&n); err != nil {
				return err
			}
		}
		if len(settled) > 0 {
			_, err = tx.Exec(ctx, `DELETE FROM air_intents WHERE id = ANY($1)`, settled)
		}
		return err
	})
	return out, err
}

// close commits what was added and stops the writer.
func (in *Intents) close() {
	in.stop()
	<-in.done
}

// Interface guard.
var _ store.Intents = (*Intents)(nil)
