package shardmap

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestIndexesInRange checks the invariants the pass path's unchecked
// accesses (shardOf, table.cell) rely on: the shard index of every hash is
// below the shard count, for every shard count New accepts; every home
// slot is below the table's length, for table lengths from the smallest to
// the largest a Map makes; and a table's length is its cells' length, in
// new tables and in those compactions build.
func TestIndexesInRange(t *testing.T) {
	hashes := []uint64{0, 1, math.MaxUint32, math.MaxUint32 + 1, 1 << 63, math.MaxUint64 - 1, math.MaxUint64}
	r := rand.New(rand.NewPCG(7, 8))
	for range 2000 {
		hashes = append(hashes, r.Uint64())
	}
	// shardIndex and shardOf, on maps of every shard count up to
	// MaxShards (a Map of one key a shard; the shards are 256 bytes each).
	for shards := 1; shards <= MaxShards; shards *= 2 {
		m := newMap(t, 1, 1, Config{MaxKeys: shards, Shards: shards})
		for _, h := range hashes {
			i := m.shardIndex(h)
			if i >= uint64(len(m.shards)) || m.shardOf(h) != &m.shards[i] {
				t.Fatalf("%d shards: hash %#x has shard %d of %d", shards, h, i, len(m.shards))
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
	// Every table a Map makes, first and after compactions, has m ==
	// len(cells) == len(marks).
	m := newMap(t, 1e6, 10, Config{MaxKeys: 256, Shards: 2, EvictBackoff: -1})
	checkLen := func(when string) {
		for i := range m.shards {
			for tab := m.shards[i].tab.Load(); tab != nil; tab = tab.next.Load() {
				if tab.m != uint64(len(tab.cells)) || tab.m != uint64(len(tab.marks)) {
					t.Fatalf("%s: shard %d: m %d, %d cells, %d marks", when, i, tab.m, len(tab.cells), len(tab.marks))
				}
			}
		}
	}
	checkLen("new")
	before := m.Counters().Compactions
	for round := range 20 {
		keys := fillTable(t, m, 0, 1, r)
		for _, k := range keys {
			m.Delete(k)
		}
		checkLen(fmt.Sprintf("round %d", round))
	}
	if m.Counters().Compactions == before {
		t.Fatal("no compaction ran: the tables after one are not checked")
	}
}
