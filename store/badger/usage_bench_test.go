package badger

import (
	"testing"

	"github.com/caddy-air/caddy-air/store/storetest"
)

// BenchmarkUsage measures the reads of a console page on a ledger of
// 1,000,000 records (100,000 with -short); see storetest.BenchUsage.
func BenchmarkUsage(b *testing.B) {
	r, err := OpenRepos(Config{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	storetest.BenchUsage(b, r, storetest.BenchRecords())
}
