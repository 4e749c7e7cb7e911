package integration

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// videoMock is a fake OpenAI Videos provider that counts the polls of
// each video, with when they came and from which gateway instance: each
// instance's config gives the provider its own API key, and the mock
// names the poller by it.
type videoMock struct {
	// donePolls is how many polls a video takes: the one that reaches it
	// finds the video completed.
	donePolls int

	mu     sync.Mutex
	videos map[string]*mockVideo
	order  []string
	// holdBy names the instance whose next poll the mock holds, without
	// answering, until the instance goes away; held receives the video.
	holdBy string
	held   chan string
}

// mockVideo is what the mock knows of one video.
type mockVideo struct {
	polls     []videoPoll
	downloads int
}

// videoPoll is one poll: when it came and which instance sent it.
type videoPoll struct {
	at time.Time
	by string
}

// videoContent is the body of every video's content: an MP4 header,
// which the gateway checks, then filler.
var videoContent = append([]byte("\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom"), bytes.Repeat([]byte("mp4 "), 8<<10)...)

// serve answers POST /v1/videos, GET /v1/videos/{id} and GET
// /v1/videos/{id}/content.
func (m *videoMock) serve(w http.ResponseWriter, r *http.Request) {
	by := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	rest := strings.TrimPrefix(r.URL.Path, "/v1/videos")
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodPost && rest == "":
		m.mu.Lock()
		id := fmt.Sprintf("video_%d", len(m.order)+1)
		m.order = append(m.order, id)
		m.videos[id] = &mockVideo{}
		m.mu.Unlock()
		fmt.Fprintf(w, `{"id":%q,"object":"video","model":"sora-2","status":"queued","progress":0,"created_at":1712697600,"seconds":"4","size":"1280x720"}`, id)
	case r.Method == http.MethodGet && strings.HasSuffix(rest, "/content"):
		id := strings.TrimSuffix(strings.TrimPrefix(rest, "/"), "/content")
		m.mu.Lock()
		v := m.videos[id]
		if v != nil {
			v.downloads++
		}
		m.mu.Unlock()
		if v == nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "video/mp4")
		_, _ = w.Write(videoContent)
	case r.Method == http.MethodGet:
		id := strings.TrimPrefix(rest, "/")
		m.mu.Lock()
		v := m.videos[id]
		var n int
		var hold chan string
		if v != nil {
			v.polls = append(v.polls, videoPoll{at: time.Now(), by: by})
			n = len(v.polls)
			if m.holdBy == by && n < m.donePolls {
				hold, m.holdBy = m.held, ""
			}
		}
		m.mu.Unlock()
		if hold != nil {
			hold <- id
			<-r.Context().Done()
			return
		}
		switch {
		case v == nil:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":{"message":"no such video","type":"invalid_request_error"}}`)
		case n >= m.donePolls:
			fmt.Fprintf(w, `{"id":%q,"object":"video","status":"completed","progress":100,"seconds":"4","completed_at":1712698000}`, id)
		default:
			fmt.Fprintf(w, `{"id":%q,"object":"video","status":"in_progress","progress":%d,"seconds":"4"}`, id, 100*n/m.donePolls)
		}
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

// holdNext makes the mock hold the next poll of a running video by
// instance by; the returned channel receives the video's id when it came.
func (m *videoMock) holdNext(by string) <-chan string {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.holdBy, m.held = by, make(chan string, 1)
	return m.held
}

// lastPoller returns the instance that sent the latest poll of a video
// that was not yet completed, and that video; "" if none.
func (m *videoMock) lastPoller() (by, video string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var at time.Time
	for id, v := range m.videos {
		if n := len(v.polls); n > 0 && n < m.donePolls && v.polls[n-1].at.After(at) {
			at, by, video = v.polls[n-1].at, v.polls[n-1].by, id
		}
	}
	return by, video
}

// snapshot returns a copy of the polls and downloads of every video, in
// the order of creation.
func (m *videoMock) snapshot() (ids []string, polls map[string][]videoPoll, downloads map[string]int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	polls, downloads = map[string][]videoPoll{}, map[string]int{}
	for _, id := range m.order {
		polls[id] = append([]videoPoll(nil), m.videos[id].polls...)
		downloads[id] = m.videos[id].downloads
	}
	return append([]string(nil), m.order...), polls, downloads
}

// multiUpstream is the fake provider of TestMultiInstance: an idUpstream
// for the chat and messages models that also notes when it first saw
// each request id, and a video mock.
type multiUpstream struct {
	*idUpstream
	mu sync.Mutex
	// firstSeen is when each request id first reached the provider.
	firstSeen map[string]time.Time
}

// newMultiUpstream starts one fake provider for the chat and messages
// models and the OpenAI video model (vm).
func newMultiUpstream(t *testing.T, vm *videoMock) *multiUpstream {
	t.Helper()
	vm.videos = map[string]*mockVideo{}
	u := &multiUpstream{idUpstream: &idUpstream{seen: map[string]int{}}, firstSeen: map[string]time.Time{}}
	u.upstream = newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if strings.HasPrefix(r.URL.Path, "/v1/videos") {
			vm.serve(w, r)
			return
		}
		if id := r.Header.Get(requestIDHeader); id != "" {
			u.mu.Lock()
			if _, ok := u.firstSeen[id]; !ok {
				u.firstSeen[id] = time.Now()
			}
			u.mu.Unlock()
		}
		u.answer(w, r, body)
	})
	return u
}

// seenAt returns when the provider first saw request id.
func (u *multiUpstream) seenAt(id string) time.Time {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.firstSeen[id]
}
