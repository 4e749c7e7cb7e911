package keys

import (
	"context"
	"errors"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// Change is what Update changes of a key: each field that is not nil
// replaces the key's.
type Change struct {
	// Name is the key's new label.
	Name *string `json:"name,omitempty"`
	// Models are the model ids or globs the key may use from now on;
	// empty allows every model.
	Models *[]string `json:"models,omitempty"`
	// ExpiresAt is the key's new expiry; with NoExpiry set the key never
	// expires.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// NoExpiry removes the key's expiry.
	NoExpiry bool `json:"no_expiry,omitempty"`
	// AllowIPs are the CIDRs the key may be used from from now on; empty
	// allows every address.
	AllowIPs *[]string `json:"allow_ips,omitempty"`
	// LogRequests switches request logs of the key on or off.
	LogRequests *bool `json:"log_requests,omitempty"`
}

// Update changes the name, models, expiry or allowed IPs of key id (ErrNoSuchKey if
// there is none), checked as Create checks them; every instance's cache
// drops the key, so the change applies to its next request. A revoked key
// stays revoked.
func (s *Service) Update(ctx context.Context, id string, c Change) (*Key, error) {
	stored, err := s.store.List(ctx, "")
	if err != nil {
		return nil, err
	}
	var cur *store.Key
	for i := range stored {
		if stored[i].ID == id {
			cur = &stored[i]
		}
	}
	if cur == nil {
		return nil, ErrNoSuchKey
	}
	ch := store.KeyChange{Name: cur.Name, Models: cur.Models, ExpiresAt: cur.ExpiresAt, AllowIPs: cur.AllowIPs, LogRequests: cur.LogRequests}
	if c.LogRequests != nil {
		ch.LogRequests = *c.LogRequests
	}
	if c.AllowIPs != nil {
		if ch.AllowIPs, _, err = checkAllowIPs(*c.AllowIPs); err != nil {
			return nil, err
		}
	}
	if c.Name != nil {
		if err := checkText("name", *c.Name, MaxNameLen); err != nil {
			return nil, err
		}
		ch.Name = *c.Name
	}
	if c.Models != nil {
		if ch.Models, err = checkModels(*c.Models); err != nil {
			return nil, err
		}
	}
	switch {
	case c.NoExpiry && c.ExpiresAt != nil:
		return nil, errors.New("expires_at and no_expiry: choose one")
	case c.NoExpiry:
		ch.ExpiresAt = nil
	case c.ExpiresAt != nil:
		if !c.ExpiresAt.After(s.now()) {
			return nil, errors.New("expiry must be in the future")
		}
		ch.ExpiresAt = c.ExpiresAt
	}
	return s.changed(s.store.Update(ctx, id, ch))
}
