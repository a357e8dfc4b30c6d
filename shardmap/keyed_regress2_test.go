package shardmap

import (
	"sync"
	"sync/atomic"
	"testing"
)

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
	stop.Store(true)
	wg.Wait()
	t.Logf("%+v", m.Counters())
}

func TestInsertRetryKeepsTheBounds(t *testing.T) {
	const maxKeys = 64
	m := newMap(t, 1e6, 1, Config{MaxKeys: maxKeys, Shards: 8, EvictBackoff: -1})
	var next atomic.Uint64
	var over atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20000; i++ {
				k := next.Add(1)
				m.TakeAt(k, int64(i)*1e3, 1)
				if n := m.Len(); n > maxKeys+8 { // transient reservations allowed
					over.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	c := m.Counters()
	if c.Tracked != m.Len() || c.Tracked > maxKeys {
		t.Fatalf("tracked %d len %d", c.Tracked, m.Len())
	}
	for i := range m.shards {
		if m.shards[i].live.Load() > m.perShard {
			t.Fatal("perShard exceeded")
		}
	}
	t.Logf("%+v over=%d", c, over.Load())
}

// The retry loop gives up after maxReserveTries successful evictions; the
// Full it returns carries sh.evictableAt from an older scan that found no
// idle key, not anything about now. The total inflation stands in for five
// lost reservation races against other shards.
func TestFullAfterEvictionsDoesNotReportAStaleWait(t *testing.T) {
	const sec = int64(1e9)
	m := newMap(t, 1, 1, Config{MaxKeys: 16, Shards: 1, EvictBackoff: -1})
	hold := m.MakeMark(0, true, 3600*sec)
	for k := uint64(1); k <= 16; k++ {
		m.TakeAt(k, 0, 1)
		m.UpdateMark(k, func(Mark) (Mark, bool) { return hold, true })
	}
	if _, _, st := m.TakeAt(100, sec/10, 1); st != Full {
		t.Fatal(st)
	}
	for k := uint64(11); k <= 16; k++ {
		m.Delete(k)
	}
	for k := uint64(20); k < 26; k++ {
		if _, _, st := m.TakeAt(k, sec/5, 1); st != Taken {
			t.Fatal(st)
		}
	}
	m.total.Add(1000) // other shards' in-flight reservations
	r, _, st := m.TakeAt(200, 5*sec, 1)
	m.total.Add(-1000)
	t.Logf("st %v RetryAfter %v evicted %d", st, r.RetryAfter(), m.Counters().Evicted)
	if st == Full && int64(r.RetryAfter()) > sec {
		t.Errorf("Full with RetryAfter %v while the shard just evicted %d idle keys", r.RetryAfter(), m.Counters().Evicted)
	}
}
