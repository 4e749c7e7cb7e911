package billing

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// failFirst makes g's next n Appends fail with err, and reports (on the
// channel it returns) each failure as it happens.
func failFirst(g *gatedLedger, n int, err error) <-chan struct{} {
	failed := make(chan struct{}, n)
	left := n
	g.mu.Lock()
	g.failIf = func([]store.Record) error {
		if left == 0 {
			return nil
		}
		left--
		failed <- struct{}{}
		return err
	}
	g.mu.Unlock()
	return failed
}

// records returns the ledger's records.
func records(t *testing.T, l *Ledger) []Record {
	t.Helper()
	var out []Record
	if err := l.Records(context.Background(), time.Time{}, time.Time{}, func(r Record) error {
		out = append(out, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// settleOn admits a request on an engine on l and settles rec durably,
// waiting at most wait, as the proxy does at an answer's end.
func settleOn(t *testing.T, l *Ledger, rec Record, wait time.Duration) (Record, error) {
	t.Helper()
	r, aerr := NewEngine(mustPrices(t, testPrices), l, nil).Admit(context.Background(),
		Subject{User: "alice", KeyID: "key_1"}, "claude-x", Usage{Input: 1000})
	if aerr != nil {
		t.Fatal(aerr)
	}
	return r.SettleDurable(context.Background(), rec, wait)
}

// TestSettleDurableWaitsForRetry checks that an answer whose record's
// first writes failed waits for the writer's retry, within its wait,
// instead of being told the failure at once (issue #30: during a 0.3 s
// restart of PostgreSQL, streams got ledger_unavailable within 0.1 s,
// though the README promises 10 s, and their records were billed as ok
// all the same). The record is written once, as settled.
func TestSettleDurableWaitsForRetry(t *testing.T) {
	l, g := newGatedLedger(t, false)
	l.SetCommitInterval(0)
	failed := failFirst(g, 1, errors.New("database restarting"))
	if _, err := settleOn(t, l, Record{ID: "r1", Outcome: OutcomeOK, Usage: Usage{Input: 1000, Output: 50}}, 10*time.Second); err != nil {
		t.Fatalf("an answer whose record's first write failed got %v, want it written by a retry within the wait", err)
	}
	if len(failed) != 1 || !g.isDurable("r1") {
		t.Fatalf("%d failed appends, r1 durable %v; want a failure, then r1 written", len(failed), g.isDurable("r1"))
	}
	if err := l.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	recs := records(t, l)
	if len(recs) != 1 || recs[0].Outcome != OutcomeOK || recs[0].Cost == 0 {
		t.Errorf("records %+v, want r1 once, ok and billed", recs)
	}
}

// TestSettleDurableWithheldNotBilled checks that an answer whose wait ends
// before the storage takes its record gets an error (its client gets
// ledger_unavailable instead of the answer's end) and that the record,
// written later, is not billed as answered: outcome withheld, cost zero,
// usage kept. Before, it was written as ok and billed, so a client that
// retried paid twice.
func TestSettleDurableWithheldNotBilled(t *testing.T) {
	l, g := newGatedLedger(t, false)
	l.SetCommitInterval(0)
	failFirst(g, 1000, errors.New("database down"))
	got, err := settleOn(t, l, Record{ID: "r1", Outcome: OutcomeOK, Usage: Usage{Input: 1000, Output: 50}}, 100*time.Millisecond)
	if err == nil {
		t.Fatal("an answer whose record the storage refuses was released")
	}
	if got.Outcome != OutcomeWithheld || got.Cost != 0 {
		t.Errorf("SettleDurable returned %+v with its error, want the withheld record that is written (logs and metrics use it)", got)
	}
	g.mu.Lock()
	g.failIf = nil
	g.mu.Unlock()
	for !g.isDurable("r1") { // written by a retry of the writer
		if err := l.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	recs := records(t, l)
	if len(recs) != 1 {
		t.Fatalf("%d records, want r1 once", len(recs))
	}
	if r := recs[0]; r.Outcome != OutcomeWithheld || r.Cost != 0 || r.Usage.Input != 1000 || r.Usage.Output != 50 ||
		r.Currency != "USD" {
		t.Errorf("withheld answer recorded as %+v, want outcome withheld, cost 0, usage and currency kept", r)
	}
	if !Unbilled(recs[0].Outcome) {
		t.Error("outcome withheld is billed")
	}
}
