package shardmap

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestIndexesInRange checks the invariants the pass path's unchecked
// accesses (shardOf, table.cell) rely on: the shard index of every hash is
// below the shard count, and every home slot is below the table's length,
// for every shard count and for table lengths from the smallest to large
// ones, at the extreme hashes and at random ones.
func TestIndexesInRange(t *testing.T) {
	hashes := []uint64{0, 1, math.MaxUint32, math.MaxUint32 + 1, 1 << 63, math.MaxUint64 - 1, math.MaxUint64}
	r := rand.New(rand.NewPCG(7, 8))
	for range 2000 {
		hashes = append(hashes, r.Uint64())
	}
	for shards := 1; shards <= 1<<12; shards *= 2 {
		m := newMap(t, 1, 1, Config{MaxKeys: shards * 8, Shards: shards})
		for _, h := range hashes {
			i := h >> 1 >> (m.shift & 63)
			if i >= uint64(len(m.shards)) {
				t.Fatalf("%d shards: hash %#x has shard %d", shards, h, i)
			}
			if m.shardOf(h) != &m.shards[i] {
				t.Fatalf("%d shards: shardOf(%#x) is not shard %d", shards, h, i)
			}
		}
	}
	for _, n := range []uint64{1, 2, 3, 4, 5, 13, 1000, 96014, 1 << 20, 1<<32 - 1} {
		tab := &table{m: n}
		for _, h := range hashes {
			if i := tab.home(h); i >= n {
				t.Fatalf("table of %d slots: hash %#x has home %d", n, h, i)
			}
		}
	}
}
