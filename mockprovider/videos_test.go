package mockprovider

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/internal/fakeclock"
)

// newVideoServer starts a mock with a fake clock and 10 s videos.
func newVideoServer(t *testing.T, failureRate float64) (string, *fakeclock.Clock) {
	t.Helper()
	clk := fakeclock.New(time.Unix(1_750_000_000, 0))
	return newServer(t, Config{Clock: clk.Now, VideoDuration: 10 * time.Second, FailureRate: failureRate}), clk
}

func TestVideoLifecycle(t *testing.T) {
	base, clk := newVideoServer(t, 0)
	status, _, body := post(t, base+"/videos", `{"model":"sora-2","prompt":"a calm lake","seconds":"8","size":"1280x720"}`)
	v := gjson.Parse(body)
	id := v.Get("id").Str
	if status != http.StatusOK || len(id) < 10 || id[:6] != "video_" || v.Get("object").Str != "video" || v.Get("status").Str != "queued" ||
		v.Get("progress").Int() != 0 || v.Get("created_at").Int() != 1_750_000_000 || v.Get("seconds").Str != "8" || v.Get("size").Str != "1280x720" || v.Get("model").Str != "sora-2" {
		t.Fatalf("create: status %d, body %s", status, body)
	}
	for i, tc := range []struct {
		advance  time.Duration
		status   string
		progress int64
		content  bool
	}{
		{0, "queued", 0, false},
		{1 * time.Second, "queued", 0, false},
		{2 * time.Second, "in_progress", 30, false},
		{6 * time.Second, "in_progress", 90, false},
		{1 * time.Second, "completed", 100, true},
		{time.Hour, "completed", 100, true},
	} {
		clk.Advance(tc.advance)
		status, _, body := do(t, http.MethodGet, base+"/videos/"+id, "", "")
		v := gjson.Parse(body)
		if status != http.StatusOK || v.Get("id").Str != id || v.Get("status").Str != tc.status || v.Get("progress").Int() != tc.progress {
			t.Errorf("Test %d: status %d, body %s; want %s at %d%%", i, status, body, tc.status, tc.progress)
		}
		done := v.Get("completed_at").Type == gjson.Number && v.Get("expires_at").Type == gjson.Number
		if done != tc.content || v.Get("error").Type != gjson.Null {
			t.Errorf("Test %d: completed_at %s, expires_at %s, error %s", i, v.Get("completed_at").Raw, v.Get("expires_at").Raw, v.Get("error").Raw)
		}
		status, hdr, content := do(t, http.MethodGet, base+"/videos/"+id+"/content", "", "")
		if !tc.content {
			if status != http.StatusNotFound || gjson.Get(content, "error.message").Str == "" {
				t.Errorf("Test %d: content before completion: status %d, body %q", i, status, content)
			}
			continue
		}
		if status != http.StatusOK || hdr.Get("Content-Type") != "video/mp4" || len(content) < 16 || content[4:8] != "ftyp" {
			t.Errorf("Test %d: content: status %d, type %q, %d bytes", i, status, hdr.Get("Content-Type"), len(content))
		}
		if v.Get("completed_at").Int() != 1_750_000_010 {
			t.Errorf("Test %d: completed_at %d", i, v.Get("completed_at").Int())
		}
	}
	_, _, a := do(t, http.MethodGet, base+"/videos/"+id+"/content", "", "")
	_, _, b := do(t, http.MethodGet, base+"/videos/"+id+"/content", "", "")
	if a != b {
		t.Error("video content is not deterministic")
	}
	_, hdr, _ := do(t, http.MethodGet, base+"/videos/"+id+"/content?variant=thumbnail", "", "")
	if hdr.Get("Content-Type") != "image/png" {
		t.Errorf("thumbnail type %q", hdr.Get("Content-Type"))
	}
	_, _, list := do(t, http.MethodGet, base+"/videos", "", "")
	if gjson.Get(list, "object").Str != "list" || gjson.Get(list, "data.0.id").Str != id {
		t.Errorf("list %s", list)
	}
	clk.Advance(24 * time.Hour)
	if status, _, _ := do(t, http.MethodGet, base+"/videos/"+id, "", ""); status != http.StatusNotFound {
		t.Errorf("after 24 h: status %d, want 404", status)
	}
}

func TestVideoFailures(t *testing.T) {
	for i, tc := range []struct {
		rate   float64
		prompt string
		status string
		code   string
	}{
		{0, "this should fail", "failed", "moderation_blocked"},
		{1, "a calm lake", "failed", "video_generation_failed"},
		{0, "a calm lake", "completed", ""},
	} {
		base, clk := newVideoServer(t, tc.rate)
		_, _, body := post(t, base+"/videos", `{"model":"sora-2","prompt":"`+tc.prompt+`"}`)
		id := gjson.Get(body, "id").Str
		clk.Advance(10 * time.Second)
		_, _, body = do(t, http.MethodGet, base+"/videos/"+id, "", "")
		v := gjson.Parse(body)
		if v.Get("status").Str != tc.status || v.Get("error.code").Str != tc.code || (tc.code != "" && v.Get("error.message").Str == "") {
			t.Errorf("Test %d: %s", i, body)
		}
		if status, _, _ := do(t, http.MethodGet, base+"/videos/"+id+"/content", "", ""); (status == http.StatusOK) != (tc.status == "completed") {
			t.Errorf("Test %d: content status %d", i, status)
		}
	}
}

// TestVideoFailureRateDeterministic checks that the fate of a video depends
// on its id only, and that a rate of one half fails some videos, not all.
func TestVideoFailureRateDeterministic(t *testing.T) {
	h := New(Config{FailureRate: 0.5})
	failed := 0
	for i := range 200 {
		v := &video{id: "video_" + string(rune('a'+i%26)) + string(rune('a'+i/26)), prompt: "x"}
		h.willFail(v)
		again := &video{id: v.id, prompt: "x"}
		h.willFail(again)
		if v.failCode != again.failCode {
			t.Fatalf("Test %d: fate of %s changed", i, v.id)
		}
		if v.failCode != "" {
			failed++
		}
	}
	if failed == 0 || failed == 200 {
		t.Errorf("%d of 200 videos failed at rate 0.5", failed)
	}
}

func TestVideoMultipart(t *testing.T) {
	base, _ := newVideoServer(t, 0)
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("model", "sora-2-pro")
	_ = mw.WriteField("prompt", "a multipart video")
	_ = mw.WriteField("seconds", "12")
	fw, _ := mw.CreateFormFile("input_reference", "ref.png")
	_, _ = fw.Write([]byte("not really a png"))
	mw.Close()
	status, _, body := do(t, http.MethodPost, base+"/videos", mw.FormDataContentType(), buf.String())
	v := gjson.Parse(body)
	if status != http.StatusOK || v.Get("status").Str != "queued" || v.Get("model").Str != "sora-2-pro" || v.Get("seconds").Str != "12" || v.Get("prompt").Str != "a multipart video" {
		t.Errorf("status %d, body %s", status, body)
	}
}

func TestVideoErrors(t *testing.T) {
	base, _ := newVideoServer(t, 0)
	for i, tc := range []struct {
		method, path, body string
		status             int
		param              string
	}{
		{http.MethodPost, "/videos", `{"model":"sora-2"}`, http.StatusBadRequest, "prompt"},
		{http.MethodPost, "/videos", `{"prompt":"x","seconds":"0"}`, http.StatusBadRequest, "seconds"},
		{http.MethodPost, "/videos", `{"prompt":"x","size":"wide"}`, http.StatusBadRequest, "size"},
		{http.MethodPost, "/videos", `{"prompt":"x","mock_status":429}`, http.StatusTooManyRequests, ""},
		{http.MethodGet, "/videos/video_unknown", ``, http.StatusNotFound, ""},
		{http.MethodGet, "/videos/video_unknown/content", ``, http.StatusNotFound, ""},
		{http.MethodDelete, "/videos/video_unknown", ``, http.StatusNotFound, ""},
		{http.MethodGet, "/videos/video_x/remix", ``, http.StatusNotFound, ""},
	} {
		status, _, body := do(t, tc.method, base+tc.path, "application/json", tc.body)
		if status != tc.status || gjson.Get(body, "error.param").Str != tc.param || gjson.Get(body, "error.message").Str == "" {
			t.Errorf("Test %d: %s %s: status %d, body %s", i, tc.method, tc.path, status, body)
		}
	}
	_, _, body := post(t, base+"/videos", `{"prompt":"to delete"}`)
	id := gjson.Get(body, "id").Str
	if status, _, body := do(t, http.MethodDelete, base+"/videos/"+id, "", ""); status != http.StatusOK || !gjson.Get(body, "deleted").Bool() {
		t.Errorf("delete: status %d, body %s", status, body)
	}
	if status, _, _ := do(t, http.MethodGet, base+"/videos/"+id, "", ""); status != http.StatusNotFound {
		t.Errorf("deleted video: status %d", status)
	}
}

func TestVideoStoreBounded(t *testing.T) {
	s := newVideoStore(3)
	now := time.Unix(0, 0)
	for _, id := range []string{"a", "b", "c", "d"} {
		s.add(&video{id: id, created: now}, now)
	}
	if s.get("a", now) != nil || s.get("b", now) == nil || s.get("d", now) == nil || len(s.byID) != 3 {
		t.Errorf("store holds %d videos; oldest kept %v", len(s.byID), s.get("a", now) != nil)
	}
}

// TestVideoContentBytes: mock_content_bytes sets the length of a video's
// content, for measuring large downloads, and is bounded.
func TestVideoContentBytes(t *testing.T) {
	base, clk := newVideoServer(t, 0)
	const n = 3<<20 + 5 // not a whole number of the pieces it is written in
	status, _, body := post(t, base+"/videos", `{"model":"sora-2","prompt":"a long take","seconds":"4","size":"720x1280","mock_content_bytes":3145733}`)
	id := gjson.Get(body, "id").Str
	if status != http.StatusOK || id == "" {
		t.Fatalf("create: status %d, body %s", status, body)
	}
	clk.Advance(time.Minute)
	status, hdr, content := do(t, http.MethodGet, base+"/videos/"+id+"/content", "", "")
	if status != http.StatusOK || hdr.Get("Content-Length") != "3145733" || len(content) != n || content[4:8] != "ftyp" || hdr.Get("Content-Type") != "video/mp4" {
		t.Fatalf("content: status %d, Content-Length %q, %d bytes, type %q", status, hdr.Get("Content-Length"), len(content), hdr.Get("Content-Type"))
	}
	if _, _, again := do(t, http.MethodGet, base+"/videos/"+id+"/content", "", ""); again != content {
		t.Error("large video content is not deterministic")
	}
	status, _, body = post(t, base+"/videos", `{"model":"sora-2","prompt":"too long","seconds":"4","size":"720x1280","mock_content_bytes":268435457}`)
	if status != http.StatusBadRequest || gjson.Get(body, "error.param").Str != "mock_content_bytes" {
		t.Errorf("over the bound: status %d, body %s", status, body)
	}
}
