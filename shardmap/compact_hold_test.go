package shardmap

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A take that meets its key's slot while a compaction has moved the word
// but not yet the mark follows the word to the new table, where the mark
// is only a first copy until the compaction moves the old one. The take
// must not write that copy: clearing an ended hold there (after clearing
// it in the old table, or while another writer changes the old mark)
// lowers the shard's held count for a hold it does not remove, and the
// compaction then overwrites the copy. Holds start and end, takes clear
// ended holds, compactions run; then every shard's count equals its held
// marks. More goroutines than cores, so that a compaction is preempted
// between the moves of some slot's word and mark.
func TestHeldCountAcrossCompactions(t *testing.T) {
	if testing.Short() {
		t.Skip("stress")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(16))
	m := newMap(t, 1e6, 1e6, Config{MaxKeys: 4096, Shards: 1, EvictBackoff: -1})
	const hot = 2000
	for k := uint64(1); k <= hot; k++ {
		m.TakeAt(k, 0, 1)
	}
	ended := m.MakeMark(0, true, 1) // a hold that has ended at the takes' time
	const now = int64(1e9)
	// Rounds of churn, each checked at its end, until the counts part
	// or the time is up.
	deadline := time.Now().Add(4 * time.Second)
	for round := 0; time.Now().Before(deadline); round++ {
		var stop atomic.Bool
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { // churn: tombstones, hence compactions
			defer wg.Done()
			for k := uint64(1<<40 + round<<32); !stop.Load(); k++ {
				m.TakeAt(k, now, 1)
				m.Delete(k)
			}
		}()
		for g := range 2 {
			wg.Add(1)
			go func() { // holds that have ended, as a take at now finds them
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(round), uint64(g)))
				for !stop.Load() {
					k := 1 + r.Uint64N(hot)
					m.UpdateMark(k, func(old Mark) (Mark, bool) { return ended, old == MarkNone })
				}
			}()
		}
		for g := range 8 {
			wg.Add(1)
			go func() { // takes: each clears the ended hold it meets
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(round), 100+uint64(g)))
				for !stop.Load() {
					m.TakeAt(1+r.Uint64N(hot), now, 1)
				}
			}()
		}
		time.Sleep(250 * time.Millisecond)
		stop.Store(true)
		wg.Wait()
		checkInvariants(t, m) // the held count among them
		if t.Failed() {
			t.Logf("round %d: %+v", round, m.Counters())
			return
		}
	}
}
