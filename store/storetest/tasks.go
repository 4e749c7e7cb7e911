package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// RunTasks checks store.Tasks: insert and get, ErrExists, atomic updates,
// claims of due working tasks only, exclusive within a lease and taken
// over after it, and lists by user, newest first.
func RunTasks(t *testing.T, b Backend) {
	runTaskRepo(t, b, func(r store.Repos) store.Tasks { return r.Tasks })
}

// RunDocs checks the repositories of files and batches as RunTasks checks
// tasks, and that the three keep their documents apart.
func RunDocs(t *testing.T, b Backend) {
	t.Run("Files", func(t *testing.T) { runTaskRepo(t, b, func(r store.Repos) store.Tasks { return r.Files }) })
	t.Run("Batches", func(t *testing.T) { runTaskRepo(t, b, func(r store.Repos) store.Tasks { return r.Batches }) })
	t.Run("Apart", func(t *testing.T) {
		ctx := context.Background()
		h := b.open(t)
		now := time.Now().Truncate(time.Millisecond)
		rec := store.TaskRecord{ID: "x1", User: "alice", Created: now, Expires: now.Add(time.Hour), Working: true, Due: now, Data: []byte(`{}`)}
		must(t, h.r.Files.Insert(ctx, rec))
		for name, r := range map[string]store.Tasks{"tasks": h.r.Tasks, "batches": h.r.Batches} {
			if _, err := r.Get(ctx, "x1"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s: Get of a file's id = %v, want ErrNotFound", name, err)
			}
			if got, err := r.ClaimDue(ctx, now, time.Minute, 10); err != nil || len(got) != 0 {
				t.Errorf("%s: ClaimDue = %v, %v; want none of the files'", name, taskIDs(got), err)
			}
			if got, err := r.ListByUser(ctx, "alice", store.TaskCursor{}, 10); err != nil || len(got) != 0 {
				t.Errorf("%s: ListByUser = %v, %v; want none of the files'", name, taskIDs(got), err)
			}
		}
	})
}

// runTaskRepo checks the store.Tasks that pick chooses of b's repositories.
func runTaskRepo(t *testing.T, b Backend, pick func(store.Repos) store.Tasks) {
	ctx := context.Background()
	h := b.open(t)
	r := pick(h.r)
	now := time.Now().Truncate(time.Millisecond)
	task := func(id, user string, created time.Time, working bool, due time.Time) store.TaskRecord {
		return store.TaskRecord{ID: id, User: user, Created: created, Expires: now.Add(time.Hour),
			Working: working, Due: due, Data: []byte(`{"id":"` + id + `"}`)}
	}
	tasks := []store.TaskRecord{
		task("t1", "alice", now.Add(-3*time.Minute), true, now.Add(-time.Second)), // due
		task("t2", "alice", now.Add(-2*time.Minute), true, now.Add(time.Minute)),  // not yet due
		task("t3", "bob", now.Add(-time.Minute), false, time.Time{}),              // done
		task("t4", "alice", now.Add(-time.Minute), true, now),                     // due now
	}
	for _, tk := range tasks {
		must(t, r.Insert(ctx, tk))
	}
	if err := r.Insert(ctx, task("t1", "eve", now, false, now)); !errors.Is(err, store.ErrExists) {
		t.Errorf("Insert of a taken id = %v, want ErrExists", err)
	}
	got, err := r.Get(ctx, "t2")
	if err != nil || string(got.Data) != `{"id":"t2"}` || !got.Working || !got.Due.Equal(tasks[1].Due) ||
		got.User != "alice" || !got.Created.Equal(tasks[1].Created) {
		t.Errorf("Get(t2) = %+v, %v", got, err)
	}
	if _, err := r.Get(ctx, "missing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(missing) = %v, want ErrNotFound", err)
	}

	claimed, err := r.ClaimDue(ctx, now, time.Minute, 10)
	must(t, err)
	if ids := taskIDs(claimed); !sameSet(ids, []string{"t1", "t4"}) {
		t.Errorf("ClaimDue = %v, want t1 and t4", ids)
	}
	for _, c := range claimed {
		if !c.Due.Equal(now.Add(time.Minute)) || string(c.Data) == "" {
			t.Errorf("claimed %s: Due %v, want the end of the lease %v", c.ID, c.Due, now.Add(time.Minute))
		}
		if c.User != "alice" || c.Created.IsZero() {
			t.Errorf("claimed %s: User %q, Created %v; want alice's and its creation", c.ID, c.User, c.Created)
		}
	}
	if again, _ := r.ClaimDue(ctx, now.Add(30*time.Second), time.Minute, 10); len(again) != 0 {
		t.Errorf("ClaimDue within the lease = %v, want none", taskIDs(again))
	}
	// The owner died: after the lease another claim takes the tasks over,
	// t2 (now due) with them.
	over, err := r.ClaimDue(ctx, now.Add(61*time.Second), time.Minute, 10)
	must(t, err)
	if ids := taskIDs(over); !sameSet(ids, []string{"t1", "t2", "t4"}) {
		t.Errorf("ClaimDue after the lease = %v, want t1, t2 and t4", ids)
	}
	if lim, _ := r.ClaimDue(ctx, now.Add(10*time.Minute), time.Minute, 2); len(lim) != 2 {
		t.Errorf("ClaimDue with max 2 claimed %d", len(lim))
	}

	// Update: fn sees the task; a change is written, no change is not.
	up, changed, err := r.Update(ctx, "t1", func(tk *store.TaskRecord) (bool, error) {
		tk.Working, tk.Data = false, []byte(`{"id":"t1","done":true}`)
		return true, nil
	})
	if err != nil || !changed || up.Working || string(up.Data) != `{"id":"t1","done":true}` ||
		up.User != "alice" || !up.Created.Equal(tasks[0].Created) {
		t.Errorf("Update = %+v, %v, %v", up, changed, err)
	}
	if got, _ := r.Get(ctx, "t1"); got.User != "alice" || !got.Created.Equal(tasks[0].Created) {
		t.Errorf("after Update, Get(t1) = %+v; want alice's task created at %v", got, tasks[0].Created)
	}
	if _, changed, err := r.Update(ctx, "t2", func(tk *store.TaskRecord) (bool, error) {
		tk.Data = []byte("lost")
		return false, nil
	}); err != nil || changed {
		t.Errorf("Update without change = %v, %v", changed, err)
	}
	if got, _ := r.Get(ctx, "t2"); string(got.Data) != `{"id":"t2"}` {
		t.Errorf("an unchanged Update wrote %s", got.Data)
	}
	boom := errors.New("boom")
	if _, _, err := r.Update(ctx, "t2", func(*store.TaskRecord) (bool, error) { return true, boom }); !errors.Is(err, boom) {
		t.Errorf("Update whose fn fails = %v", err)
	}
	if _, _, err := r.Update(ctx, "missing", func(*store.TaskRecord) (bool, error) { return true, nil }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Update(missing) = %v, want ErrNotFound", err)
	}
	// A task no longer working is never claimed.
	if c, _ := r.ClaimDue(ctx, now.Add(time.Hour-time.Second), time.Minute, 10); contains(taskIDs(c), "t1") {
		t.Error("a task that is not working was claimed")
	}

	for i, tc := range []struct {
		user   string
		before time.Time
		limit  int
		want   string
	}{
		{"alice", time.Time{}, 10, "[t4 t2 t1]"},
		{"alice", time.Time{}, 2, "[t4 t2]"},
		{"alice", now.Add(-time.Minute), 10, "[t2 t1]"},
		{"bob", time.Time{}, 10, "[t3]"},
		{"carol", time.Time{}, 10, "[]"},
	} {
		list, err := r.ListByUser(ctx, tc.user, store.TaskCursor{Created: tc.before}, tc.limit)
		must(t, err)
		if got := fmt.Sprint(taskIDs(list)); got != tc.want {
			t.Errorf("Test %d: ListByUser(%s, %v, %d) = %s, want %s", i, tc.user, tc.before, tc.limit, got, tc.want)
		}
	}
	t.Run("claims are exclusive", func(t *testing.T) { exclusiveClaims(t, r) })
	t.Run("pages of tasks created at the same instant", func(t *testing.T) { sameInstantPages(t, r) })
}

// sameInstantPages lists, a page of two at a time, tasks of which several
// were created at the same instant: every task is listed once, newest
// first, those of one instant in ID order.
func sameInstantPages(t *testing.T, r store.Tasks) {
	ctx := context.Background()
	now := time.Now()
	created := []time.Time{now, now, now, now.Add(-time.Second), now.Add(-time.Second), now.Add(-2 * time.Second)}
	for i, c := range created {
		must(t, r.Insert(ctx, store.TaskRecord{ID: fmt.Sprintf("same-%d", i), User: "pager", Created: c,
			Expires: now.Add(time.Hour), Data: []byte("{}")}))
	}
	var got []string
	var after store.TaskCursor
	for page := 0; page < 10; page++ {
		list, err := r.ListByUser(ctx, "pager", after, 2)
		must(t, err)
		if len(list) == 0 {
			break
		}
		got = append(got, taskIDs(list)...)
		last := list[len(list)-1].ID
		var i int
		fmt.Sscanf(last, "same-%d", &i)
		after = store.TaskCursor{Created: created[i], ID: last}
	}
	if want := "[same-0 same-1 same-2 same-3 same-4 same-5]"; fmt.Sprint(got) != want {
		t.Errorf("pages of 2 listed %v, want %s", got, want)
	}
}

// exclusiveClaims races claims of many due tasks and checks that each is
// claimed exactly once within a lease.
func exclusiveClaims(t *testing.T, r store.Tasks) {
	ctx := context.Background()
	now := time.Now()
	const n = 40
	for i := range n {
		must(t, r.Insert(ctx, store.TaskRecord{ID: fmt.Sprintf("race-%d", i), User: "racer", Created: now,
			Expires: now.Add(time.Hour), Working: true, Due: now.Add(-time.Second), Data: []byte("{}")}))
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				c, err := r.ClaimDue(ctx, now, time.Minute, 3)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, tk := range c {
					seen[tk.ID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for id, k := range seen {
		if k > 1 {
			t.Errorf("%s claimed %d times within one lease", id, k)
		}
	}
	if len(seen) != n {
		t.Errorf("%d of %d due tasks claimed by 8×5 claims of 3", len(seen), n)
	}
}

func taskIDs(ts []store.TaskRecord) []string {
	ids := []string{}
	for _, tk := range ts {
		ids = append(ids, tk.ID)
	}
	return ids
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range b {
		if !contains(a, x) {
			return false
		}
	}
	return true
}
