package reqscan

import (
	"bytes"
	"encoding/binary"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
)

// wavFile is a WAV file of ms milliseconds of 16 kHz 16-bit mono silence.
func wavFile(ms int) []byte {
	data := ms * 32
	b := []byte("RIFF")
	b = binary.LittleEndian.AppendUint32(b, uint32(36+data))
	b = append(b, "WAVEfmt "...)
	b = binary.LittleEndian.AppendUint32(b, 16)
	b = binary.LittleEndian.AppendUint16(b, 1)
	b = binary.LittleEndian.AppendUint16(b, 1)
	b = binary.LittleEndian.AppendUint32(b, 16000)
	b = binary.LittleEndian.AppendUint32(b, 32000)
	b = binary.LittleEndian.AppendUint16(b, 2)
	b = binary.LittleEndian.AppendUint16(b, 16)
	b = append(b, "data"...)
	b = binary.LittleEndian.AppendUint32(b, uint32(data))
	return append(b, make([]byte, data)...)
}

// form writes a multipart form of fields (name, value pairs; a name
// "file" is a file part) and returns its content type and body.
func form(t *testing.T, fields ...string) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for i := 0; i+1 < len(fields); i += 2 {
		if fields[i] == "file" {
			w, _ := mw.CreateFormFile("file", "speech.wav")
			_, _ = w.Write([]byte(fields[i+1]))
			continue
		}
		_ = mw.WriteField(fields[i], fields[i+1])
	}
	_ = mw.Close()
	return mw.FormDataContentType(), buf.Bytes()
}

func TestInspectTranscription(t *testing.T) {
	wav := string(wavFile(1500))
	for i, c := range []struct {
		fields []string
		param  string
		status int
	}{
		{[]string{"model", "whisper-1", "file", wav, "response_format", "srt", "language", "en"}, "", 0},
		{[]string{"model", "whisper-1", "response_format", "text"}, "file", 400},
		{[]string{"file", wav}, "model", 400},
		{[]string{"model", "whisper-1", "model", "other", "file", wav}, "model", 400},
		{[]string{"model", "whisper-1", "file", wav, "file", wav}, "file", 400},
		{[]string{"model", "whisper-1", "file", wav, "stream", "maybe"}, "stream", 400},
	} {
		ct, body := form(t, c.fields...)
		in, e := InspectTranscription(ct, body)
		switch {
		case c.param == "" && e != nil:
			t.Errorf("Test %d: refused: %s", i, e.Message)
		case c.param != "" && (e == nil || e.Status != c.status || e.Param == nil || *e.Param != c.param):
			t.Errorf("Test %d: error %+v, want %d on %s", i, e, c.status, c.param)
		case c.param == "" && (in.Model != "whisper-1" || in.Format != "srt" || in.AudioMillis != 1500 || in.AudioEstimated):
			t.Errorf("Test %d: %+v", i, in)
		}
	}
	// Not multipart: 415; malformed: 400.
	if _, e := InspectTranscription("application/json", []byte(`{}`)); e == nil || e.Status != http.StatusUnsupportedMediaType {
		t.Errorf("json body: %+v", e)
	}
	if _, e := InspectTranscription("multipart/form-data; boundary=xyz", []byte("--xyz\r\nno end")); e == nil || e.Status != http.StatusBadRequest {
		t.Errorf("malformed: %+v", e)
	}
	// A part without headers is a part; an encoded one is refused.
	if _, e := InspectTranscription("multipart/form-data; boundary=x",
		[]byte("--x\r\n\r\nanonymous\r\n--x\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nm\r\n--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n\r\nRIFF\r\n--x--\r\n")); e != nil {
		t.Errorf("a part without headers: %+v", e)
	}
	if _, e := InspectTranscription("multipart/form-data; boundary=x",
		[]byte("--x\r\nContent-Disposition: form-data; name=\"model\"\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\ngpt=2D4o\r\n--x--\r\n")); e == nil || e.Status != http.StatusBadRequest {
		t.Errorf("quoted-printable: %+v", e)
	}
	// The model alias is replaced in place; the rest is kept byte for byte.
	ct, body := form(t, "model", "alias", "file", wav, "prompt", "keep me")
	in, e := InspectTranscription(ct, body)
	if e != nil {
		t.Fatal(e.Message)
	}
	out := PrepareMultipart(body, in, "whisper-large-v3")
	again, e := InspectTranscription(ct, out)
	if e != nil || again.Model != "whisper-large-v3" || again.AudioMillis != 1500 ||
		!bytes.Equal(bytes.Replace(body, []byte("\r\n\r\nalias\r\n"), []byte("\r\n\r\nwhisper-large-v3\r\n"), 1), out) ||
		!strings.Contains(string(out), "keep me") {
		t.Fatalf("prepared: %+v %v", again, e)
	}
}

func TestAudioMillis(t *testing.T) {
	mp3 := bytes.Repeat(append([]byte{0xFF, 0xFB, 0x90, 0xC4}, make([]byte, 413)...), 100) // 128 kbit/s
	for i, c := range []struct {
		b    []byte
		want int64
	}{
		{wavFile(2500), 2500},
		{mp3, int64(len(mp3)) * 8 / 128},
		{append([]byte("ID3\x04\x00\x00\x00\x00\x00\x02xx"), mp3...), int64(len(mp3)) * 8 / 128},
		{[]byte("OggS not read"), 0},
		{wavFile(10)[:30], 0},
	} {
		if got := audioMillis(c.b); got != c.want {
			t.Errorf("Test %d: %d ms, want %d", i, got, c.want)
		}
	}
}

// FuzzInspectTranscription feeds arbitrary bodies to the multipart
// inspector: none may panic, and an accepted one has a model and a file.
func FuzzInspectTranscription(f *testing.F) {
	f.Add([]byte("--x\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nm\r\n--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\nRIFF\r\n--x--\r\n"))
	f.Add([]byte("preamble\r\n--x\r\n\r\n\r\n--x--"))
	f.Add([]byte("--x  \r\n--x--"))
	f.Fuzz(func(t *testing.T, body []byte) {
		in, e := InspectTranscription("multipart/form-data; boundary=x", body)
		if e == nil && (in.Model == "" || in.Format == "") {
			t.Fatalf("accepted %q as %+v", body, in)
		}
		if e == nil {
			_ = PrepareMultipart(body, in, "other")
		}
	})
}
