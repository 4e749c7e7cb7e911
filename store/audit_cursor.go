package store

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// AuditCursor returns the cursor of an entry made at t with id: its
// time in Unix nanoseconds, zero-padded to sort as text, and its id.
func AuditCursor(t time.Time, id string) string {
	return fmt.Sprintf("%020d/%s", t.UnixNano(), id)
}

// ParseAuditCursor splits a cursor of AuditCursor into its Unix
// nanoseconds and id.
func ParseAuditCursor(c string) (ns int64, id string, err error) {
	n, id, ok := strings.Cut(c, "/")
	if ok {
		ns, err = strconv.ParseInt(n, 10, 64)
	}
	if !ok || err != nil || len(n) != 20 || id == "" {
		return 0, "", fmt.Errorf("bad audit cursor %q", c)
	}
	return ns, id, nil
}

// Match reports whether q selects e, apart from its cursor.
func (q AuditQuery) Match(e AuditEntry) bool {
	switch {
	case !q.Since.IsZero() && e.Time.Before(q.Since):
		return false
	case !q.Until.IsZero() && !e.Time.Before(q.Until):
		return false
	case q.Actor != "" && e.Actor != q.Actor:
		return false
	case q.Action != "" && e.Action != q.Action:
		return false
	case q.TargetID != "" && e.TargetID != q.TargetID:
		return false
	}
	return true
}
