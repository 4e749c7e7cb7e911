// Package crashtest runs a test's child process that writes, and kills it
// with SIGKILL partway, as a crash of the gateway would, for tests that
// check what survives.
package crashtest

import (
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// Child returns the command that runs the test named name of the current
// test binary alone, with env set to val in its environment: the child
// reads what to do from it.
func Child(t testing.TB, name, env, val string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env+"="+val)
	cmd.Stderr = os.Stderr
	return cmd
}

// Ack is what a child writes to its stdout once write number n (counted
// from 0 over all rounds) has returned.
func Ack(w io.Writer, n int) error {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(n))
	_, err := w.Write(b[:])
	return err
}

// KillAfter starts cmd, reads its acknowledgements (Ack) until it has
// acknowledged n writes beyond the first done writes, kills it with
// SIGKILL, and waits for it. It returns how many writes beyond done were
// acknowledged when the kill was sent (at least n); writes acknowledged
// after that may or may not have survived.
func KillAfter(t testing.TB, cmd *exec.Cmd, done, n int) int {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked, buf := 0, make([]byte, 8)
	for acked < n {
		if _, err := io.ReadFull(out, buf); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("reading the child's acknowledgements: %v", err)
		}
		acked = int(binary.LittleEndian.Uint64(buf)) + 1 - done
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_, _ = io.Copy(io.Discard, out) // acknowledgements sent before the kill
	_ = cmd.Wait()
	return acked
}
