package tasks

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/store"
)

// Get returns one of owner's tasks. It only reads the store: clients may
// poll it as often as they like without reaching the upstream.
func (s *Service) Get(ctx context.Context, owner Owner, id string) (*Task, *apierror.Error) {
	t, err := s.load(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, taskNotFound(id)
	}
	if err != nil {
		s.log.Error("reading task", zap.String("task", id), zap.Error(err))
		return nil, apierror.Internal()
	}
	if !owner.reads(t) || s.expired(t, s.now()) {
		return nil, taskNotFound(id)
	}
	return t, nil
}

// List returns owner's most recent tasks, newest first. limit must be from
// 1 to 100 (see ParseLimit).
func (s *Service) List(ctx context.Context, owner Owner, limit int) ([]*Task, *apierror.Error) {
	p, aerr := s.ListPage(ctx, owner, "", limit)
	if aerr != nil {
		return nil, aerr
	}
	return p.Tasks, nil
}

// Page is a page of a user's tasks, newest first.
type Page struct {
	// Tasks are the page's tasks.
	Tasks []*Task
	// HasMore says whether older tasks follow; the next page starts after
	// the last task of this one.
	HasMore bool
}

// ListPage returns up to limit of owner's tasks, newest first, that were
// created before the task after (the last task of the previous page; ""
// starts with the newest). limit must be from 1 to 100 (see ParseLimit).
// An after that names no task of owner's is a 400 on parameter "after".
func (s *Service) ListPage(ctx context.Context, owner Owner, after string, limit int) (*Page, *apierror.Error) {
	if limit < 1 || limit > maxListLimit {
		return nil, limitError()
	}
	now := s.now()
	var cursor store.TaskCursor
	if after != "" {
		t, aerr := s.Get(ctx, owner, after)
		if aerr != nil {
			if aerr.Status == http.StatusNotFound {
				return nil, apierror.InvalidRequest("after", fmt.Sprintf("after: no task '%s' to list after", after))
			}
			return nil, aerr
		}
		// The time the task was inserted with (its document keeps it to
		// the nanosecond), and its id for the tasks created at the same
		// instant.
		cursor = store.TaskCursor{Created: t.CreatedAt, ID: t.ID}
	}
	// One more than the page tells whether more follow. Tasks the owner
	// may not read (another model's, for a key with a scope) are skipped,
	// reading on until the page is full or the user's tasks end.
	p := &Page{Tasks: make([]*Task, 0, limit)}
	for {
		recs, err := s.store.ListByUser(ctx, owner.User, cursor, limit+1)
		if err != nil {
			s.log.Error("listing tasks", zap.String("user", owner.User), zap.Error(err))
			return nil, apierror.Internal()
		}
		for i := range recs {
			t, err := decode(&recs[i])
			if err != nil {
				s.log.Error("reading task", zap.String("task", recs[i].ID), zap.Error(err))
				return nil, apierror.Internal()
			}
			if !owner.reads(t) || s.expired(t, now) {
				continue
			}
			if len(p.Tasks) == limit {
				p.HasMore = true
				return p, nil
			}
			p.Tasks = append(p.Tasks, t)
		}
		if len(recs) <= limit {
			return p, nil
		}
		last := &recs[len(recs)-1]
		t, err := decode(last)
		if err != nil {
			return nil, apierror.Internal()
		}
		cursor = store.TaskCursor{Created: t.CreatedAt, ID: t.ID}
	}
}
