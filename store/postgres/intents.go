package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/store"
)

// intentFlushInterval is how long an intent may wait in memory before it
// is written; intentBatch how many wait before one is written at once.
const (
	intentFlushInterval = 20 * time.Millisecond
	intentBatch         = 512
)

// Intents is the intents repository. Add only queues the intent: a
// writer goroutine inserts queued intents every 20 ms in one transaction
// with synchronous_commit off (the database has them after its crash
// only as far as its WAL writer got, a fraction of a second, as an
// unsynced append has them after a machine crash), and deletes resolved
// ones likewise. An intent resolved before it was written is never
// written. So an intent is lost only when its instance dies within about
// 20 ms of Add; the request's upstream call has barely begun then.
//
// Each intent belongs to its instance (see DB's instance lease).
// Interrupted takes over the intents of instances whose lease expired,
// drops those whose record is in the ledger, and returns the rest; the
// taker owns them until it resolves them, and if it dies first they are
// taken over again.
type Intents struct {
	db *DB

	mu      sync.Mutex
	queued  map[string]queuedIntent // added, not yet written
	added   uint64                  // numbers the intents in the order of Add
	resolve []string                // to delete
	kick    chan struct{}
	done    chan struct{}
	stop    context.CancelFunc
}

func newIntents(db *DB) *Intents {
	ctx, cancel := context.WithCancel(context.Background())
	in := &Intents{db: db, queued: map[string]queuedIntent{}, kick: make(chan struct{}, 1), done: make(chan struct{}), stop: cancel}
	go in.run(ctx)
	return in
}

// Add implements store.Intents.
func (in *Intents) Add(rec store.Record) error {
	in.mu.Lock()
	in.added++
	in.queued[rec.ID] = queuedIntent{n: in.added, rec: rec}
	full := len(in.queued) >= intentBatch
	in.mu.Unlock()
	if full {
		select {
		case in.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// Resolve implements store.Intents.
func (in *Intents) Resolve(ids []string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, id := range ids {
		if _, ok := in.queued[id]; ok {
			delete(in.queued, id)
			continue
		}
		in.resolve = append(in.resolve, id)
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
			SELECT t.id, t.record, EXISTS (SELECT 1 FROM air_ledger l WHERE l.id = t.id) FROM taken t ORDER BY t.seq`, in.db.instance)
		if err != nil {
			return err
		}
		var settled []string
		for rows.Next() {
			var id string
			var raw []byte
			var inLedger bool
			if err := rows.Scan(&id, &raw, &inLedger); err != nil {
				rows.Close()
				return err
			}
			if inLedger {
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
		if len(settled) > 0 {
			_, err = tx.Exec(ctx, `DELETE FROM air_intents WHERE id = ANY($1)`, settled)
		}
		return err
	})
	return out, err
}

// run writes queued intents and deletes resolved ones until Close.
func (in *Intents) run(ctx context.Context) {
	defer close(in.done)
	t := time.NewTicker(intentFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			// The last round, bounded: a database that does not answer
			// must not hang the stop.
			last, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			in.flush(last)
			cancel()
			return
		case <-t.C:
		case <-in.kick:
		}
		in.flush(ctx)
	}
}

// flush writes what is queued. On a failure the batch is queued again
// (unless resolved meanwhile) for the next round.
func (in *Intents) flush(ctx context.Context) {
	in.mu.Lock()
	queued, resolve := in.queued, in.resolve
	if len(queued) == 0 && len(resolve) == 0 {
		in.mu.Unlock()
		return
	}
	in.queued, in.resolve = make(map[string]queuedIntent, len(queued)), nil
	in.mu.Unlock()

	// In the order they were added, which Interrupted keeps.
	batch := make([]queuedIntent, 0, len(queued))
	for _, q := range queued {
		batch = append(batch, q)
	}
	slices.SortFunc(batch, func(a, b queuedIntent) int { return cmp.Compare(a.n, b.n) })
	ids := make([]string, 0, len(batch))
	recs := make([][]byte, 0, len(batch))
	for _, q := range batch {
		b, err := json.Marshal(q.rec)
		if err != nil {
			continue
		}
		ids, recs = append(ids, q.rec.ID), append(recs, b)
	}
	err := pgx.BeginFunc(ctx, in.db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
			return err
		}
		if len(ids) > 0 {
			if _, err := tx.Exec(ctx, `INSERT INTO air_intents (id, instance, record)
				SELECT id, $1, rec FROM unnest($2::text[], $3::jsonb[]) WITH ORDINALITY AS x(id, rec, n) ORDER BY n
				ON CONFLICT (id) DO NOTHING`, in.db.instance, ids, recs); err != nil {
				return err
			}
		}
		if len(resolve) > 0 {
			if _, err := tx.Exec(ctx, `DELETE FROM air_intents WHERE id = ANY($1)`, resolve); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		return
	}
	in.db.log.Warn("writing ledger intents failed; retrying", zap.Int("intents", len(ids)), zap.Int("resolved", len(resolve)), zap.Error(err))
	in.mu.Lock()
	defer in.mu.Unlock()
	for id, q := range queued {
		if _, again := in.queued[id]; !again {
			in.queued[id] = q
		}
	}
	// Resolutions that arrived meanwhile may name intents of this batch:
	// drop those from the queue rather than write them.
	kept := in.resolve[:0]
	for _, id := range in.resolve {
		if _, ok := in.queued[id]; ok {
			delete(in.queued, id)
			continue
		}
		kept = append(kept, id)
	}
	in.resolve = append(kept, resolve...)
}

// queuedIntent is an intent waiting to be written.
type queuedIntent struct {
	n   uint64
	rec store.Record
}

// close writes what is queued and stops the writer.
func (in *Intents) close() {
	in.stop()
	<-in.done
}

// Interface guard.
var _ store.Intents = (*Intents)(nil)
