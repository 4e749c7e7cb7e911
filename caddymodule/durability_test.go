package caddymodule

import (
	"context"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/billing"
	pgstorage "github.com/caddy-air/caddy-air/caddymodule/storage/postgres"
	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/reqbody"
	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/postgres"
)

// TestLedgerDurabilityConfig checks ledger_durability in the Caddyfile and
// in JSON: journaled by default, strict on request, anything else refused
// when validating (the Caddyfile parser checks only the argument count).
func TestLedgerDurabilityConfig(t *testing.T) {
	for i, tc := range []struct {
		input   string
		want    billing.Durability
		wantErr bool
	}{
		{"air {\n}", billing.DurabilityJournaled, false},
		{"air {\nledger_durability journaled\n}", billing.DurabilityJournaled, false},
		{"air {\nledger_durability strict\n}", billing.DurabilityStrict, false},
		{"air {\nledger_durability fsync\n}", 0, true},
		{"air {\nledger_durability\n}", 0, true},
		{"air {\nledger_durability strict journaled\n}", 0, true},
	} {
		a := new(App)
		err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
		if err == nil {
			a.MaxBufferedBodies, a.MaxRequestBody = reqbody.DefaultMaxBuffered, defaultMaxRequestBody
			err = a.Validate()
		}
		if (err != nil) != tc.wantErr {
			t.Errorf("Test %d: error %v, want one: %v", i, err, tc.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if got, _ := a.durability(); got != tc.want {
			t.Errorf("Test %d: durability %v, want %v", i, got, tc.want)
		}
	}
	a := &App{LedgerDurability: "Strict",
		MaxBufferedBodies: reqbody.DefaultMaxBuffered, MaxRequestBody: defaultMaxRequestBody}
	if err := a.Validate(); err == nil {
		t.Error(`JSON "ledger_durability": "Strict" passed validation`)
	}
}

// TestLedgerDurabilityApplied checks that a config's durability reaches
// the ledger of the state it starts on, and that a reload with another
// changes it on the same, shared state.
func TestLedgerDurabilityApplied(t *testing.T) {
	st, err := openState(openBadger(t, t.TempDir()), "", 0, 0, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Destruct()
	if got := st.Ledger.Durability(); got != billing.DurabilityJournaled {
		t.Fatalf("a new ledger on Badger is %v, want journaled", got)
	}
	(&App{LedgerDurability: durabilityStrict}).applyDurability(st)
	if got := st.Ledger.Durability(); got != billing.DurabilityStrict {
		t.Errorf("after a config with ledger_durability strict: %v", got)
	}
	(&App{}).applyDurability(st)
	if got := st.Ledger.Durability(); got != billing.DurabilityJournaled {
		t.Errorf("after a reload without ledger_durability: %v, want journaled", got)
	}
}

// gatherRecorder is an intent log that records the gather delay it is
// given, as postgres.Intents.SetGather.
type gatherRecorder struct {
	store.Intents
	gather time.Duration
}

func (g *gatherRecorder) SetGather(d time.Duration) { g.gather = d }

// TestIntentGatherFollowsDurability checks the gather delay of the
// PostgreSQL intent log: none in journaled mode (an intent never waits for
// a gather before its upstream call), postgres.IntentGather in strict
// mode, and intent_gather when the config sets it.
func TestIntentGatherFollowsDurability(t *testing.T) {
	ms := func(n int) *caddy.Duration { d := caddy.Duration(time.Duration(n) * time.Millisecond); return &d }
	for i, tc := range []struct {
		durability string
		gather     *caddy.Duration
		want       time.Duration
	}{
		{"", nil, 0},
		{durabilityJournaled, nil, 0},
		{durabilityStrict, nil, postgres.IntentGather},
		{durabilityJournaled, ms(5), 5 * time.Millisecond},
		{durabilityStrict, ms(0), 0},
	} {
		rec := &gatherRecorder{gather: -1}
		l := billing.NewLedger(nopLedger{}, rec, nil)
		st := &gateway.Shared{Repos: store.Repos{Intents: rec}, Ledger: l}
		(&App{LedgerDurability: tc.durability, storage: &pgstorage.Storage{IntentGather: tc.gather}}).applyDurability(st)
		_ = l.Close()
		if rec.gather != tc.want {
			t.Errorf("Test %d: gather %v, want %v", i, rec.gather, tc.want)
		}
	}
}

// nopLedger is a store.Ledger that takes every record and keeps none.
type nopLedger struct{ store.Ledger }

func (nopLedger) Append(context.Context, []store.Record) error { return nil }
func (nopLedger) Flush(context.Context) error                  { return nil }
func (nopLedger) Err() error                                   { return nil }
