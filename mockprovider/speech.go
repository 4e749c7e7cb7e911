package mockprovider

import (
	"encoding/binary"
	"math"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// Speech audio the mock produces: 24 kHz 16-bit mono PCM (raw, or in a
// WAV file), and MPEG-1 Layer III frames (128 kbit/s, 44.1 kHz, mono) of
// silence, each a valid frame any MP3 decoder reads.
const (
	pcmRate          = 24000
	mp3FrameBytes    = 417 // 144 × 128000 / 44100, no padding
	mp3FrameSamples  = 1152
	mp3SampleRate    = 44100
	speechMillisChar = 50 // of speech per input character, at speed 1
	speechChunk      = 16 << 10
)

// mp3FrameHeader is the header of every frame: sync, MPEG-1 Layer III
// without CRC, 128 kbit/s, 44.1 kHz, no padding, mono.
var mp3FrameHeader = [4]byte{0xFF, 0xFB, 0x90, 0xC4}

// tone is one period of a 400 Hz sine at a quarter of full scale, at
// pcmRate.
var tone = func() (t [pcmRate / 400]int16) {
	for i := range t {
		t[i] = int16(8192 * math.Sin(2*math.Pi*float64(i)/float64(len(t))))
	}
	return t
}()

// speechContentTypes are the formats the mock produces.
var speechContentTypes = map[string]string{"mp3": "audio/mpeg", "wav": "audio/wav", "pcm": "audio/pcm"}

// speech answers POST /v1/audio/speech as OpenAI does: the audio of the
// input (50 ms a character at speed 1) in response_format (mp3 by
// default; wav and pcm too; the mock makes no opus, aac or flac), written
// in chunks as it is made, with chunked transfer encoding as OpenAI's.
func (h *Handler) speech(w http.ResponseWriter, r *http.Request) {
	body, status, err := readBody(w, r)
	if err != nil {
		typ, code := openAIStatusError(status)
		writeOpenAIError(w, status, typ, code, "", err.Error())
		return
	}
	if msg := h.bodyError(body, "We could not parse the JSON body of your request."); msg != "" {
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "", msg)
		return
	}
	req := gjson.ParseBytes(body)
	input, format, speed := req.Get("input"), req.Get("response_format").Str, 1.0
	switch {
	case req.Get("model").Str == "":
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "model", "you must provide a model parameter")
		return
	case input.Type != gjson.String || input.Str == "" || utf8.RuneCountInString(input.Str) > 4096:
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "input", "input must be a string of 1 to 4096 characters")
		return
	case req.Get("voice").Str == "":
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "voice", "you must provide a voice parameter")
		return
	}
	if format == "" {
		format = "mp3"
	}
	ct, ok := speechContentTypes[format]
	if !ok {
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "response_format",
			"response_format "+strconv.Quote(format)+" is not produced by this model")
		return
	}
	if s := req.Get("speed"); s.Exists() {
		if speed = s.Float(); s.Type != gjson.Number || speed < 0.25 || speed > 4 {
			writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "speed", "speed must be from 0.25 to 4")
			return
		}
	}
	millis := int64(float64(utf8.RuneCountInString(input.Str)*speechMillisChar) / speed)
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	writeSpeech(w, format, millis)
}

// writeSpeech writes millis of audio in format, chunk by chunk.
func writeSpeech(w http.ResponseWriter, format string, millis int64) {
	rc := http.NewResponseController(w)
	buf := make([]byte, 0, speechChunk+mp3FrameBytes)
	emit := func(force bool) bool {
		if len(buf) < speechChunk && !force {
			return true
		}
		if _, err := w.Write(buf); err != nil {
			return false
		}
		_ = rc.Flush()
		buf = buf[:0]
		return true
	}
	if format == "mp3" {
		frames := (millis*mp3SampleRate/1000 + mp3FrameSamples - 1) / mp3FrameSamples
		var frame [mp3FrameBytes]byte
		copy(frame[:], mp3FrameHeader[:])
		for range frames {
			buf = append(buf, frame[:]...)
			if !emit(false) {
				return
			}
		}
		emit(true)
		return
	}
	samples := millis * pcmRate / 1000
	if format == "wav" {
		buf = appendWAVHeader(buf, samples)
	}
	for i := range samples {
		buf = binary.LittleEndian.AppendUint16(buf, uint16(tone[i%int64(len(tone))]))
		if !emit(false) {
			return
		}
	}
	emit(true)
}

// appendWAVHeader appends the 44-byte header of a WAV file of samples
// 16-bit mono PCM samples at pcmRate.
func appendWAVHeader(b []byte, samples int64) []byte {
	data := uint32(samples * 2)
	b = append(b, "RIFF"...)
	b = binary.LittleEndian.AppendUint32(b, 36+data)
	b = append(b, "WAVEfmt "...)
	b = binary.LittleEndian.AppendUint32(b, 16)
	b = binary.LittleEndian.AppendUint16(b, 1) // PCM
	b = binary.LittleEndian.AppendUint16(b, 1) // mono
	b = binary.LittleEndian.AppendUint32(b, pcmRate)
	b = binary.LittleEndian.AppendUint32(b, pcmRate*2)
	b = binary.LittleEndian.AppendUint16(b, 2)
	b = binary.LittleEndian.AppendUint16(b, 16)
	b = append(b, "data"...)
	return binary.LittleEndian.AppendUint32(b, data)
}
