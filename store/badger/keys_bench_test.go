package badger

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// BenchmarkKeysList measures the keys page's read: the keys of one user
// in a store of 100,000 keys of 10,000 users (10,000 keys of 1,000 users
// with -short), on disk.
func BenchmarkKeysList(b *testing.B) {
	users, per := 10_000, 10
	if testing.Short() {
		users = 1_000
	}
	r, err := OpenRepos(Config{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range users * per {
		u := i % users
		k := store.Key{ID: fmt.Sprintf("key_%06d", i), Hash: fmt.Sprintf("%064x", i), User: fmt.Sprintf("user%05d", u),
			Name: "laptop", CreatedAt: t0.Add(time.Duration(i) * time.Second)}
		if err := r.Keys.Create(ctx, k); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		list, err := r.Keys.List(ctx, fmt.Sprintf("user%05d", i%users))
		if err != nil || len(list) != per {
			b.Fatalf("List = %d keys, %v; want %d", len(list), err, per)
		}
	}
}
