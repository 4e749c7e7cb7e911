package tasks

import (
	"context"
	"errors"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/jsonlimit"
)

// CheckCreate checks a POST /v1/tasks body before anything reads it, and
// returns the model it names: nothing reads the body before it is checked
// against the nesting limit maxDepth (the task service refuses other
// invalid bodies), and a member the gateway reads appears once, before
// the model is checked and the budget reserved by it.
func CheckCreate(body []byte, maxDepth int) (model string, aerr *apierror.Error) {
	var de *jsonlimit.DepthError
	if err := jsonlimit.Check(body, maxDepth); errors.As(err, &de) {
		return "", apierror.InvalidBody(err)
	}
	if aerr := CheckUnique(body, maxDepth, TaskMembers); aerr != nil {
		return "", aerr
	}
	return gjson.GetBytes(body, "model").String(), nil
}

// Caller is who creates a task, and what the server checks of it.
type Caller struct {
	// Owner is who creates the task.
	Owner Owner
	// Allow refuses a model the caller's key or team may not use.
	Allow func(model string) *apierror.Error
	// Guard refuses a create while the storage cannot take records.
	Guard func() *apierror.Error
	// Admit reserves what the task asks for against the caller's spend
	// and rate limits (CreateHeld).
	Admit Admit
	// MediaBase is the absolute URL prefix of re-hosted media.
	MediaBase string
}

// CreateFor creates the task of body, checked by CheckCreate and naming
// model, for c: the model must be c's to use and the storage able to
// take records. Spend and rate limits apply before any upstream call:
// c.Admit reserves the images or video seconds the create asks for once
// the body is valid, the hold is kept while the task runs and turned
// into the charge when it succeeds (or given back when it fails). A
// created task counts as a request against the rate limits; a refused
// one does not.
func (s *Service) CreateFor(ctx context.Context, c Caller, model string, body []byte, pin Pinner) (*Task, *apierror.Error) {
	if aerr := c.Allow(model); aerr != nil {
		return nil, aerr
	}
	if aerr := c.Guard(); aerr != nil {
		return nil, aerr
	}
	return s.CreateHeld(ctx, c.Owner, body, pin, c.MediaBase, c.Admit)
}
