// Package mockprovider is a deterministic, offline stand-in for real LLM and
// media providers. Its Handler speaks the wire formats of OpenAI chat
// completions, responses, images and videos, of Anthropic messages, and
// of Google's Gemini API and Vertex AI (generateContent, see serveGoogle), closely enough
// for the official SDKs to parse every answer, so that the gateway can be
// run, tested and benchmarked without network access or provider accounts.
//
// The handler routes on the part of the path after the last "/v1", so it
// works mounted under any prefix: with base URL http://host/mock/v1, a
// request to /mock/v1/chat/completions is a chat completion.
//
// Requests can steer the mock with extension fields in the JSON body:
// mock_chunks (number of streamed content chunks, default 8),
// mock_chunk_delay_ms (pause between streamed events), mock_status (answer
// with that HTTP error status), mock_usage (false omits usage), and the
// charge fields mock_audio_tokens, mock_web_searches, mock_web_fetches,
// mock_file_searches, mock_code_sessions and mock_image_calls (see
// charges); a video
// request also takes mock_content_bytes (the length of the video's
// content, at most 256 MiB, streamed, for measuring large downloads).
//
// Config.Faults make a whole instance misbehave instead: a share of its
// requests answered with an error status, held (hang, slow), reset, or cut
// mid-stream, optionally only for a while after start. Two instances, one
// with faults, then stand for a healthy and a failing upstream.
package mockprovider

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/caddy-air/caddy-air/jsonlimit"
)

// Config configures a mock provider.
type Config struct {
	// APIKey, if set, is the key every request must carry, as
	// "Authorization: Bearer <key>" or "x-api-key: <key>"; other requests
	// get a 401 in the provider's error shape. Image files are served
	// without a key, like the pre-signed URLs of real providers.
	APIKey string
	// VideoDuration is how long a mock video takes from creation to
	// completion. Default: 10s.
	VideoDuration time.Duration
	// FailureRate is the probability, from 0 to 1, that a video fails. The
	// draw is deterministic: a PRNG seeded by the video id.
	FailureRate float64
	// ChunkDelay is the pause between two streamed events. Default: none.
	ChunkDelay time.Duration
	// MaxJSONDepth is how deeply a request body may nest; deeper ones get
	// 400 before anything reads them. Default: jsonlimit.DefaultMaxDepth.
	MaxJSONDepth int
	// Faults fail a share of this instance's requests (see Fault). Their
	// rates add up to at most 1.
	Faults []Fault
	// FaultSeed seeds the draws that pick which requests fail, so that a
	// run can be repeated. Default (0): a random seed.
	FaultSeed uint64
	// Clock returns the current time. Default: time.Now.
	Clock func() time.Time
	// Bedrock, if set, mounts a fake Bedrock Runtime (see BedrockConfig)
	// on the Converse paths, …/model/{id}/converse and converse-stream,
	// under any prefix.
	Bedrock *BedrockConfig
	// AzureKey, if set, mounts a fake Azure OpenAI resource requiring
	// this api-key on the deployment and v1 paths, …/openai/deployments/…
	// and …/openai/v1/…, under any prefix; it answers as the mock's chat
	// completions.
	AzureKey string
	// OriginalPath, if set, returns the path of r as the client sent it,
	// before a proxy stripped a prefix (Caddy's handle_path does). Image
	// URLs point at the part of that path before its last "/v1", so that
	// clients can fetch them. When nil or empty, r.URL.Path is used, and
	// the X-Forwarded-Prefix header when the path has no prefix.
	OriginalPath func(r *http.Request) string
	// VertexServiceAccount is the key file (JSON) of the service account
	// the fake Vertex AI serves: its token endpoint (the mount's /token)
	// grants tokens for JWT assertions signed by the account's key, and
	// its /v1/projects/… endpoints take only those tokens. Empty disables
	// the fake Vertex AI; the fake Gemini API (/v1beta/models/…) is always
	// on, and checks APIKey in x-goog-api-key.
	VertexServiceAccount []byte
	// VertexProject and VertexRegion are the fake Vertex AI's location.
	// Default: DefaultVertexProject, DefaultVertexRegion.
	VertexProject, VertexRegion string
}

// Handler is the mock provider. It implements http.Handler and is safe for
// concurrent use.
type Handler struct {
	cfg    Config
	clock  func() time.Time
	seed   maphash.Seed
	cache  *prefixCache
	videos *videoStore
	// responses keeps the Responses API's stored responses.
	responses respStore
	faults    *faults
	// clouds are the cloud providers' fakes it mounts.
	clouds clouds
	google *google
	// batches keeps the Files and Batch APIs' files and batches.
	batches     *batchStore
	batchesOnce sync.Once
}

// maxBodyBytes bounds request bodies.
const maxBodyBytes = 32 << 20

// Validate reports whether c's faults are valid: rates from 0 to 1 that
// add up to at most 1, statuses from 400 to 599, no negative duration.
func (c *Config) Validate() error {
	if len(c.VertexServiceAccount) > 0 {
		if _, _, err := serviceAccount(c.VertexServiceAccount); err != nil {
			return err
		}
	}
	return validateFaults(c.Faults)
}

// New returns a mock provider configured by c. It panics when c.Validate
// fails.
func New(c Config) *Handler {
	if err := c.Validate(); err != nil {
		panic("mockprovider: " + err.Error())
	}
	if c.VideoDuration <= 0 {
		c.VideoDuration = 10 * time.Second
	}
	if c.FailureRate < 0 {
		c.FailureRate = 0
	}
	c.MaxJSONDepth = jsonlimit.OrDefault(c.MaxJSONDepth)
	clock := c.Clock
	if clock == nil {
		clock = time.Now
	}
	seed := c.FaultSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	g, err := newGoogle(&c)
	if err != nil {
		panic("mockprovider: " + err.Error())
	}
	h := &Handler{
		google: g,
		cfg:    c,
		clock:  clock,
		seed:   maphash.MakeSeed(),
		cache:  newPrefixCache(maxCacheEntries),
		videos: newVideoStore(maxVideos),
		faults: &faults{list: c.Faults, start: clock(), seed: seed, done: make(chan struct{})},
	}
	h.clouds = newClouds(c, h)
	return h
}

// Close ends the requests that a hang or slow fault holds, at once; the
// handler must not be used afterwards.
func (h *Handler) Close() {
	h.faults.close()
}

// fault applies the instance's fault, if this request draws one, and
// returns the writer to serve it with: nil when it has been answered.
// finish must run once the request is served.
func (h *Handler) fault(w http.ResponseWriter, r *http.Request, anthropic bool) (http.ResponseWriter, func()) {
	f := h.faults.pick(h.clock())
	if f == nil {
		return w, func() {}
	}
	return h.faults.inject(w, r, f, anthropic)
}

// ServeHTTP answers r as the provider whose endpoint the path names.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.serveGoogle(w, r) || h.serveCloud(w, r) {
		return
	}
	path := r.URL.Path
	if strings.HasSuffix(path, "/v2/rerank") {
		h.cohere(w, r)
		return
	}
	i := strings.LastIndex(path, "/v1/")
	if i < 0 {
		h.notFound(w, r)
		return
	}
	rest := path[i+3:]
	if rest == "/messages" || rest == "/messages/count_tokens" {
		w.Header().Set("Request-Id", newID("req_011", 24))
		if !h.authorized(r) {
			writeAnthropicError(w, http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
			return
		}
		w, finish := h.fault(w, r, true)
		if w == nil {
			return
		}
		defer finish()
		if !allow(w, r, http.MethodPost, true) {
			return
		}
		if r.Header.Get("Anthropic-Version") == "" {
			writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required")
			return
		}
		if rest == "/messages" {
			h.messages(w, r)
		} else {
			h.countTokens(w, r)
		}
		return
	}
	w.Header().Set("X-Request-Id", newID("req_", 32))
	if name, ok := strings.CutPrefix(rest, "/files/"); ok && !strings.HasPrefix(name, "file-") {
		if allow(w, r, http.MethodGet, false) {
			h.file(w, r, name)
		}
		return
	}
	serve := h.route(r, rest)
	if serve == nil {
		serve = h.batchRoute(r, rest)
	}
	if serve == nil {
		h.notFound(w, r)
		return
	}
	if !h.authorized(r) {
		writeOpenAIError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "", "Incorrect API key provided.")
		return
	}
	w, finish := h.fault(w, r, false)
	if w == nil {
		return
	}
	defer finish()
	serve(w, r)
}

// route returns the function answering the OpenAI endpoint rest (the path
// after "/v1"), or nil when there is none.
func (h *Handler) route(r *http.Request, rest string) http.HandlerFunc {
	only := func(method string, f http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if allow(w, r, method, false) {
				f(w, r)
			}
		}
	}
	switch {
	case rest == "/chat/completions":
		return only(http.MethodPost, h.chat)
	case rest == "/embeddings":
		return only(http.MethodPost, h.embeddings)
	case rest == "/moderations":
		return only(http.MethodPost, h.moderations)
	case rest == "/audio/speech":
		return only(http.MethodPost, h.speech)
	case rest == "/audio/transcriptions" || rest == "/audio/translations":
		translate := rest == "/audio/translations"
		return only(http.MethodPost, func(w http.ResponseWriter, r *http.Request) { h.transcribe(w, r, translate) })
	case rest == "/rerank":
		return only(http.MethodPost, func(w http.ResponseWriter, r *http.Request) { h.rerank(w, r, false) })
	case rest == "/images/generations":
		return only(http.MethodPost, h.images)
	case rest == "/videos" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		return h.listVideos
	case rest == "/videos":
		return only(http.MethodPost, h.createVideo)
	case strings.HasPrefix(rest, "/videos/"):
		id, sub, _ := strings.Cut(rest[len("/videos/"):], "/")
		if id == "" || (sub != "" && sub != "content") {
			return nil
		}
		return func(w http.ResponseWriter, r *http.Request) { h.video(w, r, id, sub) }
	case rest == "/responses" || strings.HasPrefix(rest, "/responses/"):
		return h.responsesRoute(r, rest)
	case rest == "/models":
		return only(http.MethodGet, h.listModels)
	case strings.HasPrefix(rest, "/models/"):
		id := rest[len("/models/"):]
		return only(http.MethodGet, func(w http.ResponseWriter, r *http.Request) { h.getModel(w, r, id) })
	}
	return nil
}

// batchStore returns h's files and batches.
func (h *Handler) batchStore() *batchStore {
	h.batchesOnce.Do(func() { h.batches = &batchStore{files: map[string][]byte{}, batches: map[string]*mockBatch{}} })
	return h.batches
}

// notFound answers an unknown endpoint in the OpenAI error shape.
func (h *Handler) notFound(w http.ResponseWriter, r *http.Request) {
	writeOpenAIError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", "", "Invalid URL ("+r.Method+" "+r.URL.Path+")")
}

// authorized reports whether r carries the configured API key.
func (h *Handler) authorized(r *http.Request) bool {
	if h.cfg.APIKey == "" {
		return true
	}
	key := r.Header.Get("X-Api-Key")
	if key == "" {
		auth := r.Header.Get("Authorization")
		if len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") {
			key = strings.TrimSpace(auth[7:])
		}
	}
	return subtle.ConstantTimeCompare([]byte(key), []byte(h.cfg.APIKey)) == 1
}

// allow reports whether r uses method, answering 405 otherwise (HEAD is
// accepted for GET).
func allow(w http.ResponseWriter, r *http.Request, method string, anthropic bool) bool {
	if r.Method == method || (method == http.MethodGet && r.Method == http.MethodHead) {
		return true
	}
	w.Header().Set("Allow", method)
	msg := "method " + r.Method + " not allowed; use " + method
	if anthropic {
		writeAnthropicError(w, http.StatusMethodNotAllowed, "invalid_request_error", msg)
	} else {
		writeOpenAIError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "", msg)
	}
	return false
}

// readBody reads r's body, bounded by maxBodyBytes. The returned status is
// the HTTP status to answer with when err is not nil.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, int, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err == nil {
		return body, 0, nil
	}
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, http.StatusRequestEntityTooLarge, errors.New("request body too large")
	}
	return nil, http.StatusBadRequest, errors.New("reading request body: " + err.Error())
}

// bodyError checks a JSON request body before anything reads it. It
// returns "" for valid JSON nested at most MaxJSONDepth levels, a message
// naming the limit for deeper JSON, and invalid for anything else.
func (h *Handler) bodyError(body []byte, invalid string) string {
	err := jsonlimit.Check(body, h.cfg.MaxJSONDepth)
	var de *jsonlimit.DepthError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &de):
		return fmt.Sprintf("the request body nests deeper than the limit of %d levels", de.Limit)
	}
	return invalid
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// newID returns prefix followed by n random base62 characters.
func newID(prefix string, n int) string {
	b := make([]byte, len(prefix), len(prefix)+n)
	copy(b, prefix)
	var x uint64
	for i := range n {
		if i%10 == 0 {
			x = rand.Uint64()
		}
		b = append(b, base62[x%62])
		x /= 62
	}
	return string(b)
}
