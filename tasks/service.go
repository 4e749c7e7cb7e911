package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/health"
	"github.com/caddy-air/caddy-air/jobs"
	"github.com/caddy-air/caddy-air/jsonlimit"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/routing"
	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/upstream"
)

// Tasks are kept in Config.Store as JSON documents (store.TaskRecord), with
// the task's NextPollAt as the record's Due and needsWork as its Working;
// re-hosted media live in Config.Media.
const defaultTTL = 24 * time.Hour

// List limits (contract section 8).
const (
	defaultListLimit = 20
	maxListLimit     = 100
)

// Defaults of Config.
const (
	defaultPollInterval      = 5 * time.Second
	defaultImagePollInterval = 2 * time.Second
	defaultMaxBackoff        = 2 * time.Minute
	defaultLease             = 2 * time.Minute
	defaultMaxRunning        = 2 * time.Hour
	defaultMaxMedia          = 60 << 20
	defaultMaxCreates        = 64
	defaultTimeout           = 5 * time.Minute
	defaultTypicalDuration   = 3 * time.Minute
	pollTimeout              = 30 * time.Second
)

// Charge is what a finished task costs, handed to the Biller.
type Charge struct {
	// TaskID identifies the task; charges must be idempotent by it.
	TaskID string
	// User owns the task.
	User string
	// KeyID is the API key that created it.
	KeyID string
	// Model is the client's model id.
	Model string
	// Provider names the upstream provider.
	Provider string
	// Deployment is the deployment that accepted the task,
	// "provider/upstream model"; empty for tasks created before routing
	// recorded it.
	Deployment string
	// ServedModel is the fallback model that served the task, when it was
	// not Model.
	ServedModel string
	// Kind is "image" or "video".
	Kind string
	// Images is the number of images delivered (image tasks).
	Images int
	// VideoSeconds is the duration of the delivered video (video tasks).
	VideoSeconds int64
	// Usage is the token usage the provider reported for the images, zero
	// when it reported none.
	Usage billing.Usage
	// Duration is how long the task took, from its create until it
	// reached its final state; 0 when unknown.
	Duration time.Duration
}

// Biller records the charge of a succeeded task. ChargeTask must be
// idempotent by Charge.TaskID: after a crash it may be called again for a
// charge it already recorded.
type Biller interface {
	// ChargeTask records c; an error makes the poller try again later.
	ChargeTask(ctx context.Context, c Charge) error
}

// Config configures a Service. Only Store, Media and Routes are required.
type Config struct {
	// Store persists tasks and their leases.
	Store store.Tasks
	// Media keeps re-hosted images and videos.
	Media store.MediaStore
	// Routes maps model ids to providers.
	Routes *providers.Table
	// Client sends upstream requests; nil means a new http.Client. Media
	// downloads use a copy of its transport (see MediaFetchAllow).
	Client *http.Client
	// MediaFetchAllow lists further destinations the files a provider
	// names may be downloaded from, each a CIDR range, an address or a
	// host:port. Without it a download only connects to the host:port of
	// one of the task's provider's base URLs, or to public unicast
	// addresses; every other address (loopback, private, link-local,
	// CGNAT, ...) is refused when dialed, and the task fails.
	MediaFetchAllow []string
	// Biller is charged for succeeded tasks; nil charges nothing.
	Biller Biller
	// TTL is how long a task can be queried after creation; zero means 24 h.
	TTL time.Duration
	// MediaTTL is how long re-hosted media stay available; zero means 24 h.
	MediaTTL time.Duration
	// Clock returns the current time; nil means time.Now.
	Clock func() time.Time
	// PollInterval is how often a running video task is polled upstream;
	// zero means 5 s. It is also the first backoff step after an error.
	PollInterval time.Duration
	// ImagePollInterval is how often an image create polls an asynchronous
	// upstream (DashScope) before answering; zero means 2 s.
	ImagePollInterval time.Duration
	// MaxBackoff bounds the wait between polls after upstream errors; zero
	// means 2 min.
	MaxBackoff time.Duration
	// Lease is how long a poller owns a task it is working on before
	// another poller may take it over; zero means 2 min.
	Lease time.Duration
	// MaxRunning is how long a task may run before it fails with
	// UpstreamTimeout; zero means 2 h.
	MaxRunning time.Duration
	// MaxMediaBytes bounds a re-hosted file; zero means 60 MiB. A download
	// is stopped, and the task fails, once it goes beyond.
	MaxMediaBytes int64
	// Concurrency bounds the tasks one poller works on at once; zero means 8.
	Concurrency int
	// MaxJSONDepth bounds the nesting of the JSON the service reads: create
	// bodies (deeper ones get 400) and upstream answers (deeper ones are
	// upstream errors). Zero means jsonlimit.DefaultMaxDepth.
	MaxJSONDepth int
	// MaxConcurrentCreates bounds the creates that wait on an upstream at
	// once (an image create until its images are stored, a video create
	// until the provider accepted the job); beyond it Create answers 503
	// before contacting the upstream. Zero means 64.
	MaxConcurrentCreates int
	// Logger receives the service's logs; nil discards them.
	Logger *zap.Logger
	// Health, when set, counts the result of every submission to a
	// provider.
	Health *health.Tracker
	// Observer, if set, is told of task status changes and upstream polls.
	Observer Observer
	// Router picks the upstream of every submission; nil means a router
	// of Routes with default options. It must be built from Routes.
	Router *routing.Router
	// Attempts, if set, is told of every submission attempt.
	Attempts upstream.Observer
	// Buffers, if set, is charged with the large upstream answers the
	// service holds (see Buffers); an answer beyond it fails its task
	// with UpstreamError. Nil bounds each answer only.
	Buffers Buffers
	// Holds keeps the budget holds of running tasks (CreateHeld); give
	// the Services of successive configs the same one. Nil means a new
	// one.
	Holds *Holds
}

// Observer is told of what the service does, for metrics.
type Observer interface {
	// TaskStatus reports a task of kind (image, video) reaching status:
	// running when created, then succeeded or failed.
	TaskStatus(kind, status string)
	// TaskPolled reports an upstream poll of a task on provider, and
	// whether it failed.
	TaskPolled(provider string, failed bool)
}

// nopObserver observes nothing.
type nopObserver struct{}

func (nopObserver) TaskStatus(string, string) {}
func (nopObserver) TaskPolled(string, bool)   {}

// Service creates, serves and finishes tasks.
type Service struct {
	store        store.Tasks
	media        store.MediaStore
	routes       *providers.Table
	client       *http.Client
	fetch        *http.Transport
	biller       Biller
	ttl          time.Duration
	mediaTTL     time.Duration
	now          func() time.Time
	pollInterval time.Duration
	imagePoll    time.Duration
	maxBackoff   time.Duration
	lease        time.Duration
	maxRunning   time.Duration
	maxMedia     int64
	concurrency  int
	maxDepth     int
	creates      chan struct{}
	log          *zap.Logger
	health       *health.Tracker
	obs          Observer
	router       *routing.Router
	attempts     upstream.Observer
	holds        *Holds
	buffers      Buffers
	// poller runs the claims of due tasks (Run).
	poller *jobs.Poller[store.TaskRecord]
}

// New returns a Service for c.
func New(c Config) (*Service, error) {
	if c.Store == nil {
		return nil, errors.New("tasks: no store")
	}
	if c.Media == nil {
		return nil, errors.New("tasks: no media store")
	}
	if c.Routes == nil {
		return nil, errors.New("tasks: no routing table")
	}
	s := &Service{
		store: c.Store, media: c.Media, routes: c.Routes, client: c.Client, biller: c.Biller,
		ttl: or(c.TTL, defaultTTL), mediaTTL: or(c.MediaTTL, defaultMediaTTL),
		now: c.Clock, pollInterval: or(c.PollInterval, defaultPollInterval),
		imagePoll: or(c.ImagePollInterval, defaultImagePollInterval), maxBackoff: or(c.MaxBackoff, defaultMaxBackoff),
		lease: or(c.Lease, defaultLease), maxRunning: or(c.MaxRunning, defaultMaxRunning),
		maxMedia: c.MaxMediaBytes, concurrency: c.Concurrency, maxDepth: jsonlimit.OrDefault(c.MaxJSONDepth), log: c.Logger,
		health: c.Health, router: c.Router, attempts: c.Attempts, holds: c.Holds, buffers: c.Buffers,
	}
	if s.router == nil {
		s.router = routing.New(routing.Config{Table: c.Routes})
	}
	if s.client == nil {
		s.client = &http.Client{}
	}
	guard, err := newFetchGuard(c.MediaFetchAllow)
	if err != nil {
		return nil, err
	}
	s.fetch = guard.transport(s.client.Transport)
	if s.holds == nil {
		s.holds = NewHolds()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.maxMedia <= 0 {
		s.maxMedia = defaultMaxMedia
	}
	if c.MaxConcurrentCreates <= 0 {
		c.MaxConcurrentCreates = defaultMaxCreates
	}
	s.creates = make(chan struct{}, c.MaxConcurrentCreates)
	if s.log == nil {
		s.log = zap.NewNop()
	}
	s.obs = c.Observer
	if s.obs == nil {
		s.obs = nopObserver{}
	}
	if s.poller, err = s.newPoller(); err != nil {
		return nil, err
	}
	return s, nil
}

func or(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// expired reports whether t is past its query validity.
func (s *Service) expired(t *Task, now time.Time) bool {
	return !now.Before(t.CreatedAt.Add(s.ttl))
}

// record is the stored form of t.
func (s *Service) record(t *Task) (store.TaskRecord, error) {
	val, err := json.Marshal(t)
	if err != nil {
		return store.TaskRecord{}, err
	}
	return store.TaskRecord{
		ID: t.ID, User: t.User, Created: t.CreatedAt, Expires: t.CreatedAt.Add(s.ttl),
		Working: t.needsWork(), Due: t.NextPollAt, Data: val,
	}, nil
}

// decode returns the task of a stored record; the record's Due, which a
// claim moves, is its NextPollAt.
func decode(rec *store.TaskRecord) (*Task, error) {
	t := new(Task)
	if err := json.Unmarshal(rec.Data, t); err != nil {
		return nil, fmt.Errorf("decoding task %s: %w", rec.ID, err)
	}
	if rec.Working {
		t.NextPollAt = rec.Due
	}
	return t, nil
}

// insert persists a new task.
func (s *Service) insert(ctx context.Context, t *Task) error {
	rec, err := s.record(t)
	if err != nil {
		return err
	}
	return s.store.Insert(ctx, rec)
}

// update applies fn to the stored task atomically, writing it back if fn
// reports a change. It returns the task as fn left it and whether fn
// changed it; a missing task is store.ErrNotFound.
func (s *Service) update(ctx context.Context, id string, fn func(t *Task, now time.Time) bool) (*Task, bool, error) {
	var out *Task
	// A state change must not be lost because the work that led to it ran
	// out of time.
	_, changed, err := s.store.Update(context.WithoutCancel(ctx), id, func(rec *store.TaskRecord) (bool, error) {
		t, err := decode(rec)
		if err != nil {
			return false, err
		}
		out = t
		if !fn(t, s.now()) {
			return false, nil
		}
		if *rec, err = s.record(t); err != nil {
			return false, err
		}
		return true, nil
	})
	if err != nil {
		return nil, false, err
	}
	return out, changed, nil
}

// load reads a task, or returns store.ErrNotFound.
func (s *Service) load(ctx context.Context, id string) (*Task, error) {
	rec, err := s.store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return decode(&rec)
}

// taskNotFound is the answer for a task that does not exist, expired or
// belongs to someone else: the three cannot be told apart.
func taskNotFound(id string) *apierror.Error {
	return apierror.NotFound("task_not_found", "no task '"+id+"' was found; task ids can be queried for 24 hours").WithParam("task_id")
}
