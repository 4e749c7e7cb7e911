package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The budget of the spend race of TestMultiInstance: mock-image costs
// 0.04 an image (prices.example.json) and its estimate is its cost, so
// the documented bound (the limit plus what requests in flight cost
// beyond their estimates) is the limit itself.
const (
	multiBudgetUser  = "multi-budget"
	multiBudgetLimit = "1.00"
	multiBudgetNanos = 1_000_000_000
	multiImageNanos  = 40_000_000
	// multiRaceClients is the racing clients per instance. A client
	// refused for insufficient quota tries again after multiRaceRetry,
	// and stops once refused for multiRaceGiveUp, or after multiRaceTries
	// requests.
	multiRaceClients = 4
	multiRaceTries   = 25
	multiRaceRetry   = 300 * time.Millisecond
	multiRaceGiveUp  = 2500 * time.Millisecond
)

// setBudget gives multiBudgetUser a total limit through the admin API at
// addr and returns a key of the user.
func setBudget(t *testing.T, addr string) string {
	t.Helper()
	// The user exists once it has a key: limits of unknown users are
	// refused.
	key, _ := adminKey(t, addr, multiBudgetUser)
	req, err := http.NewRequest(http.MethodPut, "http://"+addr+"/air/budgets/user/"+multiBudgetUser, strings.NewReader(`{"total":"`+multiBudgetLimit+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("setting the budget through %s: %d", addr, resp.StatusCode)
	}
	return key
}

// budgetRace has multiRaceClients clients on each instance create image
// tasks with key until the budget keeps refusing them, and checks that the
// user's spend in the ledger stays within the limit, that every image
// answered is billed, and that the budget was spent (so the race
// happened). It returns the spend and how many requests were refused.
func budgetRace(t *testing.T, c *multiCluster, db *pgx.Conn, key string) (spend int64, refused int) {
	t.Helper()
	client := &http.Client{Timeout: 20 * time.Second}
	var mu sync.Mutex
	var images, other int
	var wg sync.WaitGroup
	for i := range c.procs {
		for range multiRaceClients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var refusedSince time.Time
				for range multiRaceTries {
					status, body := raceImage(client, c.procs[i].url("/v1/tasks"), key)
					quota := status == http.StatusTooManyRequests && strings.Contains(body, "insufficient_quota")
					mu.Lock()
					switch {
					case status == http.StatusAccepted:
						images++
					case quota:
						refused++
					default:
						other++
					}
					mu.Unlock()
					switch {
					case status == http.StatusAccepted:
						refusedSince = time.Time{}
					case !quota:
						return
					case refusedSince.IsZero():
						refusedSince = time.Now()
						time.Sleep(multiRaceRetry)
					case time.Since(refusedSince) > multiRaceGiveUp:
						return
					default:
						time.Sleep(multiRaceRetry)
					}
				}
			}()
		}
	}
	wg.Wait()
	var records int
	if err := db.QueryRow(context.Background(), `SELECT count(*), coalesce(sum(cost), 0) FROM air_ledger WHERE user_name = $1`, multiBudgetUser).Scan(&records, &spend); err != nil {
		t.Fatal(err)
	}
	t.Logf("budget race: %d images, %d refused, %d other answers; %d records costing %s of %s", images, refused, other, records, nanosUSD(spend), multiBudgetLimit)
	if spend > multiBudgetNanos {
		t.Errorf("three instances spent %s of a budget of %s: over the documented bound (the limit, when estimates hold)", nanosUSD(spend), multiBudgetLimit)
	}
	if records != images || spend != int64(records)*multiImageNanos {
		t.Errorf("%d images answered, %d records costing %s; want one record of 0.04 each", images, records, nanosUSD(spend))
	}
	if refused == 0 || other > 0 {
		t.Errorf("the race got %d refusals for insufficient quota and %d other answers; want some of the first and none of the second", refused, other)
	}
	if spend < multiBudgetNanos/2 {
		t.Errorf("the race spent only %s of %s: the budget refused early", nanosUSD(spend), multiBudgetLimit)
	}
	return spend, refused
}

// raceImage creates a mock-image task and returns the status and body.
func raceImage(client *http.Client, url, key string) (int, string) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"model":"mock-image","prompt":"race"}`))
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// nanosUSD formats an amount in nanos of a dollar.
func nanosUSD(n int64) string { return fmt.Sprintf("%d.%09d", n/1e9, n%1e9) }
