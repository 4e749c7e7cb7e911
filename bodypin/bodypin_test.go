package bodypin

import (
	"bytes"
	"io"
	"testing"
)

// counter is a Pinner that counts the holders.
type counter struct{ n int }

func (c *counter) Pin()   { c.n++ }
func (c *counter) Unpin() { c.n-- }

func TestReaderPinsUntilFirstClose(t *testing.T) {
	c := new(counter)
	r := NewSegmentsReader(c, [][]byte{[]byte("hello, "), nil, []byte("world")})
	r2 := NewReader(c, []byte("again"))
	if c.n != 2 {
		t.Fatalf("%d pins held by two readers, want 2", c.n)
	}
	got, err := io.ReadAll(r)
	if err != nil || string(got) != "hello, world" {
		t.Fatalf("read %q, %v; want the segments in order", got, err)
	}
	_ = r.Close()
	_ = r.Close()
	if c.n != 1 {
		t.Errorf("%d pins after one reader closed twice, want 1", c.n)
	}
	var w bytes.Buffer
	if n, err := r2.WriteTo(&w); err != nil || n != 5 || w.String() != "again" {
		t.Errorf("WriteTo = %d, %v, %q", n, err, w.String())
	}
	_ = r2.Close()
	if c.n != 0 {
		t.Errorf("%d pins after both closed, want 0", c.n)
	}
}

func TestReaderLeavesSegmentsAlone(t *testing.T) {
	segs := [][]byte{[]byte("ab"), []byte("cd")}
	for range 2 {
		r := NewSegmentsReader(nil, segs)
		if got, _ := io.ReadAll(r); string(got) != "abcd" {
			t.Fatalf("read %q, want abcd", got)
		}
		_ = r.Close()
	}
	if r := NewSegmentsReader(nil, nil); r.Close() != nil {
		t.Error("closing an empty reader failed")
	} else if n, err := r.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("an empty reader read %d, %v; want EOF", n, err)
	}
	if string(segs[0]) != "ab" || string(segs[1]) != "cd" {
		t.Errorf("reading consumed the caller's segments: %q", segs)
	}
}
