package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/caddy-air/caddy-air/internal/pgtest"
)

// multiTeam is the team of TestMultiTeamBudget; its two users have no
// limits of their own, so the team's total is the only one that binds.
const (
	multiTeam      = "race-team"
	multiTeamUserA = "race-user-a"
	multiTeamUserB = "race-user-b"
)

// TestMultiTeamBudget races the two users of one team on three instances
// sharing PostgreSQL: the team's total limit (1.00, mock-image at 0.04
// an image whose estimate is its cost, so the documented bound is the
// limit itself) holds across instances and users, every record of the
// race carries the team, the team's spend counter equals its records'
// cost, and the refusals name the team.
func TestMultiTeamBudget(t *testing.T) {
	dsn := pgtest.DSN(t)
	t.Setenv("AIR_TEST_MULTI_PG_DSN", dsn)
	up := newMultiUpstream(t, &videoMock{donePolls: multiVideoPolls})
	c := &multiCluster{t: t}
	for i := range c.procs {
		c.dirs[i] = t.TempDir()
		c.configs[i] = multiConfig(t, i, up, c.dirs[i])
	}
	for i := range c.procs {
		c.start(i)
	}
	keyA, _ := adminKey(t, multiInstances[0].admin, multiTeamUserA)
	keyB, _ := adminKey(t, multiInstances[1].admin, multiTeamUserB)
	// The team is made through A, its members added through B, its
	// limit set through C.
	adminAt(t, multiInstances[0].admin, http.MethodPost, "/air/teams", `{"name":"`+multiTeam+`"}`, http.StatusCreated)
	adminAt(t, multiInstances[1].admin, http.MethodPut, "/air/teams/"+multiTeam+"/members/"+multiTeamUserA, "", http.StatusOK)
	adminAt(t, multiInstances[1].admin, http.MethodPut, "/air/teams/"+multiTeam+"/members/"+multiTeamUserB, `{"admin":true}`, http.StatusOK)

	db, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	// Every instance learns of the membership within a few seconds: each
	// one's next request is recorded under the team. (These requests
	// count in the team's spend, and in the race's bound.)
	client := &http.Client{Timeout: 20 * time.Second}
	eventually(t, 15*time.Second, "every instance to bill the users' requests to the team", func() bool {
		for i := range c.procs {
			for _, key := range []string{keyA, keyB} {
				if status, body := raceImage(client, c.procs[i].url("/v1/tasks"), key); status != http.StatusAccepted {
					t.Fatalf("a warm-up request on instance %d: %d %s", i, status, body)
				}
			}
		}
		time.Sleep(400 * time.Millisecond) // a few rounds at most
		var untagged int
		if err := db.QueryRow(context.Background(), `SELECT count(*) FROM (SELECT team FROM air_ledger WHERE user_name IN ($1, $2) ORDER BY ts DESC LIMIT 6) r WHERE team <> $3`,
			multiTeamUserA, multiTeamUserB, multiTeam).Scan(&untagged); err != nil {
			t.Fatal(err)
		}
		return untagged == 0
	})
	// The limit, set through C, leaves the race multiBudgetLimit beyond
	// what the warm-up spent, once every warm-up record is counted.
	teamSpend := func() (records, spend, counter int64) {
		t.Helper()
		if err := db.QueryRow(context.Background(), `SELECT count(*), coalesce(sum(cost), 0),
			(SELECT coalesce(sum(amount), 0) FROM air_spend WHERE scope = 'team' AND subject = $1 AND period = 'total')
			FROM air_ledger WHERE team = $1`, multiTeam).Scan(&records, &spend, &counter); err != nil {
			t.Fatal(err)
		}
		return
	}
	var warmRecords, warmSpend int64
	eventually(t, 10*time.Second, "the warm-up's records to be counted in the team's spend", func() bool {
		n, spend, counter := teamSpend()
		ok := n == warmRecords && spend == counter && spend == warmSpend
		warmRecords, warmSpend = n, spend
		time.Sleep(200 * time.Millisecond)
		return ok
	})
	limit := warmSpend + multiBudgetNanos
	adminAt(t, multiInstances[2].admin, http.MethodPut, "/air/teams/"+multiTeam+"/limits", `{"total":"`+nanosUSD(limit)+`"}`, http.StatusOK)
	eventually(t, 15*time.Second, "every instance to know the team's limit", func() bool {
		for i := range c.procs {
			var st struct {
				Limits *struct {
					Total string `json:"total"`
				} `json:"limits"`
			}
			adminJSONAt(t, multiInstances[i].admin, "/air/budgets/team/"+multiTeam, &st)
			if st.Limits == nil || st.Limits.Total == "" {
				return false
			}
		}
		return true
	})

	var mu sync.Mutex
	var images, refused, other int
	var refusal string
	var wg sync.WaitGroup
	for i := range c.procs {
		for n := range multiRaceClients {
			key := []string{keyA, keyB}[n%2]
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
						refusal = body
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
	var records, spend, counter int64
	// Every image of the race is a record of the team, counted in its
	// spend.
	eventually(t, 10*time.Second, "the race's records to be counted under the team", func() bool {
		records, spend, counter = teamSpend()
		return spend == counter && records == warmRecords+int64(images)
	})
	race := spend - warmSpend
	t.Logf("team race: %d images, %d refused, %d other answers; the team spent %s of %s (%s in the warm-up)", images, refused, other, nanosUSD(spend), nanosUSD(limit), nanosUSD(warmSpend))
	if spend > limit {
		t.Errorf("two users on three instances spent %s of the team's %s: over the documented bound", nanosUSD(spend), nanosUSD(limit))
	}
	if race < multiBudgetNanos/2 || race != int64(images)*multiImageNanos {
		t.Errorf("the race spent %s for %d images (0.04 each), of the %s left: the budget refused early, or images went unbilled", nanosUSD(race), images, multiBudgetLimit)
	}
	if refused == 0 || other > 0 || !strings.Contains(refusal, "your team") {
		t.Errorf("%d refusals (the last %q) and %d other answers; want refusals naming the team, and nothing else", refused, refusal, other)
	}
}

// adminAt sends a request to the admin API at addr and fails the test
// unless it answers want.
func adminAt(t *testing.T, addr, method, path, body string, want int) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != want {
		t.Fatalf("%s %s on %s: %d, want %d", method, path, addr, resp.StatusCode, want)
	}
}

// adminJSONAt decodes the answer of GET path on the admin API at addr.
func adminJSONAt(t *testing.T, addr, path string, out any) {
	t.Helper()
	status, _, body := callURL(t, http.MethodGet, "http://"+addr+path, "", "")
	if status != http.StatusOK {
		t.Fatalf("GET %s on %s: %d %s", path, addr, status, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		t.Fatal(fmt.Errorf("GET %s: %w", path, err))
	}
}
