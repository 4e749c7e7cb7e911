package console

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/tasks"
)

func TestCreateKeyWithScopes(t *testing.T) {
	f := newFake()
	h := newTestConsole(t, f)
	form := withToken(h, "bob", url.Values{"name": {"ci"}, "models": {" gpt-4o, claude-* ,,"}, "limit": {"5.00"}})
	w := follow(t, h, "bob", do(h, "bob", "POST", "/console/keys", form, sameOrigin...))
	got := f.created[0]
	if strings.Join(got.Models, "|") != "gpt-4o|claude-*" || got.Limit != "5.00" {
		t.Errorf("created with models %q, limit %q", got.Models, got.Limit)
	}
	if !strings.Contains(w.Body.String(), "gpt-4o, claude-*") {
		t.Errorf("the key list does not show the key's models:\n%s", w.Body)
	}
	// A refusal of the key service is the user's to fix: 400, the form
	// kept, the reason shown.
	form = withToken(h, "bob", url.Values{"name": {"bad"}, "models": {"gpt-4o"}, "limit": {"-1"}})
	w = do(h, "bob", "POST", "/console/keys", form, sameOrigin...)
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "must be more than zero") || !strings.Contains(w.Body.String(), `value="-1"`) || len(f.keys) != 1 {
		t.Errorf("a refused limit: status %d, %d keys\n%s", w.Code, len(f.keys), w.Body)
	}
}

func TestUsageLedgerPagesByCursor(t *testing.T) {
	f := newFake()
	h := newTestConsole(t, f)
	w := do(h, "bob", "GET", "/console/usage?since=2026-01-01&until=2026-01-31&model=m", nil)
	body := w.Body.String()
	more := regexp.MustCompile(`id="ledger-next" href="([^"]+)"|href="([^"]+)" rel="next" id="ledger-next"`).FindStringSubmatch(body)
	if w.Code != http.StatusOK || more == nil || !strings.Contains(body, `data-request-id="req_of_bob"`) {
		t.Fatalf("first page: %d, want bob's record and a link to more:\n%s", w.Code, body)
	}
	next := strings.ReplaceAll(more[1]+more[2], "&amp;", "&")
	if !strings.Contains(next, "after=c1") || !strings.Contains(next, "model=m") {
		t.Errorf("the next page's link %q loses the cursor or the filter", next)
	}
	w = do(h, "bob", "GET", next, nil)
	body = w.Body.String()
	if w.Code != http.StatusOK || !strings.Contains(body, "req_of_bob_2") || strings.Contains(body, `"req_of_bob"`) || strings.Contains(body, "ledger-next") {
		t.Errorf("second page: %d, want only the second record and no more link:\n%s", w.Code, body)
	}
	q := f.queries[len(f.queries)-1]
	// Newest first, the first page's query and the next one's.
	if q.After != "c1" || q.User != "bob" || q.Model != "m" || q.Limit != ledgerPageSize || !q.Desc || !f.queries[0].Desc {
		t.Errorf("second page's query %+v (the first's %+v)", q, f.queries[0])
	}
	if !strings.Contains(body, `data-key-id="key-of-bob"`) {
		t.Errorf("the page has no usage-by-key row:\n%s", body)
	}
	if w := do(h, "bob", "GET", "/console/usage?after=forged", nil); w.Code != http.StatusBadRequest {
		t.Errorf("a bad cursor: status %d", w.Code)
	}
}

func TestTasksPageLinksMore(t *testing.T) {
	f := newFake()
	h := newTestConsole(t, f)
	for _, id := range []string{"t1", "t2", "t3"} {
		f.tasks = append(f.tasks, &tasks.Task{ID: id, User: "bob", Status: "succeeded", CreatedAt: time.Now()})
	}
	w := do(h, "bob", "GET", "/console/tasks", nil)
	if !strings.Contains(w.Body.String(), `href="/console/tasks?after=t2"`) || strings.Contains(w.Body.String(), "t3") {
		t.Fatalf("first tasks page, want t1, t2 and a link after t2:\n%s", w.Body)
	}
	w = do(h, "bob", "GET", "/console/tasks?after=t2", nil)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `data-task-id="t3"`) || strings.Contains(w.Body.String(), "tasks-more") {
		t.Errorf("second tasks page: %d\n%s", w.Code, w.Body)
	}
}

// TestRequestRowsShowStatusAndLatency checks that the user's ledger rows
// and the operators' ledger search show each request's status and how long
// it took, and a dash for a record whose duration was not measured.
func TestRequestRowsShowStatusAndLatency(t *testing.T) {
	f := newFake()
	h := newTestConsole(t, f)
	for _, tc := range []struct{ user, path, want string }{
		{"bob", "/console/usage", `<td class="status">200</td><td class="latency">1.83 s</td>`},
		{"bob", "/console/usage?after=c1", `<td class="status">200</td><td class="latency">—</td>`},
		{"alice", "/console/operators/ledger", `<td class="status">502</td><td class="latency">640 ms</td>`},
	} {
		w := do(h, tc.user, "GET", tc.path, nil)
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), tc.want) {
			t.Errorf("%s: %d, want a row with %s:\n%s", tc.path, w.Code, tc.want, w.Body)
		}
	}
}

func TestLatency(t *testing.T) {
	for ms, want := range map[int64]string{0: "—", -3: "—", 1: "1 ms", 999: "999 ms", 1000: "1.00 s", 1834: "1.83 s", 125_400: "125.40 s"} {
		if got := latency(ms); got != want {
			t.Errorf("latency(%d) = %q, want %q", ms, got, want)
		}
	}
}
