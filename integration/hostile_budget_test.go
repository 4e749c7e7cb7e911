package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/billing"
)

// Hostile clients against spend limits (issue #31): each case asserts the
// statuses the client gets, the bill in the ledger, and the documented
// overspend bound.

// hostilePrices prices the reasoner at 1 in and 10 out per million tokens
// (a request reporting 1,000 in and 50,000 out costs 0.501), and a CNY
// model at 600 in and 2,400 out; rates, when set, convert CNY into USD.
func hostilePrices(rates string) string {
	return `{"currency":"USD",` + rates + `"models":{` +
		`"hostile-reasoner":{"tiers":[{"input":"1","output":"10"}]},` +
		`"hostile-qwen":{"currency":"CNY","tiers":[{"input":"600","output":"2400"}]}}}`
}

// cnyRate says 1 CNY = 0.14 USD.
const cnyRate = `"rates":{"CNY":"0.14"},`

// reasonerUpstream answers every chat with usage of 1,000 in and 50,000
// out (49,990 of it reasoning), far beyond any reservation of a request
// without max_tokens, after hold; it counts the requests it serves at
// once.
type reasonerUpstream struct {
	*upstream
	now, most atomic.Int64
}

func newReasonerUpstream(t *testing.T, hold time.Duration) *reasonerUpstream {
	ru := &reasonerUpstream{}
	ru.upstream = newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		n := ru.now.Add(1)
		defer ru.now.Add(-1)
		for m := ru.most.Load(); n > m && !ru.most.CompareAndSwap(m, n); m = ru.most.Load() {
		}
		time.Sleep(hold)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"hostile-reasoner","choices":[{"index":0,"message":{"role":"assistant","content":"42"},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":1000,"completion_tokens":50000,"total_tokens":51000,"completion_tokens_details":{"reasoning_tokens":49990}}}`)
	})
	return ru
}

// hostileOptions serves hostile-reasoner from up and hostile-qwen from
// the mock.
func hostileOptions(up *reasonerUpstream, prices string) gatewayOptions {
	return gatewayOptions{
		Providers: providerBlock("reasoner", "openai", "", up.upstream),
		Models:    "model hostile-reasoner reasoner\n\t\tmodel hostile-qwen mock",
		Prices:    prices,
	}
}

// burst sends n chat requests at once and returns their statuses and
// error codes ("" for 200).
func burst(t *testing.T, key, body string, n int) (ok int, codes map[string]int) {
	t.Helper()
	var mu sync.Mutex
	codes = map[string]int{}
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, _, raw := postChat(t, key, body)
			mu.Lock()
			defer mu.Unlock()
			switch status {
			case http.StatusOK:
				ok++
			case http.StatusTooManyRequests:
				codes[decodeError(t, raw).code()]++
			default:
				t.Errorf("status %d: %s", status, raw)
			}
		}()
	}
	wg.Wait()
	return ok, codes
}

// billOf sums the cost of user's ledger records, which must be n.
func billOf(t *testing.T, user string, n int) billing.Amount {
	t.Helper()
	recs := waitLedger(t, user, n)
	time.Sleep(200 * time.Millisecond) // any record beyond n would show now
	if recs = ledgerOf(t, user); len(recs) != n {
		t.Fatalf("%d records for %s, want %d", len(recs), user, n)
	}
	var sum billing.Amount
	for _, r := range recs {
		a, err := billing.ParseAmount(r.Cost)
		if err != nil {
			t.Fatal(err)
		}
		sum += a
	}
	return sum
}

// TestHostileParallelOvershoot: twelve parallel requests without
// max_tokens, each really costing 0.501, against a key with a 0.10
// limit. Before, each reserved 1,024 output tokens (0.0102), so ten
// were admitted and 5.01 spent. Now each reserves the model's output
// ceiling (16,384 tokens: 0.164), so the first fills the limit and the
// rest are refused: the spend stays within the documented bound,
// limit + one estimate + the in-flight requests' excess over their
// estimates.
func TestHostileParallelOvershoot(t *testing.T) {
	up := newReasonerUpstream(t, 300*time.Millisecond)
	startGateway(t, hostileOptions(up, hostilePrices(cnyRate)))
	key, keyID := createKey(t, "hostile-burst")
	if status := adminJSON(t, http.MethodPut, "/air/budgets/key/"+keyID, `{"total":"0.10"}`, nil); status != http.StatusOK {
		t.Fatalf("setting the limit: %d", status)
	}
	body := `{"model":"hostile-reasoner","messages":[{"role":"user","content":"think hard"}]}`
	ok, codes := burst(t, key, body, 12)
	if ok != 1 || codes["insufficient_quota"] != 11 {
		t.Errorf("12 parallel requests on a 0.10 limit: %d answered, refusals %v; want 1 and 11 insufficient_quota", ok, codes)
	}
	bill := billOf(t, "hostile-burst", ok)
	// The bound with one request in flight: 0.10 + 0.164 (its estimate:
	// 16,384 × 10 + 3 prompt tokens × 1 per million) + (0.501 − 0.164).
	bound := billing.Amount(100_000_000 + 501_000_000)
	if bill != billing.Amount(ok)*501_000_000 || bill > bound {
		t.Errorf("bill %s for %d requests, bound %s", bill, ok, bound)
	}
}

// TestHostileMaxParallel: with a limit far away, max_parallel_requests
// alone bounds what runs at once: 2 of 12 parallel requests reach the
// upstream, the others get 429 rate_limit_exceeded, and the places come
// back when the exchanges end.
func TestHostileMaxParallel(t *testing.T) {
	up := newReasonerUpstream(t, 500*time.Millisecond)
	startGateway(t, hostileOptions(up, hostilePrices(cnyRate)))
	key, keyID := createKey(t, "hostile-parallel")
	if status := adminJSON(t, http.MethodPut, "/air/budgets/key/"+keyID, `{"total":"100","max_parallel_requests":2}`, nil); status != http.StatusOK {
		t.Fatalf("setting the limit: %d", status)
	}
	body := `{"model":"hostile-reasoner","messages":[{"role":"user","content":"think hard"}]}`
	// Another tenant is served while the burst is refused.
	other, _ := createKey(t, "hostile-neighbour")
	neighbour := make(chan int, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		status, _, _ := postChat(t, other, body)
		neighbour <- status
	}()
	ok, codes := burst(t, key, body, 12)
	if status := <-neighbour; status != http.StatusOK {
		t.Errorf("another user's request during the burst: %d", status)
	}
	if ok != 2 || codes["rate_limit_exceeded"] != 10 || up.most.Load() > 3 {
		t.Errorf("12 parallel requests with max_parallel_requests 2: %d answered, refusals %v, %d at once upstream; want 2, 10 rate_limit_exceeded, at most 3 (2 and the neighbour's)",
			ok, codes, up.most.Load())
	}
	_, _, raw := postChat(t, key, body) // the places are back
	if bill := billOf(t, "hostile-parallel", 3); bill != 3*501_000_000 {
		t.Errorf("bill %s, want 3 × 0.501 (%s)", bill, raw)
	}
	// The limit is listed, and kept per key.
	var st billing.BudgetStatus
	adminJSON(t, http.MethodGet, "/air/budgets/key/"+keyID, "", &st)
	if st.Limits == nil || st.Limits.MaxParallel != 2 {
		t.Errorf("budget status %+v", st)
	}
}

// TestHostileForeignCurrency: a key with a 0.0001 USD limit used a model
// priced in CNY. Before, all 8 of 8 requests passed. With a rate, the CNY
// spend counts converted (one request's 0.054+ CNY is 0.0076+ USD): the
// first is admitted and the rest refused. Without one, the limit is
// refused when it is set, and a limit set before the price file lost its
// rate refuses the CNY requests (403) rather than let them through.
func TestHostileForeignCurrency(t *testing.T) {
	up := newReasonerUpstream(t, 0)
	g := startGateway(t, hostileOptions(up, hostilePrices(cnyRate)))
	key, keyID := createKey(t, "hostile-cny")
	if status := adminJSON(t, http.MethodPut, "/air/budgets/key/"+keyID, `{"total":"0.0001","currency":"USD"}`, nil); status != http.StatusOK {
		t.Fatalf("setting the limit: %d", status)
	}
	body := `{"model":"hostile-qwen","messages":[{"role":"user","content":"你好"}]}`
	var ok int
	for range 8 {
		status, _, raw := postChat(t, key, body)
		switch {
		case status == http.StatusOK:
			ok++
		case status != http.StatusTooManyRequests || decodeError(t, raw).code() != "insufficient_quota":
			t.Fatalf("status %d %s", status, raw)
		}
	}
	if ok != 1 {
		t.Errorf("%d of 8 CNY requests on a 0.0001 USD limit, want 1", ok)
	}
	recs := waitLedger(t, "hostile-cny", 1)
	if len(recs) != 1 || recs[0].Model != "hostile-qwen" || !recs[0].Priced {
		t.Errorf("records %+v", recs)
	}

	// The same price file without the rate: the limit cannot count CNY.
	g.reload(hostileOptions(up, hostilePrices("")))
	_, keyID2 := createKey(t, "hostile-cny-2")
	if status, msg := adminRefusal(t, http.MethodPut, "/air/budgets/key/"+keyID2, `{"total":"0.0001"}`); status != http.StatusBadRequest || !strings.Contains(msg, "priced in CNY") {
		t.Errorf("a USD limit without a CNY rate: %d %q", status, msg)
	}
	// The first key's limit, set under the rate, now refuses CNY requests.
	status, _, raw := postChat(t, key, body)
	if status != http.StatusForbidden || decodeError(t, raw).code() != "budget_currency_unconvertible" {
		t.Errorf("a CNY request on a USD limit without a rate: %d %s", status, raw)
	}
}

// adminRefusal calls the admin API with a request it must refuse and
// returns the status and the error message.
func adminRefusal(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+adminAddr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Error string `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e.Error
}

// TestHostileBudgetsThatLimitNothing (issue #35 item 3): limits in an
// unknown currency, in one without prices, or of an unknown key or user,
// would look set and limit nothing: the admin API and the CLI refuse them
// with 400 and a message saying why.
func TestHostileBudgetsThatLimitNothing(t *testing.T) {
	up := newReasonerUpstream(t, 0)
	startGateway(t, hostileOptions(up, hostilePrices(cnyRate)))
	_, keyID := createKey(t, "bob")
	for i, tc := range []struct {
		path, body, want string
	}{
		{"/air/budgets/user/bob", `{"monthly":"0.000001","currency":"EUR"}`, `"EUR" is not a currency of the price file`},
		{"/air/budgets/user/bob", `{"monthly":"1","currency":"XYZ"}`, `"XYZ" is not a currency`},
		{"/air/budgets/user/bob", `{"monthly":"1","currency":"usd"}`, `"usd" is not a currency`},
		{"/air/budgets/key/key_nonexistent", `{"total":"1"}`, `no key has the id "key_nonexistent"`},
		{"/air/budgets/user/nobody", `{"total":"1"}`, `no user "nobody"`},
	} {
		if status, msg := adminRefusal(t, http.MethodPut, tc.path, tc.body); status != http.StatusBadRequest || !strings.Contains(msg, tc.want) {
			t.Errorf("Test %d: PUT %s %s: %d %q, want 400 saying %q", i, tc.path, tc.body, status, msg, tc.want)
		}
	}
	// Nothing was set.
	var list []billing.BudgetEntry
	adminJSON(t, http.MethodGet, "/air/budgets/", "", &list)
	if len(list) != 0 {
		t.Errorf("budgets after refusals: %+v", list)
	}
	// The CLI shows the refusal and fails.
	out, err := exec.Command(caddyBin, "air", "budget", "set", "--user", "bob", "--monthly", "0.000001", "--currency", "EUR", "--address", adminAddr).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "EUR") {
		t.Errorf("CLI budget set in EUR: %v\n%s", err, out)
	}
	out, err = exec.Command(caddyBin, "air", "budget", "set", "--key", keyID, "--total", "1", "--currency", "CNY", "--max-parallel", "3", "--address", adminAddr).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "1.00 CNY total, 3 parallel") {
		t.Errorf("CLI budget set in CNY with --max-parallel: %v\n%s", err, out)
	}
}
