package shardmap

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// A map at MaxKeys whose every tracked key is idle (full bucket, no mark):
// an insert can always make room in its own shard, so it is never Full,
// even when other shards' inserts take the places its evictions free (it
// evicts again). The inflated total stands in for those other inserts,
// which a concurrent test would hit only now and then.
func TestNoFullWhileTheShardHasIdleKeys(t *testing.T) {
	m := newMap(t, 1e6, 1, Config{MaxKeys: 64, Shards: 4, EvictBackoff: -1})
	fillTable(t, m, 0, 1, rand.New(rand.NewPCG(1, 2)))
	m.total.Add(m.batch) // other shards hold the places the first eviction frees
	o := take(m, 12345, 1e9, 1)
	m.total.Add(-m.batch)
	if o.Status != Taken {
		t.Fatalf("insert with idle keys in its shard: %+v", o)
	}
	checkInvariants(t, m)
}

// Range reports every key tracked throughout the call, also those a
// concurrent compaction moves out of the table it is walking (their old
// slots turn dead).
func TestRangeSeesKeysMovedByACompaction(t *testing.T) {
	m := newMap(t, 1, 1, Config{MaxKeys: 200, Shards: 1, EvictBackoff: -1})
	const stay = 50
	for k := uint64(1); k <= stay; k++ {
		m.TakeAt(k, 0, 1) // never removed
	}
	for k := uint64(1000); k < 1100; k++ {
		m.TakeAt(k, 0, 1) // junk, deleted during the Range
	}
	seen := map[uint64]int{}
	first := true
	m.Range(func(k uint64, _ Mark) bool {
		if first {
			first = false
			before := m.Counters().Compactions
			for j := uint64(1000); j < 1100 && m.Counters().Compactions == before; j++ {
				m.Delete(j)
			}
			if m.Counters().Compactions == before {
				t.Fatal("no compaction")
			}
		}
		seen[k]++
		return true
	})
	missed := 0
	for k := uint64(1); k <= stay; k++ {
		if seen[k] == 0 {
			missed++
		}
	}
	if missed > 0 {
		t.Errorf("Range missed %d of %d keys tracked during the whole call", missed, stay)
	}
}

// Stable keys are seen exactly once and no key is seen twice while other
// keys are inserted, deleted, re-inserted and shards compact.
func TestRangeSeesEachKeyOnceUnderChurn(t *testing.T) {
	m := newMap(t, 1, 1, Config{MaxKeys: 400, Shards: 2, EvictBackoff: -1})
	const stay = 100
	for k := uint64(1); k <= stay; k++ {
		m.TakeAt(k, 0, 1)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	defer func() {
		stop.Store(true) // on a Fatalf too: the churners end with the test
		wg.Wait()
	}()
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			base := uint64(1000 + g*1000)
			for !stop.Load() {
				for k := base; k < base+150; k++ {
					m.TakeAt(k, 0, 1)
				}
				for k := base; k < base+150; k++ {
					m.Delete(k)
				}
			}
		}()
	}
	for i := 0; i < 3000; i++ {
		seen := map[uint64]int{}
		m.Range(func(k uint64, _ Mark) bool { seen[k]++; return true })
		for k, n := range seen {
			if n > 1 {
				t.Fatalf("key %d seen %d times", k, n)
			}
		}
		for k := uint64(1); k <= stay; k++ {
			if seen[k] != 1 {
				t.Fatalf("stable key %d seen %d times", k, seen[k])
			}
		}
	}
	t.Logf("%+v", m.Counters())
}

// Concurrent inserts that lose reservation races and retry leave the
// count exact (a reservation they give back is given back once) and the
// map within MaxKeys when they end. It checks after the inserts, so an
// overshoot undone before the end goes unseen, and at 8 keys a shard's
// share its per-shard bound (33) is out of reach. (TestMaxKeysFitAndNoMore
// holds a map to MaxKeys one insert at a time.)
func TestInsertRetryKeepsTheBounds(t *testing.T) {
	const maxKeys = 64
	m := newMap(t, 1e6, 1, Config{MaxKeys: maxKeys, Shards: 8, EvictBackoff: -1})
	var next atomic.Uint64
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20000; i++ {
				m.TakeAt(next.Add(1), int64(i)*1e3, 1)
			}
		}()
	}
	wg.Wait()
	if n := m.Len(); n > maxKeys {
		t.Fatalf("Len %d > MaxKeys %d", n, maxKeys)
	}
	checkInvariants(t, m)
}

// An insert that gives up after maxReserveTries successful evictions is
// Full without a wait from an older scan (one that found no idle key): the
// shard has just evicted, so it does not know when it will again. The
// inflated total stands in for the lost reservation races against other
// shards; one idle key is left after the retries.
func TestFullAfterEvictionsDoesNotReportAStaleWait(t *testing.T) {
	const sec = int64(1e9)
	m := newMap(t, 1, 1, Config{MaxKeys: 16, Shards: 1, EvictBackoff: -1})
	hold := m.MakeMark(0, true, 3600*sec)
	for k := uint64(1); k <= 16; k++ {
		m.TakeAt(k, 0, 1)
		m.UpdateMark(k, func(Mark) (Mark, bool) { return hold, true })
	}
	if _, st := m.TakeAt(100, sec/10, 1); st != Full {
		t.Fatal(st)
	}
	const idle = maxReserveTries + 2 // the first eviction, the retries, and one left over
	for k := uint64(17 - idle); k <= 16; k++ {
		m.Delete(k)
	}
	for k := uint64(20); k < 20+idle; k++ {
		if _, st := m.TakeAt(k, sec/5, 1); st != Taken {
			t.Fatal(st)
		}
	}
	m.total.Add(1000) // other shards' in-flight reservations
	r, st := m.TakeAt(200, 5*sec, 1)
	m.total.Add(-1000)
	if st != Full {
		t.Fatalf("status %v, want Full after %d evictions", st, maxReserveTries+1)
	}
	if int64(r.RetryAfter()) > sec {
		t.Errorf("Full with RetryAfter %v while the shard just evicted %d idle keys", r.RetryAfter(), m.Counters().Evicted)
	}
}

// A map made with a Seed lays keys out the same way every time (and a
// different seed differently); ReproducibleShards depends on the size alone.
func TestSeedFixesTheLayout(t *testing.T) {
	mk := func(seed uint64) *Map {
		return newMap(t, 1, 1, Config{MaxKeys: 4096, Shards: ReproducibleShards(4096), Seed: seed})
	}
	a, b, c := mk(7), mk(7), mk(8)
	same, other := 0, 0
	for k := uint64(0); k < 1000; k++ {
		if a.ShardOf(k) == b.ShardOf(k) {
			same++
		}
		if a.ShardOf(k) == c.ShardOf(k) {
			other++
		}
	}
	if same != 1000 || other >= 200 {
		t.Fatalf("same seed: %d of 1000 keys in the same shard (want all); another seed: %d (want about 1 in 16)", same, other)
	}
	for _, c := range [][2]int{{1 << 20, 16}, {200, 2}, {10, 1}} {
		if got := ReproducibleShards(c[0]); got != c[1] {
			t.Errorf("ReproducibleShards(%d) = %d, want %d", c[0], got, c[1])
		}
	}
}
