package billing

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store/badger"
)

// TestTeamBudgetNests checks that a team's limits bind its members'
// requests together (key ⊂ user ⊂ team): two users, each well under their
// own limit, are refused once the team's total is reached, with an error
// naming the team; the tightest level is the one that refuses; a user of
// no team is not held back; the records carry the team and the tags; and
// the team's spend is reloaded from the store after a restart.
func TestTeamBudgetNests(t *testing.T) {
	ctx := context.Background()
	te := newTestEngine(t)
	b := te.Budgets()
	for _, l := range []struct {
		scope Scope
		id    string
		lim   Limits
	}{
		{ScopeTeam, "search", Limits{Total: claudeCost * 3}},
		{ScopeUser, "alice", Limits{Total: claudeCost * 10}},
		{ScopeUser, "bob", Limits{Total: claudeCost * 10}},
		{ScopeKey, "key_b", Limits{Total: claudeCost * 1}},
	} {
		if err := b.SetLimits(ctx, l.scope, l.id, l.lim); err != nil {
			t.Fatal(err)
		}
	}
	alice := Subject{User: "alice", KeyID: "key_a", Team: "search", Tags: []string{"proj:x"}}
	bob := Subject{User: "bob", KeyID: "key_b", Team: "search"}
	bob2 := Subject{User: "bob", KeyID: "key_b2", Team: "search"}
	run := func(s Subject) string {
		t.Helper()
		res, aerr := te.Admit(ctx, s, "claude-x", claudeUsage)
		if aerr != nil {
			return aerr.Message
		}
		res.Settle(Record{User: s.User, KeyID: s.KeyID, Model: "claude-x", Usage: claudeUsage})
		return ""
	}
	for i, step := range []struct {
		s    Subject
		want string // "" admitted, else a part of the refusal
	}{
		{alice, ""},
		{bob, ""},
		{bob, "this API key"}, // key_b's 1× is the tightest
		{bob2, ""},            // the team's third
		{alice, "your team"},  // alice is far from her own limit
		{bob2, "your team"},
		{Subject{User: "carol", KeyID: "key_c"}, ""}, // no team
	} {
		got := run(step.s)
		if step.want == "" && got != "" || step.want != "" && !strings.Contains(got, step.want) {
			t.Errorf("Test %d: %s/%s: %q, want %q", i, step.s.User, step.s.KeyID, got, step.want)
		}
	}
	te.flush(t)
	var teams, tags []string
	err := te.Ledger().Records(ctx, time.Time{}, time.Time{}, func(r Record) error {
		teams = append(teams, r.Team)
		tags = append(tags, strings.Join(r.Tags, "|"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"search", "search", "search", ""}; !reflect.DeepEqual(teams, want) {
		t.Errorf("records' teams %q, want %q", teams, want)
	}
	if want := []string{"proj:x", "", "", ""}; !reflect.DeepEqual(tags, want) {
		t.Errorf("records' tags %q, want %q", tags, want)
	}
	// A restart reads the team's spend back from the store.
	again, err := NewBudgets(ctx, badger.NewBudgets(te.s))
	if err != nil {
		t.Fatal(err)
	}
	again.Now = te.clock.Now
	st := again.Status(ScopeTeam, "search")
	if len(st.Spend) != 1 || st.Spend[0].Total != claudeCost*3 {
		t.Errorf("the team's spend after a restart: %+v, want %d", st.Spend, claudeCost*3)
	}
}

// TestReportByTeamAndTag checks the reports by team and by tag, and the
// team and tag filters: each request counts in the row of each of its
// tags, untagged ones in the row of tag "", the totals count every
// request once, and the CSV export carries the team and the tags.
func TestReportByTeamAndTag(t *testing.T) {
	ctx := context.Background()
	te := newTestEngine(t)
	settle := func(s Subject) {
		t.Helper()
		res, aerr := te.Admit(ctx, s, "claude-x", claudeUsage)
		if aerr != nil {
			t.Fatal(aerr)
		}
		res.Settle(Record{User: s.User, KeyID: s.KeyID, Model: "claude-x", Usage: claudeUsage})
	}
	settle(Subject{User: "alice", KeyID: "k1", Team: "search", Tags: []string{"proj:x", "env:prod"}})
	settle(Subject{User: "bob", KeyID: "k2", Team: "search", Tags: []string{"proj:x"}})
	settle(Subject{User: "carol", KeyID: "k3", Team: "ads"})
	settle(Subject{User: "dave", KeyID: "k4"})
	te.flush(t)
	type row struct {
		label string
		n     int64
		cost  Amount
	}
	rows := func(f ReportFilter) ([]row, Totals) {
		t.Helper()
		rep := report(t, te.Ledger(), f)
		var out []row
		for _, r := range rep.Rows {
			out = append(out, row{r.Team + r.Tag, r.Requests, r.Cost})
		}
		return out, totalIn(rep, "USD")
	}
	for i, tc := range []struct {
		f     ReportFilter
		want  []row
		total int64
	}{
		{ReportFilter{By: ByTeam}, []row{{"", 1, claudeCost}, {"ads", 1, claudeCost}, {"search", 2, 2 * claudeCost}}, 4},
		{ReportFilter{By: ByTag}, []row{{"", 2, 2 * claudeCost}, {"env:prod", 1, claudeCost}, {"proj:x", 2, 2 * claudeCost}}, 4},
		{ReportFilter{By: ByTag, Team: "search"}, []row{{"env:prod", 1, claudeCost}, {"proj:x", 2, 2 * claudeCost}}, 2},
		{ReportFilter{By: ByTeam, Tag: "env:prod"}, []row{{"search", 1, claudeCost}}, 1},
		{ReportFilter{By: ByDayTeam, Team: "ads"}, []row{{"ads", 1, claudeCost}}, 1},
		{ReportFilter{By: ByDayTag, Tag: "proj:x"}, []row{{"env:prod", 1, claudeCost}, {"proj:x", 2, 2 * claudeCost}}, 2},
	} {
		got, total := rows(tc.f)
		if !reflect.DeepEqual(got, tc.want) || total.Requests != tc.total {
			t.Errorf("Test %d: %+v: rows %+v, %d in total; want %+v, %d", i, tc.f, got, total.Requests, tc.want, tc.total)
		}
	}
	if _, err := ParseGroupBy("teams"); err == nil {
		t.Error("an unknown grouping was accepted")
	}
	var csv strings.Builder
	if err := te.Ledger().ExportCSV(ctx, RecordQuery{User: "alice"}, &csv); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(csv.String()), "\n"); len(lines) != 2 || !strings.HasSuffix(lines[1], ",search,proj:x;env:prod") {
		t.Errorf("csv:\n%s", csv.String())
	}
}

// TestTaskChargeKeepsTeam checks that a task's charge through its
// reservation records the team and tags it was admitted with, and counts
// in the team's spend.
func TestTaskChargeKeepsTeam(t *testing.T) {
	ctx := context.Background()
	te := newTestEngine(t)
	s := Subject{User: "alice", KeyID: "key_a", Team: "search", Tags: []string{"batch"}}
	res, aerr := te.AdmitTask(ctx, s, "gpt-image-1", 1, 0)
	if aerr != nil {
		t.Fatal(aerr)
	}
	rec, fresh, err := res.Charge(ctx, Record{ID: "task_1", User: "alice", KeyID: "key_a", Model: "gpt-image-1", Images: 1, Endpoint: EndpointTasks})
	if err != nil || !fresh {
		t.Fatalf("Charge: %v, fresh %v", err, fresh)
	}
	if rec.Team != "search" || !reflect.DeepEqual(rec.Tags, []string{"batch"}) {
		t.Errorf("charged record: team %q, tags %q; want search, [batch]", rec.Team, rec.Tags)
	}
	if st := te.Budgets().Status(ScopeTeam, "search"); len(st.Spend) != 1 || st.Spend[0].Total != rec.Cost || rec.Cost == 0 {
		t.Errorf("team spend %+v, want the task's %d", st.Spend, rec.Cost)
	}
}

// TestTeamBudgetRace races two users of one team on one instance: their
// requests, admitted concurrently, never spend the team's limit beyond
// the bound (the estimate of one request, when estimates hold), while
// each user's own limit is far away.
func TestTeamBudgetRace(t *testing.T) {
	ctx := context.Background()
	te := newTestEngine(t)
	const limit = claudeCost * 10
	if err := te.Budgets().SetLimits(ctx, ScopeTeam, "search", Limits{Total: limit}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var admitted atomic.Int64
	for g := range 8 {
		s := Subject{User: []string{"alice", "bob"}[g%2], KeyID: fmt.Sprintf("key_%d", g), Team: "search"}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				res, aerr := te.Admit(ctx, s, "claude-x", claudeUsage)
				if aerr != nil {
					continue
				}
				admitted.Add(1)
				res.Settle(Record{User: s.User, KeyID: s.KeyID, Model: "claude-x", Usage: claudeUsage})
			}
		}()
	}
	wg.Wait()
	st := te.Budgets().Status(ScopeTeam, "search")
	if len(st.Spend) != 1 || st.Spend[0].Total > limit+claudeCost || st.Spend[0].Total < limit || st.Spend[0].Reserved != 0 {
		t.Fatalf("the team spent %+v with %d requests admitted; want %d to %d, nothing reserved", st.Spend, admitted.Load(), limit, limit+claudeCost)
	}
	te.flush(t)
	var sum Amount
	if err := te.Ledger().Records(ctx, time.Time{}, time.Time{}, func(r Record) error { sum += r.Cost; return nil }); err != nil {
		t.Fatal(err)
	}
	if sum != st.Spend[0].Total {
		t.Errorf("the records cost %d, the team's spend is %d", sum, st.Spend[0].Total)
	}
}
