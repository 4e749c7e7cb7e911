package chatproxy

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readEvents reads every event, returning them and whether each was whole.
func readEvents(t *testing.T, er *eventReader) (evs []string, whole []bool) {
	t.Helper()
	defer er.release()
	for {
		ev, w, err := er.next()
		if len(ev) > 0 {
			evs = append(evs, string(ev))
			whole = append(whole, w)
		}
		if err == io.EOF {
			return evs, whole
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestEventReader(t *testing.T) {
	stream := "data: {\"a\":1}\n\n" +
		"event: ping\r\ndata: {}\r\n\r\n" +
		": keep-alive comment\n\n" +
		"data: line1\ndata: line2\n\n" +
		"data: [DONE]\n\n" +
		"data: tail-without-terminator\n"
	want := []string{
		"data: {\"a\":1}\n\n",
		"event: ping\r\ndata: {}\r\n\r\n",
		": keep-alive comment\n\n",
		"data: line1\ndata: line2\n\n",
		"data: [DONE]\n\n",
		"data: tail-without-terminator\n",
	}
	for i, r := range []io.Reader{
		strings.NewReader(stream),
		iotest.OneByteReader(strings.NewReader(stream)),
		iotest.HalfReader(strings.NewReader(stream)),
	} {
		reads := 0
		evs, _ := readEvents(t, newEventReader(r, func() { reads++ }))
		if strings.Join(evs, "|") != strings.Join(want, "|") {
			t.Errorf("Test %d: got %q, want %q", i, evs, want)
		}
		if reads == 0 {
			t.Errorf("Test %d: onRead never called", i)
		}
	}
}

func TestEventReaderOversized(t *testing.T) {
	big := "data: " + strings.Repeat("x", 5000) + "\n\n"
	stream := "data: small\n\n" + big + "data: after\r\n\r\n"
	er := newEventReader(iotest.OneByteReader(strings.NewReader(stream)), nil)
	er.limit = 1000
	evs, whole := readEvents(t, er)
	if got := strings.Join(evs, ""); got != stream {
		t.Fatalf("bytes changed: %d bytes, want %d", len(got), len(stream))
	}
	if evs[0] != "data: small\n\n" || !whole[0] {
		t.Errorf("first event %q whole=%v", evs[0], whole[0])
	}
	last := len(evs) - 1
	if evs[last] != "data: after\r\n\r\n" || !whole[last] {
		t.Errorf("last event %q whole=%v", evs[last], whole[last])
	}
	if last < 3 {
		t.Errorf("big event forwarded in %d pieces, want several", last-1)
	}
	for i := 1; i < last; i++ {
		if whole[i] {
			t.Errorf("piece %d of the big event marked whole", i)
		}
		if len(evs[i]) > 2*er.limit+bufSize {
			t.Errorf("piece %d is %d bytes", i, len(evs[i]))
		}
	}
}

func TestEventReaderBuffersLargeEvent(t *testing.T) {
	// An event larger than the initial buffer but under the cap is whole.
	ev := "data: {\"x\":\"" + strings.Repeat("y", 3*bufSize) + "\"}\n\n"
	evs, whole := readEvents(t, newEventReader(bytes.NewReader([]byte(ev+ev)), nil))
	if len(evs) != 2 || evs[0] != ev || evs[1] != ev || !whole[0] || !whole[1] {
		t.Errorf("got %d events, whole=%v", len(evs), whole)
	}
}
