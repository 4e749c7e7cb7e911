// Package batches serves OpenAI's Files and Batch APIs: files users
// upload (kept per user with a TTL in the store's media space, bounded in
// size and count), and batches of chat completions or embeddings that
// the gateway checks, submits to the provider that serves their model,
// polls through a jobs.Poller (one instance at a time, by lease), re-hosts
// the output and error files of, and bills line by line at the batch
// price (service tier "batch"), exactly once, on the ledger.
package batches

import (
	"context"
	"errors"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/holds"
	"github.com/caddy-air/caddy-air/jobs"
	"github.com/caddy-air/caddy-air/jsonlimit"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/routing"
	"github.com/caddy-air/caddy-air/store"
)

// Defaults of Config.
const (
	defaultMaxFileBytes = 100 << 20
	defaultMaxFiles     = 100
	defaultFileTTL      = 7 * 24 * time.Hour
	defaultMaxLines     = 50000
	defaultMaxLineBytes = 1 << 20
	defaultPoll         = 10 * time.Second
	defaultMaxBackoff   = 2 * time.Minute
	defaultLease        = 2 * time.Minute
	callTimeout         = 30 * time.Second
)

// DefaultMaxRunning is how long a batch is polled, by default, before
// the gateway gives up on it: its 24 h completion window, and two hours
// of the provider's lateness.
const DefaultMaxRunning = 26 * time.Hour

// Biller records the ledger record of a line of a batch's output;
// Charge must be idempotent by the record's ID (the ledger is).
type Biller interface {
	// Charge records rec; an error makes the poller try again later.
	Charge(ctx context.Context, rec billing.Record) error
}

// Admit reserves what a batch may cost (its estimate at the full price
// of model), or refuses it; the hold is kept until the batch ends.
type Admit func(model string, estimate billing.Usage) (holds.Hold, error)

// Config configures a Service. Files, Batches, Media and Routes are
// required.
type Config struct {
	// Files keeps the records of users' files.
	Files store.Tasks
	// Batches keeps batches and their leases.
	Batches store.Tasks
	// Media keeps the files' content.
	Media store.MediaStore
	// Routes maps model ids to providers.
	Routes *providers.Table
	// Router plans a batch's submission: its model's deployments, then
	// its fallbacks, with breakers and cooldowns. Nil means a router of
	// Routes with default options.
	Router *routing.Router
	// Transport sends upstream requests (through package upstream, which
	// follows no redirects); nil means http.DefaultTransport.
	Transport http.RoundTripper
	// Biller records the lines of finished batches; nil records none.
	Biller Biller
	// Holds keeps the budget holds of running batches; give the Services
	// of successive configs the same one. Nil means a new one.
	Holds *holds.Set
	// MaxFileBytes bounds an uploaded file; zero means 100 MiB.
	MaxFileBytes int64
	// MaxFiles bounds the files a user holds at once; zero means 100.
	MaxFiles int
	// FileTTL is how long a file, and a batch, is kept; zero means 7 days.
	FileTTL time.Duration
	// MaxLines bounds the requests of a batch; zero means 50,000.
	MaxLines int
	// PollInterval is how often a running batch is polled; zero means 10 s.
	PollInterval time.Duration
	// Lease is how long a poller owns a batch it works on; zero means 2 min.
	Lease time.Duration
	// MaxRunning is how long a batch may run before the gateway gives up
	// on it (expired); zero means 26 h.
	MaxRunning time.Duration
	// MaxJSONDepth bounds the nesting of the JSON read; zero means
	// jsonlimit.DefaultMaxDepth.
	MaxJSONDepth int
	// Clock returns the current time; nil means time.Now.
	Clock func() time.Time
	// Logger receives the service's logs; nil discards them.
	Logger *zap.Logger
}

// Service serves files and batches.
type Service struct {
	files, batches store.Tasks
	media          store.MediaStore
	routes         *providers.Table
	router         *routing.Router
	transport      http.RoundTripper
	biller         Biller
	holds          *holds.Set
	maxFileBytes   int64
	maxFiles       int
	fileTTL        time.Duration
	maxLines       int
	poll           time.Duration
	lease          time.Duration
	maxRunning     time.Duration
	maxDepth       int
	now            func() time.Time
	log            *zap.Logger
	backoff        jobs.Backoff
	poller         *jobs.Poller[store.TaskRecord]
}

// New returns the Service of c.
func New(c Config) (*Service, error) {
	if c.Files == nil || c.Batches == nil || c.Media == nil || c.Routes == nil {
		return nil, errors.New("batches: no store or routing table")
	}
	s := &Service{files: c.Files, batches: c.Batches, media: c.Media, routes: c.Routes, router: c.Router, transport: c.Transport,
		biller: c.Biller, holds: c.Holds, maxFileBytes: c.MaxFileBytes, maxFiles: c.MaxFiles, fileTTL: c.FileTTL,
		maxLines: c.MaxLines, poll: c.PollInterval, lease: c.Lease, maxRunning: c.MaxRunning,
		maxDepth: jsonlimit.OrDefault(c.MaxJSONDepth), now: c.Clock, log: c.Logger}
	if s.router == nil {
		s.router = routing.New(routing.Config{Table: c.Routes})
	}
	if s.holds == nil {
		s.holds = holds.New()
	}
	s.maxFileBytes = orInt(s.maxFileBytes, defaultMaxFileBytes)
	s.maxFiles = int(orInt(int64(s.maxFiles), defaultMaxFiles))
	s.maxLines = int(orInt(int64(s.maxLines), defaultMaxLines))
	s.fileTTL = time.Duration(orInt(int64(s.fileTTL), int64(defaultFileTTL)))
	s.poll = time.Duration(orInt(int64(s.poll), int64(defaultPoll)))
	s.lease = time.Duration(orInt(int64(s.lease), int64(defaultLease)))
	s.maxRunning = time.Duration(orInt(int64(s.maxRunning), int64(DefaultMaxRunning)))
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	s.backoff = jobs.Backoff{Initial: s.poll, Max: defaultMaxBackoff}
	var err error
	s.poller, err = jobs.New(jobs.Config[store.TaskRecord]{
		Name:  "batches",
		Claim: s.batches.ClaimDue,
		Step:  s.step,
		Lease: s.lease,
		Tick:  max(s.poll/4, time.Millisecond),
		Chores: []jobs.Chore{
			{Every: time.Minute, AtStart: true, Run: s.expireMedia},
			{Every: 30 * time.Second, Run: s.sweepHolds},
		},
		Now:    s.now,
		Logger: s.log,
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Run polls running batches, bills finished ones and deletes expired
// files until ctx is done. Several Services may run on one store: a
// batch is claimed for a lease before anyone works on it.
func (s *Service) Run(ctx context.Context) { s.poller.Run(ctx) }

// Sweep runs one sweep of the poller (for tests).
func (s *Service) Sweep(ctx context.Context) { s.poller.Sweep(ctx) }

// orInt is v, or def when v is not positive.
func orInt(v, def int64) int64 {
	if v <= 0 {
		return def
	}
	return v
}

// expireMedia deletes the content of expired files.
func (s *Service) expireMedia(ctx context.Context) {
	if _, err := s.media.Expire(ctx); err != nil && ctx.Err() == nil {
		s.log.Error("deleting expired files", zap.Error(err))
	}
}

// MaxFileBytes is the size limit of a file.
func (s *Service) MaxFileBytes() int64 { return s.maxFileBytes }
