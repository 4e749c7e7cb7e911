package mockprovider

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// videoError is the error object of a failed video.
type videoError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// videoJSON is a video object as OpenAI's Videos API returns it.
type videoJSON struct {
	ID                 string      `json:"id"`
	Object             string      `json:"object"`
	Model              string      `json:"model"`
	Status             string      `json:"status"`
	Progress           int         `json:"progress"`
	CreatedAt          int64       `json:"created_at"`
	CompletedAt        *int64      `json:"completed_at"`
	ExpiresAt          *int64      `json:"expires_at"`
	Error              *videoError `json:"error"`
	Prompt             string      `json:"prompt"`
	RemixedFromVideoID *string     `json:"remixed_from_video_id"`
	Seconds            string      `json:"seconds"`
	Size               string      `json:"size"`
}

// state returns v as seen at now: queued for the first fifth of the
// duration, then in_progress with rising progress, then completed or
// failed.
func (h *Handler) state(v *video, now time.Time) videoJSON {
	j := videoJSON{
		ID: v.id, Object: "video", Model: v.model, CreatedAt: v.created.Unix(),
		Prompt: v.prompt, Seconds: v.seconds, Size: v.size, Status: "queued",
	}
	d := h.cfg.VideoDuration
	elapsed := now.Sub(v.created)
	switch {
	case elapsed < d/5:
	case elapsed < d:
		j.Status = "in_progress"
		j.Progress = min(max(int(100*elapsed/d), 1), 99)
	case v.failCode != "":
		j.Status = "failed"
		j.Error = &videoError{Code: v.failCode, Message: v.failMessage}
	default:
		j.Status, j.Progress = "completed", 100
		done, exp := v.created.Add(d).Unix(), v.created.Add(videoTTL).Unix()
		j.CompletedAt, j.ExpiresAt = &done, &exp
	}
	return j
}

// willFail decides a new video's fate: prompts containing "fail" are
// blocked; others fail with probability FailureRate, drawn from a PRNG
// seeded by the id.
func (h *Handler) willFail(v *video) {
	if strings.Contains(strings.ToLower(v.prompt), "fail") {
		v.failCode, v.failMessage = "moderation_blocked", "Your request was blocked by our moderation system."
		return
	}
	f := fnv.New64a()
	f.Write([]byte(v.id))
	if rand.New(rand.NewPCG(f.Sum64(), 0x6d6f636b)).Float64() < h.cfg.FailureRate {
		v.failCode, v.failMessage = "video_generation_failed", "The mock video generation failed."
	}
}

// createVideo answers POST /v1/videos, with a JSON or multipart body.
func (h *Handler) createVideo(w http.ResponseWriter, r *http.Request) {
	v := &video{model: "sora-2", seconds: "4", size: "720x1280"}
	mf := h.defaultMockFields()
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "multipart/form-data" {
		r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
		if err := r.ParseMultipartForm(8 << 20); err != nil {
			writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "", "invalid multipart body: "+err.Error())
			return
		}
		for k, vals := range r.MultipartForm.Value {
			if len(vals) > 0 {
				v.setField(k, gjson.Result{Type: gjson.String, Str: vals[0]}, &mf)
			}
		}
	} else {
		body, status, err := readBody(w, r)
		if err != nil {
			writeOpenAIError(w, status, "invalid_request_error", "", "", err.Error())
			return
		}
		if msg := h.bodyError(body, "We could not parse the JSON body of your request."); msg != "" {
			writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "", msg)
			return
		}
		gjson.ParseBytes(body).ForEach(func(k, val gjson.Result) bool {
			v.setField(k.Str, val, &mf)
			return true
		})
	}
	if mf.status != 0 {
		typ, code := openAIStatusError(mf.status)
		writeOpenAIError(w, mf.status, typ, code, "", "mock error forced by mock_status")
		return
	}
	if param, msg := v.validate(); msg != "" {
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", param, msg)
		return
	}
	now := h.clock()
	v.id, v.created = newID("video_", 32), now
	h.willFail(v)
	h.videos.add(v, now)
	writeVideoJSON(w, h.state(v, now))
}

// setField reads one request field into v (or the mock fields).
func (v *video) setField(k string, val gjson.Result, mf *mockFields) {
	switch k {
	case "model":
		v.model = val.String()
	case "prompt":
		v.prompt = val.String()
	case "seconds":
		v.seconds = val.String()
	case "size":
		v.size = val.String()
	case "mock_status":
		mf.status = forcedStatus(val.Int())
	case "mock_content_bytes":
		v.contentBytes = val.Int()
	}
}

// validate checks a new video's fields.
func (v *video) validate() (param, msg string) {
	if strings.TrimSpace(v.prompt) == "" {
		return "prompt", "Missing required parameter: 'prompt'."
	}
	if s, err := strconv.Atoi(v.seconds); err != nil || s < 1 || s > 60 {
		return "seconds", "Invalid 'seconds': expected a number of seconds such as '4', '8' or '12'."
	}
	if _, _, ok := parseSize(v.size); !ok || v.size == "auto" {
		return "size", "Invalid 'size': expected WIDTHxHEIGHT, such as '720x1280'."
	}
	if v.contentBytes < 0 || v.contentBytes > maxContentBytes {
		return "mock_content_bytes", fmt.Sprintf("Invalid 'mock_content_bytes': expected at most %d.", maxContentBytes)
	}
	return "", ""
}

// writeVideoJSON answers with a JSON value.
func writeVideoJSON(w http.ResponseWriter, v any) {
	out, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	_, _ = w.Write(out)
}

// video answers GET and DELETE /v1/videos/{id} and GET
// /v1/videos/{id}/content (sub is "content").
func (h *Handler) video(w http.ResponseWriter, r *http.Request, id, sub string) {
	now := h.clock()
	if sub == "" && r.Method == http.MethodDelete {
		if !h.videos.remove(id) {
			writeOpenAIError(w, http.StatusNotFound, "invalid_request_error", "video_not_found", "", "Video with id '"+id+"' not found.")
			return
		}
		writeVideoJSON(w, map[string]any{"id": id, "object": "video.deleted", "deleted": true})
		return
	}
	if !allow(w, r, http.MethodGet, false) {
		return
	}
	v := h.videos.get(id, now)
	if v == nil {
		writeOpenAIError(w, http.StatusNotFound, "invalid_request_error", "video_not_found", "", "Video with id '"+id+"' not found.")
		return
	}
	st := h.state(v, now)
	if sub == "" {
		writeVideoJSON(w, st)
		return
	}
	if st.Status != "completed" {
		writeOpenAIError(w, http.StatusNotFound, "invalid_request_error", "video_not_ready", "", "Video '"+id+"' is "+st.Status+"; its content is not available.")
		return
	}
	data, ctype := videoBytes(v.id), "video/mp4"
	if variant := r.URL.Query().Get("variant"); variant != "" && variant != "video" {
		data, ctype = renderPNG(imageSeed(v.id, 0), maxImageSide, maxImageSide), "image/png"
	} else if v.contentBytes > 0 {
		writeLargeVideo(w, r, v)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", ctype)
	hd.Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(data)
	}
}

// listVideos answers GET /v1/videos with the newest videos.
func (h *Handler) listVideos(w http.ResponseWriter, r *http.Request) {
	limit, err := strconv.Atoi(r.URL.Query().Get("limit"))
	if err != nil || limit < 1 || limit > 100 {
		limit = 20
	}
	now := h.clock()
	list := struct {
		Object  string      `json:"object"`
		Data    []videoJSON `json:"data"`
		FirstID *string     `json:"first_id"`
		LastID  *string     `json:"last_id"`
		HasMore bool        `json:"has_more"`
	}{Object: "list", Data: []videoJSON{}}
	for _, v := range h.videos.newest(limit, now) {
		list.Data = append(list.Data, h.state(v, now))
	}
	if n := len(list.Data); n > 0 {
		list.FirstID, list.LastID = &list.Data[0].ID, &list.Data[n-1].ID
	}
	writeVideoJSON(w, list)
}

// videoBytes returns the deterministic mp4 bytes of a video: an ISO BMFF
// ftyp box, then a free box whose payload derives from the id.
func videoBytes(id string) []byte {
	return appendVideoBytes(make([]byte, 0, 32+8+1024), id, 1024)
}

// maxContentBytes bounds mock_content_bytes.
const maxContentBytes = 256 << 20

// writeLargeVideo answers with v.contentBytes bytes of content: the MP4
// header of videoBytes, then filler, written in pieces so that the mock
// never holds the file.
func writeLargeVideo(w http.ResponseWriter, r *http.Request, v *video) {
	hd := w.Header()
	hd.Set("Content-Type", "video/mp4")
	hd.Set("Content-Length", strconv.FormatInt(v.contentBytes, 10))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	const piece = 256 << 10
	b := appendVideoBytes(make([]byte, 0, piece), v.id, piece-40)
	for left := v.contentBytes; left > 0; left -= int64(len(b)) {
		b = b[:min(int64(len(b)), left)]
		if _, err := w.Write(b); err != nil {
			return
		}
	}
}

// appendVideoBytes appends a tiny valid-looking MP4 (ftyp box) followed by
// a free box of payload pseudo-random bytes seeded by id.
func appendVideoBytes(b []byte, id string, payload int) []byte {
	end := len(b) + 32 + 8 + payload
	b = binary.BigEndian.AppendUint32(b, 32)
	b = append(b, "ftypisom"...)
	b = binary.BigEndian.AppendUint32(b, 0x200)
	b = append(b, "isomiso2avc1mp41"...)
	b = binary.BigEndian.AppendUint32(b, uint32(8+payload))
	b = append(b, "free"...)
	f := fnv.New64a()
	f.Write([]byte(id))
	x := f.Sum64()
	for len(b) < end {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b = append(b, byte(x))
	}
	return b
}
