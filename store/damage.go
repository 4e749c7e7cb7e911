package store

// Damage is a region of a ledger's storage that could not be read, as bit
// rot or a disk error leave: the records in it are missing from listings
// (Ledger.Records, Ledger.UserRecords), while the aggregates and spend,
// counted when the records were written, stay right.
type Damage struct {
	// File is the name of the damaged file.
	File string `json:"file"`
	// Offset is where the unreadable bytes start in it.
	Offset int64 `json:"offset"`
	// Bytes is how many bytes could not be read.
	Bytes int64 `json:"bytes"`
	// Reason says what was wrong.
	Reason string `json:"reason"`
}

// DamageReporter is implemented by ledgers that skip damaged regions of
// their storage when they read it (Badger's journal), to report them.
type DamageReporter interface {
	// Damaged returns the damaged regions found so far.
	Damaged() []Damage
}
