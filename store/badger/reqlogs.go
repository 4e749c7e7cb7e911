package badger

import (
	"context"
	"encoding/json"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// prefixRequestLogs keys request logs: rl/<escaped request id>, with the
// TTL they were put with (Badger drops them when it passes).
const prefixRequestLogs = "rl/"

// RequestLogs is store.RequestLogs on a KV.
type RequestLogs struct{ kv KV }

// NewRequestLogs returns the request logs stored in kv.
func NewRequestLogs(kv KV) *RequestLogs { return &RequestLogs{kv: kv} }

// Put implements store.RequestLogs.
func (r *RequestLogs) Put(ctx context.Context, l store.RequestLog, ttl time.Duration) error {
	v, err := json.Marshal(l)
	if err != nil {
		return err
	}
	return r.kv.Set(ctx, []byte(prefixRequestLogs+esc(l.RequestID)), v, ttl)
}

// Get implements store.RequestLogs.
func (r *RequestLogs) Get(ctx context.Context, id string) (store.RequestLog, error) {
	var l store.RequestLog
	v, err := r.kv.Get(ctx, []byte(prefixRequestLogs+esc(id)))
	if err != nil {
		return l, err
	}
	return l, json.Unmarshal(v, &l)
}

// Interface guard.
var _ store.RequestLogs = (*RequestLogs)(nil)
