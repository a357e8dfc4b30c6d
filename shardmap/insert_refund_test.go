package shardmap

import (
	"runtime"
	"sync"
	"testing"
)

// Takes that race the insert of their key, each given back at once: the
// refund of a take that passed always finds the key, so the bucket ends
// full. Covers a new key and a key revived from its tombstone (deleted,
// then taken again). GOMAXPROCS well above the core count, so that an
// insert is preempted between publishing the key to takes and to lookups.
func TestRefundOfTakeRacingItsKeysInsert(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(16))
	m := newMap(t, 1, 100, Config{MaxKeys: 4096})
	const now = 1_000_000_000
	for round := range 400 {
		key := uint64(1 + round%200) // rounds 200 on revive tombstones
		if round >= 200 && !m.Delete(key) {
			t.Fatalf("round %d: key %d not tracked before its delete", round, key)
		}
		var start, wg sync.WaitGroup
		start.Add(1)
		for range 16 {
			wg.Go(func() {
				start.Wait()
				for range 4 {
					if r, st := m.TakeAt(key, now, 1); st == Taken && r.OK() {
						if !m.RefundAt(key, now, 1) {
							t.Errorf("round %d: the refund of a take that passed found no key", round)
						}
					}
				}
			})
		}
		start.Done()
		wg.Wait()
		if lv, ok := m.LevelAt(key, now); !ok || lv != 100 {
			t.Fatalf("round %d: level %v (tracked %v) after every take was given back, want 100", round, lv, ok)
		}
	}
}
