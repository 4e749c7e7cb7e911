//go:build linux

package badger

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/internal/crashtest"
)

// intentsChildEnv holds the directory of TestIntentsKillChild, which runs
// only in a test binary that TestIntentsKill started.
const intentsChildEnv = "BADGER_INTENTS_CHILD"

// TestIntentsKill adds intents in a child process (the test binary run
// again), kills it with SIGKILL after a number of them and reopens the
// intent log: every intent whose Add returned before the kill is there.
// Each round goes on with the last one's log, across segment rotations.
func TestIntentsKill(t *testing.T) {
	dir := t.TempDir()
	total := 0
	for round, killAfter := range []int{20, 3000, 7000} {
		cmd := crashtest.Child(t, "TestIntentsKillChild", intentsChildEnv, dir)
		acked := crashtest.KillAfter(t, cmd, total, killAfter)

		il, err := openIntents(nil, dir, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, rec := range il.left {
			got = append(got, rec.ID)
		}
		if err := il.close(); err != nil {
			t.Fatal(err)
		}
		if len(got) < total+acked {
			t.Fatalf("round %d: %d intents after the kill, want at least the %d added", round, len(got), total+acked)
		}
		for i := range total + acked {
			if got[i] != intentID(i) {
				t.Fatalf("round %d: intent %d is %q, want %q", round, i, got[i], intentID(i))
			}
		}
		total = len(got)
	}
}

// intentID is the ID of TestIntentsKillChild's n-th intent.
func intentID(n int) string { return fmt.Sprintf("req-%07d", n) }

// TestIntentsKillChild is TestIntentsKill's child: it adds intents until
// it is killed, and writes the number of each to stdout once Add
// returned.
func TestIntentsKillChild(t *testing.T) {
	dir := os.Getenv(intentsChildEnv)
	if dir == "" {
		return // run by TestIntentsKill only
	}
	il, err := openIntents(nil, dir, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	for n := len(il.left); ; n++ {
		rec := intentRecord(n)
		rec.ID = intentID(n)
		if err := il.Add(rec); err != nil {
			t.Fatal(err)
		}
		if err := crashtest.Ack(os.Stdout, n); err != nil {
			t.Fatal(err)
		}
	}
}
