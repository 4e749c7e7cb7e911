package audit

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// Export formats.
const (
	FormatCSV   = "csv"
	FormatJSONL = "jsonl"
)

// csvHeader is the first line of a CSV export.
var csvHeader = []string{"time", "actor", "identity", "via", "client_ip", "action", "target_type", "target_id", "before", "after", "id"}

// Export writes every entry q selects to w, newest first, as CSV (with a
// header line) or as JSON Lines (one store.AuditEntry per line).
func (l *Log) Export(ctx context.Context, q store.AuditQuery, format string, w io.Writer) error {
	switch format {
	case FormatCSV:
		cw := csv.NewWriter(w)
		if err := cw.Write(csvHeader); err != nil {
			return err
		}
		err := l.Each(ctx, q, func(e store.AuditEntry) error {
			return cw.Write([]string{e.Time.Format(time.RFC3339Nano), e.Actor, e.Identity, e.Via, e.ClientIP,
				e.Action, e.TargetType, e.TargetID, string(e.Before), string(e.After), e.ID})
		})
		if err != nil {
			return err
		}
		cw.Flush()
		return cw.Error()
	case FormatJSONL:
		enc := json.NewEncoder(w)
		return l.Each(ctx, q, func(e store.AuditEntry) error { return enc.Encode(jsonEntry(e)) })
	}
	return fmt.Errorf("unknown export format %q: want csv or jsonl", format)
}

// JSONEntry is an entry as the admin API and JSONL exports show it:
// Before and After as JSON values, not strings.
type JSONEntry struct {
	store.AuditEntry
	// Before and After are the target's values, as JSON.
	Before json.RawMessage `json:"before,omitempty"`
	After  json.RawMessage `json:"after,omitempty"`
}

// jsonEntry returns e for JSON output.
func jsonEntry(e store.AuditEntry) JSONEntry {
	return JSONEntry{AuditEntry: e, Before: e.Before, After: e.After}
}

// JSONEntries returns es for JSON output.
func JSONEntries(es []store.AuditEntry) []JSONEntry {
	out := make([]JSONEntry, len(es))
	for i, e := range es {
		out[i] = jsonEntry(e)
	}
	return out
}
