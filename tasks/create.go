package tasks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/store"
)

// Create validates a POST /v1/tasks body and starts the task. The task is
// persisted before anything is sent upstream. An image task is generated
// before Create returns, so it comes back succeeded or failed; a video task
// comes back running and is finished by Run. Once persisted, the work goes
// on even if ctx is cancelled (the client hung up). mediaBase is the public
// URL prefix under which Media serves re-hosted files.
func (s *Service) Create(ctx context.Context, owner Owner, body []byte, mediaBase string) (*Task, *apierror.Error) {
	return s.CreateFrom(ctx, owner, body, nil, mediaBase)
}

// CreateFrom is Create on a body held by pin, a pooled buffer say: the
// upstream requests send spans of body without copying it, each pinning
// it until its transport closed it, which may be after CreateFrom
// returned. The caller keeps its own hold until CreateFrom returns; a nil
// pin means body stays valid as long as it is referenced.
func (s *Service) CreateFrom(ctx context.Context, owner Owner, body []byte, pin Pinner, mediaBase string) (*Task, *apierror.Error) {
	return s.CreateHeld(ctx, owner, body, pin, mediaBase, nil)
}

// CreateHeld is CreateFrom that, once the body is valid, asks admit to
// reserve what the task is estimated to cost (the images or the video
// seconds it asks for) before anything is stored or sent upstream. A
// refusal is returned as is. The hold admit returns is kept while the task
// runs and ended exactly once: it becomes the task's charge when it
// succeeds, and is released when it fails or expires, or cancelled when
// the create is refused after all. A nil admit reserves nothing.
func (s *Service) CreateHeld(ctx context.Context, owner Owner, body []byte, pin Pinner, mediaBase string, admit Admit) (*Task, *apierror.Error) {
	return s.create(ctx, owner, body, pin, mediaBase, admit, false)
}

// CreateImagesHeld is CreateHeld for /v1/images/generations, OpenAI's own
// API: an OpenAI-protocol provider gets the client's body with only the
// model replaced by the upstream one (no size added, no member dropped,
// "size":"auto" allowed), and the succeeded task carries the provider's
// answer in Reply for the client. Other providers are served as by
// CreateHeld, with no Reply.
func (s *Service) CreateImagesHeld(ctx context.Context, owner Owner, body []byte, pin Pinner, mediaBase string, admit Admit) (*Task, *apierror.Error) {
	return s.create(ctx, owner, body, pin, mediaBase, admit, true)
}

// PassesImagesThrough reports whether a provider of protocol speaks
// OpenAI's Images API, so that CreateImagesHeld passes its requests and
// answers through: the caller then leaves response_format in the body.
func PassesImagesThrough(protocol string) bool { return protocol == providers.ProtocolOpenAI }

// create is CreateHeld, passing an images create through when asked.
func (s *Service) create(ctx context.Context, owner Owner, body []byte, pin Pinner, mediaBase string, admit Admit, passThrough bool) (*Task, *apierror.Error) {
	r, aerr := parseCreate(body, s.routes, s.maxDepth, passThrough)
	traceRoute(ctx, body, r, aerr)
	if aerr != nil {
		return nil, aerr
	}
	r.pin = pin
	p := r.route.Provider
	ad := adapterFor(p.Protocol)
	if ad == nil {
		s.log.Error("model routed to a provider that cannot generate media",
			zap.String("model", r.model), zap.String("provider", p.Name), zap.String("protocol", p.Protocol))
		return nil, apierror.Internal()
	}
	var hold Hold
	if admit != nil {
		if hold, aerr = admit(r.estimate()); aerr != nil {
			return nil, aerr
		}
	}
	refuse := func(aerr *apierror.Error) (*Task, *apierror.Error) {
		if hold != nil {
			hold.Cancel()
		}
		return nil, aerr
	}
	if !s.acquireCreate() {
		return refuse(overloaded())
	}
	defer s.releaseCreate()
	id, err := newTaskID()
	if err != nil {
		return refuse(apierror.Internal())
	}
	now := s.now().UTC()
	t := &Task{
		ID: id, User: owner.User, KeyID: owner.KeyID, Model: r.model, Type: r.route.Kind,
		Status: StatusRunning, CreatedAt: now, Provider: p.Name, Protocol: p.Protocol,
		UpstreamModel: upstreamModel(r.route, r.model), MediaBase: mediaBase,
		TypicalDuration: r.route.TypicalDuration, Seconds: r.seconds,
		// Until the upstream accepted the job, only this call works on it.
		NextPollAt: now.Add(timeout(p) + s.lease),
	}
	if err := s.insert(ctx, t); err != nil {
		s.log.Error("storing task", zap.String("task", id), zap.Error(err))
		if errors.Is(err, store.ErrStorageFull) {
			return refuse(storageFull())
		}
		return refuse(apierror.Internal())
	}
	// From here the task ends by failing or succeeding, which ends the
	// hold; the poller ends it if the task ends elsewhere.
	if hold != nil {
		s.holds.Keep(id, hold)
	}
	s.obs.TaskStatus(t.Type, StatusRunning)
	ctx = context.WithoutCancel(ctx)
	if t.Type == providers.KindImage {
		ctx, cancel := context.WithTimeout(ctx, timeout(p))
		defer cancel()
		return s.generateImage(ctx, t, r, ad, p), nil
	}
	return s.startVideo(ctx, t, r, ad, p), nil
}

// storageFull is the answer to a create whose task the store refused for
// want of disk space, before anything went upstream: 507 storage_full, as
// the gateway's free-space guard answers.
func storageFull() *apierror.Error {
	e := apierror.New(http.StatusInsufficientStorage, apierror.TypeServer, "storage_full",
		"the gateway cannot record new requests: its storage is full")
	e.RetryAfter = 30
	return e
}

// overloadedRetryAfter is the Retry-After of a create refused for too many
// creates at once: about the time an image takes.
const overloadedRetryAfter = 10

// overloaded is the answer to a create beyond MaxConcurrentCreates.
func overloaded() *apierror.Error {
	e := apierror.New(http.StatusServiceUnavailable, apierror.TypeServer, "server_overloaded",
		"the gateway is generating too many tasks at once; retry shortly")
	e.RetryAfter = overloadedRetryAfter
	return e
}

// acquireCreate reserves one of the MaxConcurrentCreates slots, without
// waiting; it reports whether it got one.
func (s *Service) acquireCreate() bool {
	select {
	case s.creates <- struct{}{}:
		return true
	default:
		return false
	}
}

// releaseCreate gives back a slot taken by acquireCreate.
func (s *Service) releaseCreate() { <-s.creates }

// generateImage runs an image task to its end and returns it.
func (s *Service) generateImage(ctx context.Context, t *Task, r *request, ad adapter, p *providers.Provider) *Task {
	sub, err := s.submit(ctx, t, r, ad)
	if err != nil {
		return s.failSubmit(ctx, t, sub, err)
	}
	// Inline images are held until they are stored.
	defer sub.out.release()
	out, c := sub.out, sub.call
	if out.state == StatusRunning {
		if t, err = s.accepted(ctx, t, out, c, t.NextPollAt); err != nil {
			return t
		}
	}
	for out.state == StatusRunning {
		wait := s.imagePoll
		select {
		case <-ctx.Done():
			return s.failWith(ctx, t, &upstreamError{name: errTimeout, msg: "the image was not generated within " + timeout(p).String()})
		case <-time.After(wait):
		}
		next, err := ad.poll(ctx, c, out.upstreamID)
		s.obs.TaskPolled(c.provider, err != nil)
		if err != nil {
			var ue *upstreamError
			if errors.As(err, &ue) && (ue.permanent || ctx.Err() != nil) {
				return s.failWith(ctx, t, err)
			}
			s.log.Warn("polling image task", zap.String("task", t.ID), zap.Error(err))
			continue
		}
		out = next
	}
	done := s.conclude(ctx, t, out, c)
	if out.reply != nil && done.Status == StatusSucceeded {
		done.Reply = out.reply
	}
	return done
}

// startVideo submits a video task and returns it, normally running.
func (s *Service) startVideo(ctx context.Context, t *Task, r *request, ad adapter, p *providers.Provider) *Task {
	sctx, cancel := context.WithTimeout(ctx, timeout(p))
	sub, err := s.submit(sctx, t, r, ad)
	cancel()
	if err != nil {
		return s.failSubmit(ctx, t, sub, err)
	}
	out, c := sub.out, sub.call
	if out.state != StatusRunning {
		ctx, cancel := context.WithTimeout(ctx, timeout(p))
		defer cancel()
		return s.conclude(ctx, t, out, c)
	}
	t, _ = s.accepted(ctx, t, out, c, s.now().Add(s.pollInterval))
	return t
}

// conclude applies a terminal outcome to t and returns the task.
func (s *Service) conclude(ctx context.Context, t *Task, out *outcome, c *call) *Task {
	if out.state == StatusFailed {
		return s.fail(ctx, t, out.errName, out.errMsg)
	}
	done, err := s.finish(ctx, t, out, c)
	if err != nil {
		return s.failWith(ctx, t, err)
	}
	return done
}

// accepted records the upstream job of a running task, and when the poller
// may next look at it. If the task is gone or already terminal it returns
// the stored task and an error.
func (s *Service) accepted(ctx context.Context, t *Task, out *outcome, c *call, next time.Time) (*Task, error) {
	stored, changed, err := s.update(ctx, t.ID, func(t *Task, now time.Time) bool {
		if t.Terminal() {
			return false
		}
		t.UpstreamID = out.upstreamID
		c.servedBy(t)
		t.BaseURL = c.attempt.BaseURL
		t.KeyHash = keyHash(c.attempt.APIKey)
		t.NextPollAt = next
		return true
	})
	if err != nil {
		s.log.Error("recording upstream job", zap.String("task", t.ID), zap.Error(err))
		return t, err
	}
	if !changed {
		return stored, errors.New("task already ended")
	}
	return stored, nil
}

// failWith fails t with the error of an upstream exchange.
func (s *Service) failWith(ctx context.Context, t *Task, err error) *Task {
	return s.failSubmit(ctx, t, nil, err)
}

// failSubmit fails t with the error of an upstream exchange; when sub
// holds the last submission attempt's call, the task records the
// provider and deployment that attempt went to.
func (s *Service) failSubmit(ctx context.Context, t *Task, sub *submitted, err error) *Task {
	var ue *upstreamError
	if !errors.As(err, &ue) {
		s.log.Error("task failed inside the gateway", zap.String("task", t.ID), zap.Error(err))
		ue = &upstreamError{name: errUpstream, msg: "the gateway could not complete the task"}
	}
	var c *call
	if sub != nil {
		c = sub.call
	}
	return s.failBy(ctx, t, c, ue.name, ue.msg)
}

// upstreamModel is the model id sent upstream.
func upstreamModel(r *providers.Route, model string) string {
	if r.UpstreamModel != "" {
		return r.UpstreamModel
	}
	return model
}

// timeout bounds a whole image generation, a video submission and a
// download.
func timeout(p *providers.Provider) time.Duration {
	if p.Timeout > 0 {
		return p.Timeout
	}
	return defaultTimeout
}

// keyHash identifies a provider key without storing it.
func keyHash(key string) string {
	if key == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8])
}

// attemptFor returns the base URL and key a job was submitted with, so
// that it is polled on the same account. If the configuration changed
// since, it falls back to the same base URL with the first key, then to the
// provider's first base URL and key.
func attemptFor(p *providers.Provider, t *Task) providers.Attempt {
	keys := p.APIKeys
	if len(keys) == 0 {
		keys = []string{""}
	}
	sameBase := false
	for _, base := range p.BaseURLs {
		base = strings.TrimRight(base, "/")
		if base != t.BaseURL {
			continue
		}
		sameBase = true
		for _, key := range keys {
			if keyHash(key) == t.KeyHash {
				return providers.Attempt{BaseURL: base, APIKey: key}
			}
		}
	}
	if sameBase {
		return providers.Attempt{BaseURL: t.BaseURL, APIKey: keys[0]}
	}
	if len(p.BaseURLs) == 0 {
		return providers.Attempt{BaseURL: t.BaseURL}
	}
	return providers.Attempt{BaseURL: strings.TrimRight(p.BaseURLs[0], "/"), APIKey: keys[0]}
}
