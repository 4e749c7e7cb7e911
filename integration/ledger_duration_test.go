package integration

import (
	"encoding/csv"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLedgerRecordsDuration: a record keeps how long its request took,
// from its arrival until the end of its answer, in the admin API's JSON
// and as the CSV's last column; a task's record keeps how long the task
// took.
func TestLedgerRecordsDuration(t *testing.T) {
	startGateway(t, gatewayOptions{})
	key, _ := createKey(t, "durations")
	start := time.Now()
	// Four chunks 100 ms apart: at least 300 ms between arrival and end.
	status, _, raw := postChat(t, key, `{"model":"mock-gpt","stream":true,"mock_chunks":4,"mock_chunk_delay_ms":100,"messages":[{"role":"user","content":"x"}]}`)
	elapsed := time.Since(start)
	if status != http.StatusOK {
		t.Fatalf("chat: %d %s", status, raw)
	}
	rec := waitLedger(t, "durations", 1)[0]
	if rec.DurationMillis < 300 || rec.DurationMillis > elapsed.Milliseconds()+1 {
		t.Fatalf("duration_ms %d, want at least 300 and at most the %d ms the client waited", rec.DurationMillis, elapsed.Milliseconds())
	}
	status, _, body := callURL(t, http.MethodGet, "http://"+adminAddr+"/air/records?user=durations&format=csv", "", "")
	rows, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
	if status != http.StatusOK || err != nil || len(rows) != 2 {
		t.Fatalf("csv: %d %v\n%s", status, err, body)
	}
	col := slices.Index(rows[0], "duration_ms")
	if col < 0 || rows[1][col] != strconv.FormatInt(rec.DurationMillis, 10) {
		t.Errorf("csv's duration_ms column (%d of %q) = %q, want %d", col, rows[0], rows[1][max(col, 0)], rec.DurationMillis)
	}

	tkey, _ := createKey(t, "durations-task")
	if status, task, raw := createTask(t, tkey, `{"model":"mock-image","prompt":"a fox","size":"256x256"}`); status != http.StatusAccepted || task.Status != "succeeded" {
		t.Fatalf("task: %d %s", status, raw)
	}
	if r := waitLedger(t, "durations-task", 1)[0]; r.DurationMillis < 1 {
		t.Errorf("the task's record has no duration: %+v", r)
	}
}

// TestRecordsNewestFirst: GET /air/records?order=desc pages a user's
// records newest first, its cursors going on toward older ones, and
// without a user searches every user's records, each user's newest first;
// an unknown order is a 400.
func TestRecordsNewestFirst(t *testing.T) {
	startGateway(t, gatewayOptions{})
	key, _ := createKey(t, "newest")
	for range 5 {
		if status, _, raw := postChat(t, key, `{"model":"mock-gpt","messages":[{"role":"user","content":"x"}]}`); status != http.StatusOK {
			t.Fatalf("chat: %d %s", status, raw)
		}
	}
	type page struct {
		Records []ledgerRecord `json:"records"`
		HasMore bool           `json:"has_more"`
		Next    string         `json:"next"`
	}
	read := func(query string) []string {
		var ids []string
		after := ""
		for pages := 0; pages < 10; pages++ {
			var p page
			if st := adminJSON(t, http.MethodGet, "/air/records?"+query+"&limit=2&after="+after, "", &p); st != http.StatusOK {
				t.Fatalf("records?%s: %d", query, st)
			}
			for _, r := range p.Records {
				ids = append(ids, r.ID)
			}
			if !p.HasMore {
				return ids
			}
			after = p.Next
		}
		t.Fatalf("records?%s does not end", query)
		return nil
	}
	asc := read("user=newest")
	if len(asc) != 5 {
		t.Fatalf("oldest first: %v, want 5 records", asc)
	}
	want := slices.Clone(asc)
	slices.Reverse(want)
	for _, q := range []string{"user=newest&order=desc", "model=mock-gpt&key=&order=desc"} {
		if got := read(q); !slices.Equal(got, want) {
			t.Errorf("records?%s = %v, want %v", q, got, want)
		}
	}
	if st := adminJSON(t, http.MethodGet, "/air/records?user=newest&order=newest", "", nil); st != http.StatusBadRequest {
		t.Errorf("an unknown order: %d, want 400", st)
	}
}
