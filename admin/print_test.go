package admin

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/billing"
)

func TestPrintPrices(t *testing.T) {
	pt, err := billing.ParsePrices("p.json", []byte(`{"currency": "USD", "models": {
		"chat-x": {"tiers": [{"up_to": 1000, "input": "1", "output": "2"}, {"input": "3", "output": "4"}], "service_tiers": {"priority": "2", "flex": "0.5"},
			"audio": {"input": "40", "output": "80"}, "tools": {"web_search": "0.01", "code_session": "0.03"}},
		"emb": {"embedding": "0.02"}, "img-*": {"image": "0.04"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := PrintPrices(&b, &PricesReport{Source: "p.json", Currency: "USD", Models: pt.Models()}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"p.json (default currency USD)", "1000: 1/2, rest: 3/4", "1.25/2/0.1", "flex x0.5, priority x2", "embedding 0.02", "0.04 per image",
		"audio in 40, audio out 80, code_session 0.03, web_search 0.01"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("caddy air prices lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	_ = PrintPrices(&b, &PricesReport{})
	if !strings.Contains(b.String(), "every model is unpriced") {
		t.Errorf("without a price file: %q", b.String())
	}
}

// TestPrintRecordsShowsStatusAndLatency: caddy air ledger's table shows
// each record's status and how long it took, "-" when not measured.
func TestPrintRecordsShowsStatusAndLatency(t *testing.T) {
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	page := &billing.RecordPage{Records: []billing.Record{
		{ID: "req_a", Time: at, User: "alice", KeyID: "key_1", Model: "m", Outcome: "ok", Status: 200, DurationMillis: 1834},
		{ID: "req_b", Time: at, User: "alice", KeyID: "key_1", Model: "m", Outcome: "upstream_error", Status: 502},
	}, HasMore: true, Next: "c1"}
	var out bytes.Buffer
	PrintRecords(&out, page)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "STATUS") || !strings.Contains(lines[0], "LATENCY") ||
		!strings.Contains(lines[1], " 200 ") || !strings.Contains(lines[1], " 1.834s ") ||
		!strings.Contains(lines[2], " 502 ") || !strings.Contains(lines[2], " - ") || lines[3] != "more: --after c1" {
		t.Errorf("printed:\n%s", out.String())
	}
}
