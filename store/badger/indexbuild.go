package badger

import "context"

// indexBatch bounds the index entries written in one transaction while
// an index is built over a whole store (the usage index by user, the keys'
// index by user).
const indexBatch = 500

// batchSetter writes the entries of an index being built, indexBatch to a
// transaction. The entries are written with Set, so a build cut short is
// simply done again.
type batchSetter struct {
	ctx        context.Context
	db         KV
	keys, vals [][]byte
}

// set queues an entry, and writes the queue once it holds indexBatch.
func (b *batchSetter) set(key, val []byte) error {
	b.keys, b.vals = append(b.keys, key), append(b.vals, val)
	if len(b.keys) < indexBatch {
		return nil
	}
	return b.flush()
}

// flush writes the queued entries in one transaction.
func (b *batchSetter) flush() error {
	if len(b.keys) == 0 {
		return nil
	}
	err := b.db.Update(b.ctx, func(txn Txn) error {
		for i, k := range b.keys {
			if err := txn.Set(k, b.vals[i], 0); err != nil {
				return err
			}
		}
		return nil
	})
	b.keys, b.vals = b.keys[:0], b.vals[:0]
	return err
}
