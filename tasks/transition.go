package tasks

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/jobs"
	"github.com/caddy-air/caddy-air/providers"
)

// Default billed durations when neither the provider nor the client said.
const (
	defaultOpenAISeconds    = 4
	defaultDashScopeSeconds = 5
)

// finish makes task t succeeded with the outcome's media, re-hosting what
// must be. Only a non-terminal task can succeed: if another poller ended it
// first, the media stored here are deleted and the stored task returned.
// The winner charges the task before returning.
func (s *Service) finish(ctx context.Context, t *Task, out *outcome, c *call) (*Task, error) {
	id := t.ID
	refs := out.images
	if out.video != nil {
		refs = []mediaRef{*out.video}
	}
	urls, ids, err := s.rehost(ctx, c, t.MediaBase, refs)
	if err != nil {
		return nil, err
	}
	if bad := implausibleSeconds(t, out); bad != "" {
		s.log.Warn("provider reported an implausible video duration; billing the requested or default one",
			zap.String("task", id), zap.String("reported", bad), zap.Int64("requested", t.Seconds))
	}
	t, won, err := s.update(ctx, id, func(t *Task, now time.Time) bool {
		if t.Terminal() {
			return false
		}
		c.servedBy(t)
		t.Status = StatusSucceeded
		t.Progress = 100
		t.CompletedAt = &now
		t.Media = ids
		t.Failures = 0
		if t.Type == providers.KindImage {
			t.Images = len(urls)
			t.Usage = out.usage
			t.Output = &Output{ImageURL: urls[0]}
			if len(urls) > 1 {
				t.Output.ImageURLs = urls
			}
		} else {
			t.VideoSeconds = videoSeconds(t, out)
			t.Output = &Output{VideoURL: urls[0]}
		}
		t.Billing = BillingPending
		// Claims the charge: other pollers leave the task alone meanwhile.
		t.NextPollAt = now.Add(s.lease)
		return true
	})
	if err != nil || !won {
		s.deleteMedia(context.WithoutCancel(ctx), ids)
		return t, err
	}
	s.obs.TaskStatus(t.Type, StatusSucceeded)
	s.log.Info("task succeeded", zap.String("task", id), zap.String("model", t.Model),
		zap.Int("images", t.Images), zap.Int64("video_seconds", t.VideoSeconds))
	return s.charge(ctx, t), nil
}

// defaultVideoSeconds is the billed duration of a video when neither the
// provider nor the client said, by the provider's protocol.
func defaultVideoSeconds(protocol string) int64 {
	if protocol == providers.ProtocolDashScope {
		return defaultDashScopeSeconds
	}
	return defaultOpenAISeconds
}

// fail makes t failed with "<name>: <msg>", unless it already ended, and
// returns the stored task.
func (s *Service) fail(ctx context.Context, t *Task, name, msg string) *Task {
	return s.failBy(ctx, t, nil, name, msg)
}

// failBy is fail for a task whose last submission attempt was c (nil when
// none was made, or the task was accepted): the task records c's
// provider, deployment and models.
func (s *Service) failBy(ctx context.Context, t *Task, c *call, name, msg string) *Task {
	stored, changed, err := s.update(ctx, t.ID, func(t *Task, now time.Time) bool {
		if t.Terminal() {
			return false
		}
		if c != nil && t.UpstreamID == "" {
			c.servedBy(t)
		}
		t.Status = StatusFailed
		t.Error = name + ": " + msg
		t.CompletedAt = &now
		return true
	})
	if err != nil {
		s.log.Error("recording task failure", zap.String("task", t.ID), zap.Error(err))
		return t
	}
	if changed {
		s.releaseHold(t.ID)
		s.obs.TaskStatus(stored.Type, StatusFailed)
		s.log.Info("task failed", zap.String("task", t.ID), zap.String("model", t.Model), zap.String("error", stored.Error))
	}
	return stored
}

// charge bills a succeeded task whose charge is pending, then marks it
// billed. The caller must have claimed the task. If the Biller fails the
// task is left pending and the poller tries again after a backoff; a crash
// between the charge and the mark repeats the charge, which the Biller
// ignores by task id.
func (s *Service) charge(ctx context.Context, t *Task) *Task {
	if t.Status != StatusSucceeded || t.Billing != BillingPending {
		return t
	}
	c := Charge{
		TaskID: t.ID, User: t.User, KeyID: t.KeyID, Model: t.Model, Provider: t.Provider,
		Deployment: t.Deployment, ServedModel: t.ServedModel, Kind: t.Type, Images: t.Images, VideoSeconds: t.VideoSeconds,
	}
	if t.Usage != nil {
		c.Usage = t.Usage.Bounded()
	}
	if t.CompletedAt != nil && !t.CreatedAt.IsZero() {
		c.Duration = t.CompletedAt.Sub(t.CreatedAt)
	}
	// The task's hold, if this service took one, becomes the charge;
	// a retry, or a task without a hold, is charged by the Biller.
	held, err := s.holds.Charge(ctx, t.ID, c.Record())
	if !held && s.biller != nil {
		err = s.biller.ChargeTask(ctx, c)
	}
	if err != nil {
		s.log.Error("charging task", zap.String("task", t.ID), zap.Error(err))
		stored, _, uerr := s.update(context.WithoutCancel(ctx), t.ID, func(t *Task, now time.Time) bool {
			if t.Billing != BillingPending {
				return false
			}
			t.Failures++
			t.NextPollAt = now.Add(s.backoff(t.Failures, 0))
			return true
		})
		if uerr != nil {
			return t
		}
		return stored
	}
	stored, _, err := s.update(context.WithoutCancel(ctx), t.ID, func(t *Task, now time.Time) bool {
		if t.Billing != BillingPending {
			return false
		}
		t.Billing = BillingDone
		t.Failures = 0
		return true
	})
	if err != nil {
		s.log.Error("marking task billed", zap.String("task", t.ID), zap.Error(err))
		return t
	}
	return stored
}

// backoff is the wait before the next attempt after n consecutive errors:
// PollInterval doubled per error, at least what the provider asked for
// (retryAfter), and at most MaxBackoff whatever it asked for, so that a
// provider cannot put a task's polls off past MaxRunning (jobs.Backoff).
func (s *Service) backoff(n int, retryAfter time.Duration) time.Duration {
	return jobs.Backoff{Initial: s.pollInterval, Max: s.maxBackoff}.Next(n, retryAfter)
}
