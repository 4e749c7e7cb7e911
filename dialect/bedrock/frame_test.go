package bedrock

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// sdkFrame encodes a frame with every header type, as the SDK does.
func sdkFrame(t testing.TB, payload string) []byte {
	var b bytes.Buffer
	err := eventstream.NewEncoder().Encode(&b, eventstream.Message{Headers: eventstream.Headers{
		{Name: "flag", Value: eventstream.BoolValue(true)},
		{Name: "off", Value: eventstream.BoolValue(false)},
		{Name: "i8", Value: eventstream.Int8Value(-3)},
		{Name: "i16", Value: eventstream.Int16Value(300)},
		{Name: "i32", Value: eventstream.Int32Value(70000)},
		{Name: "i64", Value: eventstream.Int64Value(1 << 40)},
		{Name: "raw", Value: eventstream.BytesValue("bytes")},
		{Name: ":message-type", Value: eventstream.StringValue("event")},
		{Name: "uuid", Value: eventstream.UUIDValue{1, 2, 3}},
		{Name: ":event-type", Value: eventstream.StringValue("contentBlockDelta")},
	}, Payload: []byte(payload)})
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestParseFrameReadsWhatTheSDKEncodes(t *testing.T) {
	b := sdkFrame(t, `{"contentBlockIndex":0,"delta":{"text":"hi"}}`)
	n, err := frameLen(b)
	if err != nil || n != len(b) {
		t.Fatalf("frameLen = %d, %v; want %d", n, err, len(b))
	}
	var f frame
	if err := parseFrame(b, &f); err != nil {
		t.Fatal(err)
	}
	if string(f.messageType) != "event" || string(f.eventType) != "contentBlockDelta" || string(f.payload) != `{"contentBlockIndex":0,"delta":{"text":"hi"}}` {
		t.Errorf("parsed %q %q %q", f.messageType, f.eventType, f.payload)
	}
	if n, err := frameLen(b[:preludeLen-1]); n != 0 || err != nil {
		t.Errorf("a partial prelude gave %d, %v; want 0, nil", n, err)
	}
}

func TestParseFrameRefusesCorruption(t *testing.T) {
	good := sdkFrame(t, `{"x":1}`)
	for i, corrupt := range []func(b []byte){
		func(b []byte) { b[len(b)-6] ^= 1 },               // payload byte: message CRC fails
		func(b []byte) { b[2] ^= 1 },                      // length: prelude CRC fails
		func(b []byte) { b[len(b)-1] ^= 1 },               // the message CRC itself
		func(b []byte) { b[preludeLen] = 200; fixCRC(b) }, // a header name longer than the headers
	} {
		b := bytes.Clone(good)
		corrupt(b)
		n, err := frameLen(b)
		if err == nil {
			var f frame
			err = parseFrame(b[:n], &f)
		}
		if err == nil {
			t.Errorf("Test %d: a corrupt frame was accepted", i)
		}
		if _, sdkErr := eventstream.NewDecoder().Decode(bytes.NewReader(b), nil); sdkErr == nil {
			t.Errorf("Test %d: the SDK accepts what we refuse", i)
		}
	}
}

// fixCRC recomputes a frame's message CRC after an edit.
func fixCRC(b []byte) {
	binary.BigEndian.PutUint32(b[len(b)-4:], crc32.ChecksumIEEE(b[:len(b)-4]))
}

// FuzzParseFrame checks the parser against the SDK's decoder: both
// accept the same frames and read the same payload, and ours never
// panics.
func FuzzParseFrame(f *testing.F) {
	f.Add(sdkFrame(f, `{"a":"b"}`))
	f.Add(EncodeException("throttlingException", "slow down"))
	f.Add([]byte{0, 0, 0, 16, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := frameLen(b)
		if err != nil || n == 0 || n > len(b) {
			return
		}
		var fr frame
		ours := parseFrame(b[:n], &fr)
		m, theirs := eventstream.NewDecoder().Decode(bytes.NewReader(b[:n]), nil)
		if (ours == nil) != (theirs == nil) {
			t.Fatalf("ours: %v, the SDK: %v", ours, theirs)
		}
		if ours == nil && !bytes.Equal(fr.payload, m.Payload) {
			t.Fatalf("payload %q, the SDK's %q", fr.payload, m.Payload)
		}
	})
}

// encodeRaw encodes an event frame with a payload as it is.
func encodeRaw(eventType string, payload []byte) []byte {
	var b bytes.Buffer
	_ = eventstream.NewEncoder().Encode(&b, eventstream.Message{Headers: eventstream.Headers{
		{Name: ":event-type", Value: eventstream.StringValue(eventType)},
		{Name: ":message-type", Value: eventstream.StringValue("event")},
	}, Payload: payload})
	return b.Bytes()
}

// BenchmarkParseFrame and BenchmarkSDKDecodeFrame compare this parser
// with the SDK's decoder on one delta frame: the reason the stream
// decoder parses frames itself.
func BenchmarkParseFrame(b *testing.B) {
	raw := EncodeEvent("contentBlockDelta", map[string]any{"contentBlockIndex": 0, "delta": map[string]any{"text": "Hello"}, "p": "abcdefgh"})
	var f frame
	b.ReportAllocs()
	for b.Loop() {
		if err := parseFrame(raw, &f); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSDKDecodeFrame(b *testing.B) {
	frame := EncodeEvent("contentBlockDelta", map[string]any{"contentBlockIndex": 0, "delta": map[string]any{"text": "Hello"}, "p": "abcdefgh"})
	d := eventstream.NewDecoder()
	buf := make([]byte, 0, 1024)
	r := bytes.NewReader(frame)
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(frame)
		if _, err := d.Decode(r, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// encodeErrorFrame encodes a frame of the error message type.
func encodeErrorFrame(code, msg string) []byte {
	var b bytes.Buffer
	_ = eventstream.NewEncoder().Encode(&b, eventstream.Message{Headers: eventstream.Headers{
		{Name: ":message-type", Value: eventstream.StringValue("error")},
		{Name: ":error-code", Value: eventstream.StringValue(code)},
		{Name: ":error-message", Value: eventstream.StringValue(msg)},
	}})
	return b.Bytes()
}
