package badger

import (
	"time"

	"go.uber.org/zap"
)

// expiryInterval is how often journal segments past the retention are
// deleted.
const expiryInterval = time.Hour

// maybeExpire deletes expired segments at most every expiryInterval.
func (l *Ledger) maybeExpire() {
	if now := time.Now(); now.Sub(l.lastExpiry) >= expiryInterval {
		l.expire(now)
	}
}

// expire deletes the journal segments whose every record is past the
// retention.
func (l *Ledger) expire(now time.Time) {
	l.lastExpiry = now
	n, err := l.j.RemoveBefore(now.Add(-l.retention))
	if err != nil {
		l.log.Error("deleting expired ledger journal segments", zap.Error(err))
	}
	if n > 0 {
		l.log.Info("deleted expired ledger journal segments", zap.Int("segments", n))
	}
}
