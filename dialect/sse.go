package dialect

import "bytes"

// SSEReader splits a Server-Sent Events stream into its events. It is fed
// the stream's bytes as they arrive; Next returns each complete event's
// name (the event: field, empty when absent) and data (its data: field;
// several data lines are joined with newlines). Both alias the reader's
// buffer and are valid until the next call of Feed or Next.
type SSEReader struct {
	buf  []byte
	off  int
	data []byte // joined data lines, for an event that has several
	// partial is set once a stream's bytes ended inside an event.
}

// Feed appends p to the stream.
func (s *SSEReader) Feed(p []byte) {
	if s.off > 0 && s.off == len(s.buf) {
		s.buf, s.off = s.buf[:0], 0
	}
	s.buf = append(s.buf, p...)
}

// Pending reports whether bytes of an incomplete event remain (other than
// blank lines).
func (s *SSEReader) Pending() bool {
	return len(bytes.TrimSpace(s.buf[s.off:])) > 0
}

// Next returns the next complete event, or ok false when the bytes fed so
// far hold none. Comments and events without data are skipped.
func (s *SSEReader) Next() (name, data []byte, ok bool) {
	if s.off > 0 {
		// Move the unread bytes to the front: what was returned before
		// is no longer valid.
		n := copy(s.buf, s.buf[s.off:])
		s.buf, s.off = s.buf[:n], 0
	}
	for {
		rest := s.buf[s.off:]
		end, next := eventEnd(rest)
		if end < 0 {
			return nil, nil, false
		}
		ev := rest[:end]
		s.off += next
		name, data, ok = s.fields(ev)
		if ok {
			return name, data, true
		}
	}
}

// eventEnd finds the blank line that ends the first event of b: the end
// of the event's lines and the start of what follows, or -1.
func eventEnd(b []byte) (end, next int) {
	for i := 0; i < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		j := i + 1
		if j < len(b) && b[j] == '\r' {
			j++
		}
		if j < len(b) && b[j] == '\n' {
			return i, j + 1
		}
	}
	return -1, 0
}

// fields reads an event's lines.
func (s *SSEReader) fields(ev []byte) (name, data []byte, ok bool) {
	lines := 0
	for len(ev) > 0 {
		line := ev
		if i := bytes.IndexByte(ev, '\n'); i >= 0 {
			line, ev = ev[:i], ev[i+1:]
		} else {
			ev = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		field, value, _ := bytes.Cut(line, []byte{':'})
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) {
		case "event":
			name = value
		case "data":
			switch lines {
			case 0:
				data = value
			case 1:
				s.data = append(append(append(s.data[:0], data...), '\n'), value...)
				data = s.data
			default:
				s.data = append(append(s.data, '\n'), value...)
				data = s.data
			}
			lines++
		}
	}
	return name, data, lines > 0
}
