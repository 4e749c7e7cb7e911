package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/caddy-air/caddy-air/internal/pgtest"
)

// TestMultiInstance runs three gateway processes on one PostgreSQL
// database (issue #16) behind a fake provider that records the request id
// of every chat and messages attempt and counts the polls of every video,
// with when they came and from which instance. It checks what a user of
// several instances relies on:
//
//   - a key created through A works on B at once; a revocation through B
//     is refused by C within a second, although C had the key cached;
//   - under load spread over the three (chat JSON and SSE, messages SSE,
//     image tasks), with one instance killed with SIGKILL mid-run and
//     started again, every answer a client received completely has
//     exactly one ledger record, every request the provider saw has
//     exactly one in the end (those in flight at the kill as
//     "interrupted", once the dead instance's lease expired), and no
//     record is of a request the provider never saw;
//   - every video task is polled by one instance at a time (no two polls
//     of a video closer than the poll interval), not again once the
//     provider said it completed, and billed exactly once, including one
//     whose poll the provider held until its instance was killed, and
//     which another took over once the task lease (3 s here) ended;
//   - the usage report adds up to the records;
//   - twelve clients racing on the three instances to spend one user's
//     budget stay within its limit, the documented bound when requests
//     cost what they were estimated to (images).
func TestMultiInstance(t *testing.T) {
	t.Setenv("AIR_TEST_MULTI_PG_DSN", pgtest.DSN(t))
	vm := &videoMock{donePolls: multiVideoPolls}
	up := newMultiUpstream(t, vm)
	c := &multiCluster{t: t}
	for i := range c.procs {
		c.dirs[i] = t.TempDir()
		c.configs[i] = multiConfig(t, i, up, c.dirs[i])
	}
	for i := range c.procs {
		c.start(i)
	}

	var (
		revokedIn                         time.Duration
		lost, dups, unseen                int
		closePolls                        int
		answers, seenIDs, videosBilledOne int
		takenOver                         string
		spent                             int64
		refused                           int
	)
	reportFault(t, "3 instances on PostgreSQL: key A→B / revocation B→C", "at once / ≤ 1 s", func() string {
		return fmt.Sprintf("at once / %v", revokedIn.Round(time.Millisecond))
	})
	reportFault(t, "3 instances, one kill -9 mid-load: answers / requests seen upstream / records lost / duplicates / not seen upstream",
		"0 lost (intents are committed before the provider sees a request), 0 duplicates, 0 unseen", func() string {
			return fmt.Sprintf("%d / %d / %d / %d / %d", answers, seenIDs, lost, dups, unseen)
		})
	reportFault(t, "3 instances: videos billed once / polls closer than the interval / taken over from the killed instance",
		fmt.Sprintf("%d / 0 / yes", multiVideos), func() string {
			return fmt.Sprintf("%d / %d / %s", videosBilledOne, closePolls, takenOver)
		})

	reportFault(t, "3 instances: budget spend race (12 clients): spent / refused", "≤ "+multiBudgetLimit+" (the limit: estimates hold)", func() string {
		return fmt.Sprintf("%s / %d", nanosUSD(spent), refused)
	})
	revokedIn = checkSharedKeys(t, c)
	// The race's budget is set through A now: limits reach the other
	// instances within 5 s, and the race comes after the load.
	budgetKey := setBudget(t, multiInstances[0].admin)

	// The load's key is created through A and first used by B's clients.
	const user = "multi"
	key, _ := adminKey(t, multiInstances[0].admin, user)

	// Videos, created one after another (so the mock's n-th video is the
	// n-th task) on each instance in turn.
	var videos []string
	for k := range multiVideos {
		status, _, raw := callURL(t, http.MethodPost, c.procs[k%3].url("/v1/tasks"), key, fmt.Sprintf(`{"model":"mock-video","prompt":"wave %d","seconds":"4"}`, k))
		var task taskView
		if err := json.Unmarshal(raw, &task); status != http.StatusAccepted || err != nil || task.ID == "" {
			t.Fatalf("creating video %d on instance %d: %d %s", k, k%3, status, raw)
		}
		videos = append(videos, task.ID)
	}

	var load multiLoad
	ctx, cancel := context.WithTimeout(context.Background(), multiLoadFor)
	defer cancel()
	loaded, loadStart := make(chan struct{}), time.Now()
	go func() {
		defer close(loaded)
		load.run(ctx, c, key)
	}()

	// Kill the instance that polled a running video last while the
	// provider holds its next poll: the task is then claimed by a dead
	// instance, and another must take it over once the lease ends.
	time.Sleep(1500 * time.Millisecond)
	victim := -1
	for deadline := time.Now().Add(3 * time.Second); victim < 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		by, _ := vm.lastPoller()
		for i := range c.procs {
			if instanceName(i) == by {
				victim = i
			}
		}
	}
	var taken string
	if victim >= 0 {
		select {
		case taken = <-vm.holdNext(instanceName(victim)):
		case <-time.After(5 * time.Second):
		}
	}
	if taken == "" {
		cancel()
		<-loaded
		t.Fatalf("no instance polled a video within 3 s, or instance %d did not poll again within 5 s", victim)
	}
	killedAt := time.Now()
	c.procs[victim].sigkill()
	t.Logf("killed instance %d (pid %d) while it polled %s, %v into the load", victim, c.procs[victim].pid(), taken, killedAt.Sub(loadStart).Round(time.Millisecond))
	time.Sleep(time.Second)
	c.start(victim)
	select {
	case <-loaded:
		t.Errorf("the load ended before the killed instance was started again; the kill was not mid-load")
	default:
	}
	<-loaded
	t.Logf("load: %d sent, %d chat/messages answers and %d images received completely (per instance %v), %d failed (most at the killed instance)",
		min(load.sent.Load(), multiMaxRequests), len(load.answered), len(load.images), load.perInstance, load.failures)
	for i, n := range load.perInstance {
		if n < 10 {
			t.Errorf("instance %d answered %d requests completely: the load did not reach it", i, n)
		}
	}

	// Every video succeeds, seen from any instance.
	other := c.procs[(victim+1)%3]
	for _, id := range videos {
		eventually(t, multiVideoPolls*multiPollInterval+20*time.Second, "video "+id+" succeeds", func() bool {
			_, _, raw := callURL(t, http.MethodGet, other.url("/v1/tasks/"+id), key, "")
			var task taskView
			_ = json.Unmarshal(raw, &task)
			if task.Status == "failed" {
				t.Fatalf("video %s failed: %s", id, raw)
			}
			return task.Status == "succeeded"
		})
	}
	closePolls, takenOver = checkVideoPolls(t, vm, taken, instanceName(victim), killedAt)

	// The ledger, through A's admin API: what clients received at once,
	// what the provider saw once an instance took the dead one's intents
	// over (its row in air_instances is deleted then) and settled them.
	answers = len(load.answered)
	db, err := pgx.Connect(context.Background(), os.Getenv("AIR_TEST_MULTI_PG_DSN"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	var recs []ledgerRecord
	var counts, seen map[string]int
	var missing []string
	deadline := time.Now().Add(45 * time.Second)
	// In journaled mode an answer's end waits for its record's commit in
	// the journal (its intent row), not in the ledger: the records of the
	// answers the killed instance sent just before its death reach the
	// ledger when another instance takes its intents over. So every
	// answer received completely must have exactly one record once the
	// takeover settled, not at once.
	unrecorded := func() int {
		n := 0
		for _, ids := range [][]string{load.answered, load.images} {
			for _, id := range ids {
				if counts[id] == 0 {
					n++
				}
			}
		}
		return n
	}
	for {
		var instances, intents int
		if err := db.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM air_instances), (SELECT count(*) FROM air_intents)`).Scan(&instances, &intents); err != nil {
			t.Fatal(err)
		}
		recs = procLedger(t, user)
		counts = map[string]int{}
		for _, r := range recs {
			counts[r.ID]++
		}
		seen, _ = up.ids()
		missing = missing[:0]
		for id := range seen {
			if counts[id] > 0 {
				continue
			}
			missing = append(missing, id)
		}
		if instances == 3 && intents == 0 && len(missing) == 0 && unrecorded() == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("the dead instance's intents were settled %v after the kill", time.Since(killedAt).Round(100*time.Millisecond))
	lost += missingRecords(t, "answered", load.answered, counts)
	lost += missingRecords(t, "image", load.images, counts)
	seenIDs, lost = len(seen), lost+len(missing)
	if len(missing) > 0 {
		t.Errorf("%d requests the provider saw have no record %v after the kill, e.g. %s", len(missing), time.Since(killedAt).Round(time.Second), examples(missing))
		for _, id := range missing[:min(3, len(missing))] {
			var intent string
			err := db.QueryRow(context.Background(), `SELECT instance || ' (live: ' || EXISTS (SELECT 1 FROM air_instances a WHERE a.id = i.instance AND a.expires > now()) || ')' FROM air_intents i WHERE id = $1`, id).Scan(&intent)
			t.Logf("%s reached the provider %v after the kill; its intent: %q %v", id, up.seenAt(id).Sub(killedAt).Round(time.Millisecond), intent, err)
		}
	}
	var twice, notSeen []string
	for _, r := range recs {
		if counts[r.ID] > 1 {
			twice = append(twice, r.ID)
		}
		if _, ok := seen[r.ID]; !ok && (r.Model == "fake-gpt" || r.Model == "fake-claude") {
			notSeen = append(notSeen, r.ID)
		}
	}
	dups, unseen = len(twice), len(notSeen)
	if dups > 0 {
		t.Errorf("%d records share an id, e.g. %s", dups, examples(twice))
	}
	if unseen > 0 {
		t.Errorf("%d records are of requests the provider never saw, e.g. %s", unseen, examples(notSeen))
	}
	for _, id := range videos {
		if counts[id] == 1 {
			videosBilledOne++
		} else {
			t.Errorf("video %s has %d ledger records, want 1", id, counts[id])
		}
	}
	checkLedgerSums(t, user, "after the kill", recs)
	t.Logf("ledger: %d records; %d answers, %d images, %d request ids seen upstream, %d videos", len(recs), len(load.answered), len(load.images), len(seen), len(videos))
	spent, refused = budgetRace(t, c, db, budgetKey)
	for _, p := range c.procs {
		p.stop()
	}
}

// checkSharedKeys creates a key through instance A, uses it on B at once
// and then on C, revokes it through B, and returns how long C took to
// refuse it.
func checkSharedKeys(t *testing.T, c *multiCluster) time.Duration {
	t.Helper()
	key, id := adminKey(t, multiInstances[0].admin, "multi-keys")
	chat := `{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`
	for _, i := range []int{1, 2} {
		if status, body := postStatus(t, c.procs[i].url("/v1/chat/completions"), key, chat); status != http.StatusOK {
			t.Fatalf("a key created through A, used on instance %d at once: %d %s", i, status, body)
		}
	}
	req, err := http.NewRequest(http.MethodDelete, "http://"+multiInstances[1].admin+"/air/keys/"+id, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		t.Fatalf("revoking through B: %d", resp.StatusCode)
	}
	revoked := time.Now()
	for {
		status, _ := getStatus(t, c.procs[2].url("/v1/models"), key)
		if status == http.StatusUnauthorized {
			return time.Since(revoked)
		}
		if time.Since(revoked) > time.Second {
			t.Fatalf("C still accepts the key %v after B revoked it (status %d)", time.Since(revoked), status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// missingRecords reports the ids of ids without exactly one record in
// counts, and returns how many have none.
func missingRecords(t *testing.T, what string, ids []string, counts map[string]int) int {
	t.Helper()
	var none, wrong []string
	for _, id := range ids {
		switch counts[id] {
		case 1:
		case 0:
			none = append(none, id)
		default:
			wrong = append(wrong, fmt.Sprintf("%s (%d records)", id, counts[id]))
		}
	}
	if len(none) > 0 {
		t.Errorf("%d %s requests received completely have no ledger record, e.g. %s", len(none), what, examples(none))
	}
	if len(wrong) > 0 {
		t.Errorf("%d %s requests have more than one ledger record, e.g. %s", len(wrong), what, examples(wrong))
	}
	return len(none)
}

// checkVideoPolls checks the polls the video mock counted: each video
// polled until it completed and not after, no two polls of one video
// closer than the poll interval (less multiPollSlack), its content
// downloaded once, and the video taken, whose poll by victim was held
// until victim was killed at killedAt, polled again once the lease ended,
// by another or the restarted instance.
// It returns how many polls came too close and how the video taken was
// taken over.
func checkVideoPolls(t *testing.T, vm *videoMock, taken, victim string, killedAt time.Time) (tooClose int, takenOver string) {
	t.Helper()
	ids, polls, downloads := vm.snapshot()
	if len(ids) != multiVideos {
		t.Errorf("the provider has %d videos, want %d", len(ids), multiVideos)
	}
	pollers := map[string]int{}
	for _, id := range ids {
		ps := polls[id]
		if len(ps) != multiVideoPolls {
			t.Errorf("%s was polled %d times, want %d (until it completed, and not after)", id, len(ps), multiVideoPolls)
		}
		var by []string
		for k, p := range ps {
			pollers[p.by]++
			by = append(by, strings.TrimPrefix(p.by, "instance-"))
			if k == 0 {
				continue
			}
			if gap := p.at.Sub(ps[k-1].at); gap < multiPollInterval-multiPollSlack {
				tooClose++
				t.Errorf("%s: polls %d and %d came %v apart (by %s and %s), want at least %v", id, k, k+1, gap.Round(time.Millisecond), ps[k-1].by, p.by, multiPollInterval)
			}
		}
		if downloads[id] != 1 {
			t.Errorf("%s's content was downloaded %d times, want once", id, downloads[id])
		}
		t.Logf("%s: polled by %s", id, strings.Join(by, " "))
	}
	t.Logf("polls per instance: %v", pollers)
	ps := polls[taken]
	takenOver = "no"
	var before, after []videoPoll
	for _, p := range ps {
		if p.at.Before(killedAt) {
			before = append(before, p)
		} else {
			after = append(after, p)
		}
	}
	switch {
	case len(before) == 0 || before[len(before)-1].by != victim:
		t.Errorf("%s's last poll before the kill was not by the killed %s: %v", taken, victim, before)
	case len(after) == 0:
		t.Errorf("%s was not polled after its poller %s was killed", taken, victim)
	default:
		// The held poll's claim holds the task for the lease; then any
		// instance's next sweep (every quarter poll interval) takes it.
		wait := after[0].at.Sub(before[len(before)-1].at)
		takenOver = fmt.Sprintf("yes (%s, %v after the held poll)", after[0].by, wait.Round(time.Millisecond))
		if wait < multiLease-multiPollSlack || wait > multiLease+multiPollInterval+time.Second {
			t.Errorf("%s was polled again %v after the poll its killed poller never finished, want the lease %v (plus up to %v)", taken, wait, multiLease, multiPollInterval+time.Second)
		}
	}
	return tooClose, takenOver
}
