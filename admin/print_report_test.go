package admin

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/caddy-air/caddy-air/billing"
)

func TestPrintReportUnpriced(t *testing.T) {
	rep := &billing.Report{
		Rows: []billing.ReportRow{
			{Model: "gpt-4o", Currency: "USD", Priced: true, Totals: billing.Totals{Requests: 2, Cost: 1_500_000_000}},
			{Model: "mystery", Totals: billing.Totals{Requests: 3, Unpriced: 3}},
		},
		Totals: []billing.ReportTotal{
			{Totals: billing.Totals{Requests: 3, Unpriced: 3}},
			{Currency: "USD", Priced: true, Totals: billing.Totals{Requests: 2, Cost: 1_500_000_000}},
		},
	}
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	PrintReport(tw, billing.ByModel, rep)
	_ = tw.Flush()
	out := b.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "MODEL") {
		t.Fatalf("want a header, two rows and one total line:\n%s", out)
	}
	if !strings.Contains(lines[2], "mystery") || !strings.HasSuffix(strings.TrimSpace(lines[2]), "unpriced") || strings.Contains(lines[2], "0.000000000") {
		t.Errorf("unpriced row %q", lines[2])
	}
	if !strings.Contains(lines[3], "total") || !strings.Contains(lines[3], " 5 ") || !strings.Contains(lines[3], "1.500000000 USD + 3 unpriced") {
		t.Errorf("total line %q: want 5 requests and 1.500000000 USD + 3 unpriced", lines[3])
	}
}

// TestPrintReportUnpricedCharges checks that rows and totals whose records
// had charges without a price say so beside their cost.
func TestPrintReportUnpricedCharges(t *testing.T) {
	tot := billing.Totals{Requests: 4, UnpricedCharges: 2, Cost: 20_000_000, Usage: billing.Usage{WebSearches: 6}}
	rep := &billing.Report{
		Rows:   []billing.ReportRow{{Model: "gpt-4o", Currency: "USD", Priced: true, Totals: tot}},
		Totals: []billing.ReportTotal{{Currency: "USD", Priced: true, Totals: tot}},
	}
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	PrintReport(tw, billing.ByModel, rep)
	_ = tw.Flush()
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "0.020000000 USD (2 with unpriced charges)") ||
		!strings.Contains(lines[2], "0.020000000 USD (2 with unpriced charges)") {
		t.Errorf("want the row and the total to count the records with unpriced charges:\n%s", b.String())
	}
}

// TestPrintReportTotalSaturates checks that the total line, which adds
// the unpriced requests to the priced ones, stays at the largest int64
// instead of wrapping to a negative count.
func TestPrintReportTotalSaturates(t *testing.T) {
	const top = math.MaxInt64
	rep := &billing.Report{
		Rows: []billing.ReportRow{
			{Model: "gpt-4o", Currency: "USD", Priced: true, Totals: billing.Totals{Requests: top, Cost: top}},
			{Model: "mystery", Totals: billing.Totals{Requests: 3, Unpriced: 3, Usage: billing.Usage{Input: top}}},
		},
		Totals: []billing.ReportTotal{
			{Totals: billing.Totals{Requests: 3, Unpriced: 3, Usage: billing.Usage{Input: top}}},
			{Currency: "USD", Priced: true, Totals: billing.Totals{Requests: top, Cost: top, Usage: billing.Usage{Input: 1}}},
		},
	}
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	PrintReport(tw, billing.ByModel, rep)
	_ = tw.Flush()
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if total := lines[len(lines)-1]; strings.Count(total, " 9223372036854775807 ") != 2 || strings.Contains(total, "-") {
		t.Errorf("total line %q: want 9223372036854775807 requests and input tokens", total)
	}
}
