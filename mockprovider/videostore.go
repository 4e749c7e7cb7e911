package mockprovider

import (
	"sync"
	"time"
)

const (
	// maxVideos bounds the videos the mock remembers.
	maxVideos = 10000
	// videoTTL is how long a video and its content stay available.
	videoTTL = 24 * time.Hour
)

// video is one mock video job.
type video struct {
	id, model, prompt, seconds, size string
	created                          time.Time
	failCode, failMessage            string // set when the job will fail
	contentBytes                     int64  // length of the content; 0: a small file
}

// videoStore holds videos in memory, forgetting them after videoTTL or,
// when full, oldest first.
type videoStore struct {
	mu    sync.Mutex
	byID  map[string]*video
	order []string // creation order; may name deleted videos
	head  int
	max   int
}

// newVideoStore returns a store holding at most size videos.
func newVideoStore(size int) *videoStore {
	return &videoStore{byID: make(map[string]*video), max: size}
}

// add stores v, first forgetting expired videos and, if still full, the
// oldest.
func (s *videoStore) add(v *video, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.head < len(s.order) {
		old, ok := s.byID[s.order[s.head]]
		if ok && len(s.byID) < s.max && now.Sub(old.created) < videoTTL {
			break
		}
		delete(s.byID, s.order[s.head])
		s.order[s.head] = ""
		s.head++
	}
	if s.head > len(s.order)/2 {
		s.order = append(s.order[:0], s.order[s.head:]...)
		s.head = 0
	}
	s.byID[v.id] = v
	s.order = append(s.order, v.id)
}

// get returns the video id, or nil when unknown or expired at now.
func (s *videoStore) get(id string, now time.Time) *video {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.byID[id]
	if v == nil || now.Sub(v.created) >= videoTTL {
		return nil
	}
	return v
}

// remove forgets the video id and reports whether it was known.
func (s *videoStore) remove(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.byID[id]
	delete(s.byID, id)
	return ok
}

// newest returns up to limit live videos, newest first.
func (s *videoStore) newest(limit int, now time.Time) []*video {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*video
	for i := len(s.order) - 1; i >= s.head && len(out) < limit; i-- {
		if v := s.byID[s.order[i]]; v != nil && now.Sub(v.created) < videoTTL {
			out = append(out, v)
		}
	}
	return out
}
