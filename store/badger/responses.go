package badger

import (
	"context"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// prefixResponses is where response-id mappings live: rs/<escaped id>,
// each with the TTL it was put with.
const prefixResponses = "rs/"

// Responses is store.Responses on a KV.
type Responses struct{ kv KV }

// NewResponses returns the response-id mappings stored in kv.
func NewResponses(kv KV) *Responses { return &Responses{kv: kv} }

// Put implements store.Responses.
func (r *Responses) Put(ctx context.Context, id string, value []byte, ttl time.Duration) error {
	return r.kv.Set(ctx, []byte(prefixResponses+esc(id)), value, ttl)
}

// Get implements store.Responses.
func (r *Responses) Get(ctx context.Context, id string) ([]byte, error) {
	return r.kv.Get(ctx, []byte(prefixResponses+esc(id)))
}

// Interface guard.
var _ store.Responses = (*Responses)(nil)
