package badger

import (
	"path/filepath"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/badger/journal"
)

// What the loss of a damaged region costs, for the log.
const (
	recordsDamageCost = "its records are missing from the ledger's listings (admin API records and CSV, " +
		"console ledger pages, caddy air ledger); usage reports and spend are counted in the store when " +
		"records are written and stay right"
	intentsDamageCost = "the intents in it are lost: requests that were in flight at the last stop and " +
		"recorded there may not be charged"
)

// logDamage returns a journal's Options.OnDamage, which logs a damaged
// region of the journal in dir: one error per region and process.
func logDamage(log *zap.Logger, what, dir, cost string) func(journal.Damage) {
	return func(d journal.Damage) {
		log.Error(what+": a damaged region of a segment cannot be read and is skipped; "+cost+
			"; restore the segment from a backup to read it again",
			zap.String("segment", filepath.Join(dir, d.Segment)), zap.Int64("offset", d.Offset),
			zap.Int64("resumed_at", d.Resumed), zap.Int64("bytes", d.Bytes()), zap.String("reason", d.Reason))
	}
}

// logRepair logs what opening a journal repaired.
func logRepair(log *zap.Logger, what string, r journal.Repair) {
	switch {
	case r.Quarantined != "":
		log.Error(what+": corrupt entries after the last intact one; the segment was copied aside and cut back",
			zap.String("segment", r.Segment), zap.Int64("valid_end", r.ValidEnd), zap.Int64("bytes_cut", r.Cut),
			zap.String("quarantined_copy", r.Quarantined))
	case r.Cut > 0:
		log.Warn(what+": cut off a torn tail left by a crash",
			zap.String("segment", r.Segment), zap.Int64("valid_end", r.ValidEnd), zap.Int64("bytes_cut", r.Cut))
	}
}

// Damaged implements store.DamageReporter: the damaged regions that reads
// of the ledger's journal and of its intent log found so far. Files of
// the intent log are named intents/<segment>.
func (l *Ledger) Damaged() []store.Damage {
	var out []store.Damage
	add := func(prefix string, ds []journal.Damage) {
		for _, d := range ds {
			out = append(out, store.Damage{File: prefix + d.Segment, Offset: d.Offset, Bytes: d.Bytes(), Reason: d.Reason})
		}
	}
	add("", l.j.Damaged())
	if l.intents != nil {
		add(intentsDir+"/", l.intents.j.Damaged())
	}
	return out
}

// logUncountedDamage logs the damaged regions between the positions from
// and end of the journal: records there that the store had not counted
// before the last stop cannot be counted, so the aggregates miss them.
func (l *Ledger) logUncountedDamage(from, end journal.Pos) {
	for _, d := range l.j.Damaged() {
		if (journal.Pos{Segment: d.Seq, Offset: d.Resumed}).Less(from) || !(journal.Pos{Segment: d.Seq, Offset: d.Offset}).Less(end) {
			continue
		}
		l.log.Error("ledger journal: a damaged region holds records written but not counted before the last stop; "+
			"usage reports and spend miss them", zap.String("segment", d.Segment), zap.Int64("offset", d.Offset),
			zap.Int64("bytes", d.Bytes()))
	}
}

// Interface guard.
var _ store.DamageReporter = (*Ledger)(nil)
