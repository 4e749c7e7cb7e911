package reqscan

import (
	"bytes"
	"encoding/binary"
)

// audioMillis returns the duration in milliseconds of a WAV file (from its
// fmt and data chunks, exactly) or an MP3 file (from its size and the
// bit rate of its first frame, as for constant bit rate), 0 for another
// or a malformed file.
func audioMillis(b []byte) int64 {
	if len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WAVE" {
		return wavMillis(b[12:])
	}
	return mp3Millis(b)
}

// wavMillis walks the chunks of a WAV file after its RIFF header.
func wavMillis(b []byte) int64 {
	var byteRate int64
	for len(b) >= 8 {
		id, size := string(b[:4]), int64(binary.LittleEndian.Uint32(b[4:8]))
		b = b[8:]
		switch {
		case id == "fmt " && size >= 16 && len(b) >= 16:
			byteRate = int64(binary.LittleEndian.Uint32(b[8:12]))
		case id == "data":
			if byteRate <= 0 {
				return 0
			}
			// A streamed WAV may declare no size: what arrived counts.
			size = min(size, int64(len(b)))
			return size * 1000 / byteRate
		}
		if size > int64(len(b)) {
			return 0
		}
		b = b[size+size&1:]
	}
	return 0
}

// mp3Bitrates are the bit rates in kbit/s of MPEG-1 Layer III, by index.
var mp3Bitrates = [16]int64{0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 0}

// mp3Millis estimates an MP3 file's duration from its size and its first
// frame's bit rate, after an ID3v2 tag if it has one. Only MPEG-1 Layer
// III frames are read.
func mp3Millis(b []byte) int64 {
	if len(b) >= 10 && bytes.HasPrefix(b, []byte("ID3")) {
		n := int(b[6]&0x7f)<<21 | int(b[7]&0x7f)<<14 | int(b[8]&0x7f)<<7 | int(b[9]&0x7f)
		if 10+n > len(b) {
			return 0
		}
		b = b[10+n:]
	}
	if len(b) < 4 || b[0] != 0xFF || b[1]&0xFE != 0xFA {
		return 0
	}
	kbps := mp3Bitrates[b[2]>>4]
	if kbps == 0 {
		return 0
	}
	return int64(len(b)) * 8 / kbps
}
