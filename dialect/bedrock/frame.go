package bedrock

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
)

// Limits of one event stream frame, as the SDK's decoder has them.
const (
	preludeLen   = 12 // total length, headers length, prelude CRC
	minFrameLen  = preludeLen + 4
	maxFrameLen  = 16<<20 + 128<<10 + minFrameLen
	maxHeaderLen = 128 << 10
)

// Errors of a malformed frame.
var (
	errFrameLength = errors.New("event stream frame has an invalid length")
	errFrameCRC    = errors.New("event stream frame fails its checksum")
	errFrameHeader = errors.New("event stream frame has a malformed header")
)

// frame is one decoded event stream message: the string headers the
// dialect reads and the payload, all views of the decoder's buffer.
type frame struct {
	messageType   []byte // :message-type: event, exception or error
	eventType     []byte // :event-type of an event
	exceptionType []byte // :exception-type of an exception
	errorCode     []byte // :error-code of an error
	errorMessage  []byte // :error-message of an error
	payload       []byte
}

// frameLen reports the length of the frame at the start of b, 0 if b
// does not yet hold its prelude, or an error if the prelude is invalid.
func frameLen(b []byte) (int, error) {
	if len(b) < preludeLen {
		return 0, nil
	}
	total := binary.BigEndian.Uint32(b[0:4])
	headers := binary.BigEndian.Uint32(b[4:8])
	if crc32.ChecksumIEEE(b[0:8]) != binary.BigEndian.Uint32(b[8:12]) {
		return 0, errFrameCRC
	}
	if total < minFrameLen || total > maxFrameLen || headers > maxHeaderLen || headers > total-minFrameLen {
		return 0, errFrameLength
	}
	return int(total), nil
}

// parseFrame reads the complete frame b (of the length frameLen gave)
// into f, checking its message CRC. It allocates nothing: f's fields view
// b.
func parseFrame(b []byte, f *frame) error {
	*f = frame{}
	n := len(b)
	if crc32.ChecksumIEEE(b[:n-4]) != binary.BigEndian.Uint32(b[n-4:]) {
		return errFrameCRC
	}
	hlen := int(binary.BigEndian.Uint32(b[4:8]))
	h := b[preludeLen : preludeLen+hlen]
	f.payload = b[preludeLen+hlen : n-4]
	for len(h) > 0 {
		nameLen := int(h[0])
		if len(h) < 1+nameLen+1 {
			return errFrameHeader
		}
		name := h[1 : 1+nameLen]
		typ := h[1+nameLen]
		h = h[2+nameLen:]
		size, ok := valueSize(typ, h)
		if !ok {
			return errFrameHeader
		}
		if typ == typeString {
			v := h[2:size]
			switch string(name) {
			case ":message-type":
				f.messageType = v
			case ":event-type":
				f.eventType = v
			case ":exception-type":
				f.exceptionType = v
			case ":error-code":
				f.errorCode = v
			case ":error-message":
				f.errorMessage = v
			}
		}
		h = h[size:]
	}
	return nil
}

// Header value types of the event stream encoding.
const (
	typeTrue = iota
	typeFalse
	typeByte
	typeInt16
	typeInt32
	typeInt64
	typeBytes
	typeString
	typeTimestamp
	typeUUID
)

// valueSize reports how many bytes of h the header value of type typ
// takes, and false if h is too short or the type unknown.
func valueSize(typ byte, h []byte) (int, bool) {
	var size int
	switch typ {
	case typeTrue, typeFalse:
		size = 0
	case typeByte:
		size = 1
	case typeInt16:
		size = 2
	case typeInt32:
		size = 4
	case typeInt64, typeTimestamp:
		size = 8
	case typeUUID:
		size = 16
	case typeBytes, typeString:
		if len(h) < 2 {
			return 0, false
		}
		size = 2 + int(binary.BigEndian.Uint16(h))
	default:
		return 0, false
	}
	return size, size <= len(h)
}
