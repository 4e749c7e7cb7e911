package badger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/caddy-air/caddy-air/store"
)

// prefixAudit keys the audit trail: au/<cursor>, where the cursor
// (store.AuditCursor) sorts by time, so a reverse scan reads newest
// first. Entries never expire and nothing in this package deletes them.
const prefixAudit = "au/"

// Audit is store.Audit on a KV.
type Audit struct{ kv KV }

// NewAudit returns the audit trail stored in kv.
func NewAudit(kv KV) *Audit { return &Audit{kv: kv} }

// Append implements store.Audit.
func (a *Audit) Append(ctx context.Context, e store.AuditEntry) error {
	v, err := json.Marshal(e)
	if err != nil {
		return err
	}
	key := []byte(prefixAudit + store.AuditCursor(e.Time, esc(e.ID)))
	return a.kv.Update(ctx, func(txn Txn) error {
		if _, err := txn.Get(key); err == nil {
			return store.ErrExists
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return txn.Set(key, v, 0)
	})
}

// List implements store.Audit.
func (a *Audit) List(ctx context.Context, q store.AuditQuery, fn func(store.AuditEntry, string) error) error {
	opts := ScanOptions{Reverse: true}
	var before []byte
	if q.Before != "" {
		if _, _, err := store.ParseAuditCursor(q.Before); err != nil {
			return err
		}
		before = []byte(prefixAudit + q.Before)
		opts.Start = before
	} else if !q.Until.IsZero() {
		opts.Start = []byte(prefixAudit + store.AuditCursor(q.Until, "\xff"))
	}
	return a.kv.Scan(ctx, []byte(prefixAudit), opts, func(key, value []byte) error {
		if before != nil && bytes.Compare(key, before) >= 0 {
			return nil
		}
		var e store.AuditEntry
		if err := json.Unmarshal(value, &e); err != nil {
			return err
		}
		if !q.Since.IsZero() && e.Time.Before(q.Since) {
			return store.ErrStop
		}
		if !q.Match(e) {
			return nil
		}
		return fn(e, string(key[len(prefixAudit):]))
	})
}

// Interface guard.
var _ store.Audit = (*Audit)(nil)
