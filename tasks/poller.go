package tasks

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/jobs"
	"github.com/caddy-air/caddy-air/store"
)

// mediaSweepInterval is how often expired media are deleted. They are not
// served past their expiry whether deleted or not; the sweep frees the
// disk.
const mediaSweepInterval = time.Minute

// Run polls the upstream of running tasks and charges succeeded ones until
// ctx is done. It picks up every working task of the store, so a new
// Service on the same store resumes what a stopped one left. Several
// Services may run on one store: a task is claimed for a lease
// (store.Tasks.ClaimDue) before anyone works on it (jobs.Poller). Run also
// deletes expired media, at once and then every minute, and ends the holds
// of tasks that ended elsewhere or are gone (holdSweepInterval).
func (s *Service) Run(ctx context.Context) { s.poller.Run(ctx) }

// newPoller returns the durable poller of s's tasks: each claimed task is
// advanced one step (work).
func (s *Service) newPoller() (*jobs.Poller[store.TaskRecord], error) {
	return jobs.New(jobs.Config[store.TaskRecord]{
		Name:        "tasks",
		Claim:       s.store.ClaimDue,
		Step:        s.workRecord,
		Lease:       s.lease,
		Tick:        max(s.pollInterval/4, time.Millisecond),
		Concurrency: s.concurrency,
		Chores: []jobs.Chore{
			{Every: mediaSweepInterval, AtStart: true, Run: s.expireMedia},
			{Every: holdSweepInterval, Run: s.sweepHolds},
		},
		Now:    s.now,
		Logger: s.log,
	})
}

// expireMedia deletes the re-hosted files that expired.
func (s *Service) expireMedia(ctx context.Context) {
	n, err := s.media.Expire(ctx)
	if err != nil && ctx.Err() == nil {
		s.log.Error("deleting expired media", zap.Error(err))
	}
	if n > 0 {
		s.log.Debug("deleted expired media", zap.Int("files", n))
	}
}

// workRecord advances the task of claimed record rec by one step.
func (s *Service) workRecord(ctx context.Context, rec store.TaskRecord) {
	t, err := decode(&rec)
	if err != nil {
		s.log.Error("claiming task", zap.String("task", rec.ID), zap.Error(err))
		return
	}
	s.work(ctx, t)
}

// work advances claimed task t by one step.
func (s *Service) work(ctx context.Context, t *Task) {
	if t.Status == StatusSucceeded {
		s.charge(ctx, t)
		return
	}
	s.advance(ctx, t)
}

// advance polls the upstream of a claimed running task once and records
// what it learned.
func (s *Service) advance(ctx context.Context, t *Task) {
	now := s.now()
	if now.Sub(t.CreatedAt) > s.maxRunning {
		s.fail(ctx, t, errTimeout, "the provider did not finish within "+s.maxRunning.String())
		return
	}
	if t.UpstreamID == "" {
		s.fail(ctx, t, errUpstream, "the gateway stopped before the provider accepted the task; it may be created again")
		return
	}
	p := s.routes.Provider(t.Provider)
	ad := adapterFor(t.Protocol)
	if p == nil || ad == nil {
		s.log.Warn("task's provider is no longer configured", zap.String("task", t.ID), zap.String("provider", t.Provider))
		s.retry(ctx, t, 0)
		return
	}
	c := &call{client: s.client, p: p, attempt: attemptFor(p, t), kind: t.Type, model: t.UpstreamModel, maxDepth: s.maxDepth}
	pctx, cancel := context.WithTimeout(ctx, min(timeout(p), pollTimeout))
	out, err := ad.poll(pctx, c, t.UpstreamID)
	cancel()
	s.obs.TaskPolled(t.Provider, err != nil)
	if err == nil && out.state == StatusSucceeded {
		dctx, cancel := context.WithTimeout(ctx, timeout(p))
		_, err = s.finish(dctx, t, out, c)
		cancel()
		if err == nil {
			return
		}
	}
	if err != nil {
		s.pollFailed(ctx, t, err)
		return
	}
	if out.state == StatusFailed {
		s.fail(ctx, t, out.errName, out.errMsg)
		return
	}
	s.progress(ctx, t, out.progress)
}

// pollFailed handles an upstream error: a lost or rejected job fails the
// task, anything else is retried after a backoff; a shutdown hands the task
// back at once.
func (s *Service) pollFailed(ctx context.Context, t *Task, err error) {
	if ctx.Err() != nil {
		s.release(t)
		return
	}
	var ue *upstreamError
	if errors.As(err, &ue) && ue.permanent {
		s.fail(ctx, t, ue.name, ue.msg)
		return
	}
	s.log.Warn("polling task", zap.String("task", t.ID), zap.Int("failures", t.Failures+1), zap.Error(err))
	var after time.Duration
	if ue != nil {
		after = ue.retryAfter
	}
	s.retry(ctx, t, after)
}

// retry schedules the next poll of t after a backoff.
func (s *Service) retry(ctx context.Context, t *Task, retryAfter time.Duration) {
	_, _, err := s.update(ctx, t.ID, func(t *Task, now time.Time) bool {
		if t.Terminal() {
			return false
		}
		t.Failures++
		t.NextPollAt = now.Add(s.backoff(t.Failures, retryAfter))
		return true
	})
	if err != nil && ctx.Err() == nil {
		s.log.Error("scheduling task retry", zap.String("task", t.ID), zap.Error(err))
	}
}

// release hands a claimed task back so that the next poller (after a
// restart, say) need not wait for the lease to run out.
func (s *Service) release(t *Task) {
	ctx := context.Background()
	_, _, _ = s.update(ctx, t.ID, func(t *Task, now time.Time) bool {
		if t.Terminal() {
			return false
		}
		t.NextPollAt = now
		return true
	})
}

// progress records a running task's progress: the provider's when it
// reports one, else derived from the elapsed time against the model's
// typical duration; never above 99 before the end, never going back.
func (s *Service) progress(ctx context.Context, t *Task, reported int) {
	_, _, err := s.update(ctx, t.ID, func(t *Task, now time.Time) bool {
		if t.Terminal() {
			return false
		}
		p := reported
		if p < 0 {
			typical := t.TypicalDuration
			if typical <= 0 {
				typical = defaultTypicalDuration
			}
			p = int(100 * now.Sub(t.CreatedAt) / typical)
		}
		t.Progress = max(t.Progress, min(p, 99))
		t.Failures = 0
		t.NextPollAt = now.Add(s.pollInterval)
		return true
	})
	if err != nil && ctx.Err() == nil {
		s.log.Error("recording task progress", zap.String("task", t.ID), zap.Error(err))
	}
}
