package badger

import (
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"
)

// Badger's own compactors are off (NumCompactors 0): each of them wakes
// every 50 ms, a period hard-wired in Badger, whether or not anything was
// written, and two of them (the fewest Badger allows) kept an idle gateway
// at 0.5–1% of a core, which a gateway at 10–50 requests a second pays per
// request. The store compacts on demand instead: a write arms one check
// compactCheckDelay later, and that check compacts (Badger's Flatten: level
// 0 into the levels below, and any level over its target size) when level
// 0 holds numLevelZeroTables tables, as Badger's first compactor would. An
// idle store does nothing; a busy one looks at its levels once a
// compactCheckDelay. Level 0 stalls writes at numLevelZeroTablesStall
// tables, each a flushed 1 MiB memtable: six flushes within one
// compactCheckDelay, megabytes of keys a second, more than a gateway's
// aggregates, counters and task index are written at.
//
// Flatten compacts every level into the lowest one. While the tables hold
// less than about 100 MiB, Badger keeps them all in the last level and
// that is exactly its own level-0 compaction; in a larger store it would
// also rewrite the last level for each level above it. A store whose
// tables hold maxOnDemandTables or more at open runs Badger's compactors
// instead: its idle cost is small beside its size.
const (
	maxOnDemandTables       = 64 << 20
	compactCheckDelay       = time.Second
	numLevelZeroTables      = 2
	numLevelZeroTablesStall = 8
)

// wrote arms a compaction check, unless one is armed already. With
// Badger's own compactors the check only counts the tables, for the
// reserve (room.go).
func (s *DB) wrote() {
	if s.compactArmed.CompareAndSwap(false, true) {
		time.AfterFunc(compactCheckDelay, s.compactIfDue)
	}
}

// compactIfDue compacts while level 0 holds numLevelZeroTables tables or
// more. Writes from its start on arm the next check.
func (s *DB) compactIfDue() {
	s.compactArmed.Store(false)
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	if s.closed {
		return
	}
	defer s.narrow() // the tables flushed since, and the compaction's
	if s.room != nil {
		s.room.tables.Store(tablesSize(s.room.dir))
	}
	if s.badgerCompacts || s.level0Tables() < numLevelZeroTables {
		return
	}
	// Flatten rewrites every table before it deletes the old ones: the
	// reserve holds their size (room.go). With less free, the check waits
	// for the next write, which is refused until there is room again.
	if err := s.room.check(0); err != nil {
		return
	}
	if err := s.db.Flatten(1); err != nil {
		s.log.Warn("badger compaction", zap.Error(err))
	}
}

// level0Tables returns how many tables level 0 holds.
func (s *DB) level0Tables() int {
	for _, l := range s.db.Levels() {
		if l.Level == 0 {
			return l.NumTables
		}
	}
	return 0
}

// tablesSize returns the bytes of Badger's table files in dir; 0 when dir
// cannot be read (a new store).
func tablesSize(dir string) int64 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".sst" {
			continue
		}
		if fi, err := e.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n
}
