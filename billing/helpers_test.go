package billing

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store/badger"

	"github.com/caddy-air/caddy-air/internal/fakeclock"
)

// openStore opens a real Badger store in a temporary directory.
func openStore(t testing.TB) *badger.DB {
	t.Helper()
	db, err := badger.Open(badger.Options{Dir: t.TempDir(), GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// newLedger returns a ledger on a Badger ledger on s, with its journal in
// a new temporary directory, that is closed before s.
func newLedger(t testing.TB, s badger.KV, retention time.Duration) *Ledger {
	t.Helper()
	return newLedgerIn(t, s, t.TempDir(), retention)
}

// backends holds the Badger ledger under each test ledger.
var backends sync.Map // *Ledger → *badger.Ledger

// newLedgerIn returns a ledger on a Badger ledger on s with its journal in
// dir that is closed before s.
func newLedgerIn(t testing.TB, s badger.KV, dir string, retention time.Duration) *Ledger {
	t.Helper()
	bl, err := badger.OpenLedger(s, dir, retention, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := NewLedger(bl, bl.Intents(), nil)
	backends.Store(l, bl)
	t.Cleanup(func() { closeLedger(l) })
	return l
}

// closeLedger closes l and then its Badger ledger, as the gateway does
// when it stops.
func closeLedger(l *Ledger) error {
	err := l.Close()
	if bl, ok := backends.LoadAndDelete(l); ok {
		if berr := bl.(*badger.Ledger).Close(); err == nil {
			err = berr
		}
	}
	return err
}

// testEngine is an engine on a fresh store with the test prices and a fake
// clock.
type testEngine struct {
	*Engine
	s     *badger.DB
	clock *fakeclock.Clock
}

func newTestEngine(t testing.TB) *testEngine {
	t.Helper()
	s := openStore(t)
	b, err := NewBudgets(context.Background(), badger.NewBudgets(s))
	if err != nil {
		t.Fatal(err)
	}
	clock := fakeclock.New(time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC))
	b.Now = clock.Now
	return &testEngine{Engine: NewEngine(mustPrices(t, testPrices), newLedger(t, s, 0), b), s: s, clock: clock}
}

// flush waits for the engine's queued ledger writes.
func (te *testEngine) flush(t testing.TB) {
	t.Helper()
	if err := te.Ledger().Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// countRecords counts the ledger's records.
func countRecords(t testing.TB, l *Ledger) int {
	t.Helper()
	return len(recordIDs(t, l, time.Time{}, time.Time{}))
}

// recordIDs returns the IDs of the ledger's records with since <= Time <
// until, in the order Records gives them.
func recordIDs(t testing.TB, l *Ledger, since, until time.Time) []string {
	t.Helper()
	var ids []string
	err := l.Records(context.Background(), since, until, func(r Record) error {
		ids = append(ids, r.ID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// report runs a report and fails the test on error.
func report(t testing.TB, l *Ledger, f ReportFilter) *Report {
	t.Helper()
	r, err := l.Report(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// totalIn returns a report's totals in currency (zero Totals if none).
func totalIn(r *Report, currency string) Totals {
	for _, t := range r.Totals {
		if t.Currency == currency {
			return t.Totals
		}
	}
	return Totals{}
}
