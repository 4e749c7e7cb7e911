package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/store"
)

// damagedLedger is a ledger store whose journal has damaged regions.
type damagedLedger struct {
	store.Ledger
	damaged []store.Damage
}

func (d *damagedLedger) Append(context.Context, []store.Record) error { return nil }
func (d *damagedLedger) Flush(context.Context) error                  { return nil }
func (d *damagedLedger) Err() error                                   { return nil }
func (d *damagedLedger) Damaged() []store.Damage                      { return d.damaged }

// TestHealthReportsDamagedLedger checks that the health report's ledger
// section counts and names the damaged regions of the ledger's journal.
func TestHealthReportsDamagedLedger(t *testing.T) {
	for _, tc := range []struct {
		name    string
		damaged []store.Damage
		want    []string
	}{
		{name: "none", want: []string{`"unreadable_regions":0`}},
		{name: "one", damaged: []store.Damage{{File: "0000000000000002-x.seg", Offset: 17, Bytes: 17, Reason: "journal: corrupt entry"}},
			want: []string{`"unreadable_regions":1`, `"file":"0000000000000002-x.seg","offset":17,"bytes":17`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := billing.NewLedger(&damagedLedger{damaged: tc.damaged}, nil, nil)
			defer l.Close()
			b, err := json.Marshal(ledgerFrom(l.Stats()))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("ledger health %s does not say %s", b, w)
				}
			}
			if len(tc.damaged) == 0 && strings.Contains(string(b), "damaged") {
				t.Errorf("ledger health %s lists damage", b)
			}
		})
	}
}
