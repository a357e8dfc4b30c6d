package shardmap

import (
	"math/rand/v2"
	"sync"
	"testing"
)

// A take reads a key's mark only while its shard counts a held mark; these
// tests hold the count to the marks, and the marks to the takes.

func TestHeldCountFollowsTheMarks(t *testing.T) {
	m := newMap(t, 10, 2, Config{MaxKeys: 100, Shards: 1, EvictBackoff: -1})
	sh := &m.shards[0]
	hold := func(k uint64, until int64) {
		t.Helper()
		if _, ok := m.UpdateMark(k, func(Mark) (Mark, bool) { return m.MakeMark(0, true, until), true }); !ok {
			t.Fatalf("UpdateMark(%d)", k)
		}
	}
	for k := uint64(1); k <= 3; k++ {
		m.TakeAt(k, 0, 1)
	}
	hold(1, 5e9)
	hold(1, 6e9) // held to held: still one
	hold(2, 5e9)
	if n := sh.held.Load(); n != 2 {
		t.Fatalf("two keys held: count %d", n)
	}
	if o := take(m, 1, 1e9, 1); o.Status != Held {
		t.Fatalf("held key 1: %+v", o)
	}
	if o := take(m, 3, 1e9, 1); o.Status != Taken || !o.Result.OK() {
		t.Fatalf("key 3, not held, in a shard with holds: %+v", o)
	}
	// Ending a hold by a new mark lowers the count.
	m.UpdateMark(2, func(Mark) (Mark, bool) { return MarkNone, true })
	if n := sh.held.Load(); n != 1 {
		t.Fatalf("after key 2's hold was lifted: count %d", n)
	}
	// A hold that has ended lets takes through, and the first of them
	// clears it: no sweep is needed for the shard's takes to skip marks.
	if o := take(m, 1, 6e9, 1); o.Status != Taken || !o.Result.OK() {
		t.Fatalf("key 1 after its deadline: %+v", o)
	}
	if n := sh.held.Load(); n != 0 {
		t.Fatalf("after a take past key 1's hold: count %d", n)
	}
	if mk, ok := m.MarkOf(1); !ok || mk != MarkNone {
		t.Fatalf("key 1 after that take: %v %v", mk, ok)
	}
	// A sweep clears an ended hold that no take has met (key 1's bucket,
	// emptied at 6 s, is not full again at 6.05 s: the sweep keeps it).
	if o := take(m, 1, 6e9, 1); o.Status != Taken || !o.Result.OK() {
		t.Fatalf("key 1's second token: %+v", o)
	}
	hold(1, 6.05e9)
	m.SweepAt(6.05e9)
	if n := sh.held.Load(); n != 0 {
		t.Fatalf("after a sweep past every hold: count %d", n)
	}
	if mk, ok := m.MarkOf(1); !ok || mk.Held() {
		t.Fatalf("key 1 after the sweep: %v %v", mk, ok)
	}
	// Deleting a held key lowers it too. (The sweep removed key 3, idle.)
	m.TakeAt(3, 6e9, 1)
	hold(3, 9e9)
	if !m.Delete(3) || sh.held.Load() != 0 {
		t.Fatalf("after deleting held key 3: count %d", sh.held.Load())
	}
	checkInvariants(t, m)
}

func TestKeyZero(t *testing.T) {
	// Key 0's cell looks like an empty one to the pass path's probe, so
	// key 0 and every key whose probe crosses it take the path with marks.
	// One shard, filled to its bound, so that probes run long.
	m := newMap(t, 1, 3, Config{MaxKeys: 64, Shards: 1, EvictBackoff: -1})
	m.setSeed([4]uint64{1, 2, 3, 4})
	keys := []uint64{0}
	for k := uint64(1); len(keys) < 64; k++ {
		keys = append(keys, k*0x9e3779b97f4a7c15)
	}
	for _, k := range keys {
		if o := take(m, k, 0, 1); o.Status != Taken || !o.Result.OK() {
			t.Fatalf("insert %#x: %+v", k, o)
		}
	}
	crossing := 0
	tab := m.shards[0].tab.Load()
	for _, k := range keys[1:] {
		if c, _ := tab.find(k, m.hash(k)); c == nil {
			crossing++
		}
	}
	if crossing == 0 {
		t.Fatal("no key's probe crosses key 0's cell: the test exercises nothing")
	}
	// Every key has 2 tokens left: two more pass, the third is denied.
	for round, want := range []bool{true, true, false} {
		for _, k := range keys {
			if o := take(m, k, 0, 1); o.Status != Taken || o.Result.OK() != want {
				t.Fatalf("round %d, key %#x: %+v, want pass %v", round, k, o, want)
			}
		}
	}
	if lv, ok := m.LevelAt(0, 1e9); !ok || lv != 1 {
		t.Fatalf("key 0 a second later: level %v, tracked %v", lv, ok)
	}
	if !m.Delete(0) || m.Contains(0) {
		t.Fatal("Delete(0)")
	}
	for _, k := range keys[1:] {
		if !m.Contains(k) {
			t.Fatalf("key %#x lost after key 0 was deleted", k)
		}
	}
	if o := take(m, 0, 1e9, 1); o.Status != Taken || !o.Result.OK() || o.Result.Remaining() != 2 {
		t.Fatalf("key 0 again, a fresh bucket: %+v", o)
	}
	checkInvariants(t, m)
}

func TestHeldCountUnderChurn(t *testing.T) {
	// Holds start and end, keys come and go, sweeps and compactions run,
	// all at once; then every shard's count equals its held marks, and a
	// key whose hold runs is refused.
	m := newMap(t, 1, 4, Config{MaxKeys: 96, Shards: 4, EvictBackoff: -1})
	const far = int64(1e15)
	// Key 1000 is held throughout; the workers take it all along, while
	// holds start and end on keys of its shard and tables are rebuilt.
	const pinned = 1000
	m.TakeAt(pinned, 0, 1)
	m.UpdateMark(pinned, func(Mark) (Mark, bool) { return m.MakeMark(0, true, far), true })
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 77))
			for range 20000 {
				k := r.Uint64N(160)
				now := int64(r.Uint64N(4)) * 1e9
				switch r.IntN(9) {
				case 0:
					until := now + int64(r.Uint64N(3))*1e9
					if r.IntN(2) == 0 {
						until = far
					}
					m.UpdateMark(k, func(Mark) (Mark, bool) { return m.MakeMark(0, true, until), true })
				case 1:
					m.UpdateMark(k, func(Mark) (Mark, bool) { return MarkNone, true })
				case 2:
					m.Delete(k)
				case 3:
					m.SweepAt(now)
				case 4:
					if r, st := m.TakeAt(pinned, now, 1); st != Held || r.OK() {
						t.Errorf("held key %d: %v %v", pinned, st, r.OK())
					}
				default:
					m.TakeAt(k, now, 1)
				}
			}
		}()
	}
	wg.Wait()
	checkInvariants(t, m)
	var held int
	m.Range(func(k uint64, mk Mark) bool {
		if _, ok := m.HeldAt(mk, 5e9); ok {
			held++
			if o := take(m, k, 5e9, 1); o.Status != Held {
				t.Errorf("key %d held until %d: %+v", k, m.Deadline(mk), o)
			}
		}
		return true
	})
	if held == 0 {
		t.Error("no key ended held: the test exercised nothing")
	}
	t.Logf("%d keys held at the end; %+v", held, m.Counters())
}

// A mark swap that loses its race (the mark is no longer the one it read)
// leaves the count as it was: the rise made for a hold it did not store is
// taken back.
func TestLostMarkSwapKeepsTheCount(t *testing.T) {
	m := newMap(t, 10, 2, Config{MaxKeys: 100, Shards: 1, EvictBackoff: -1})
	sh := &m.shards[0]
	m.TakeAt(1, 0, 1)
	s, mk := sh.tab.Load().lookup(1, m.hash(1))
	if s.cell == nil || mk != MarkNone {
		t.Fatalf("key 1: slot %v, mark %v", s.cell, mk)
	}
	held := m.MakeMark(0, true, 5e9)
	if sh.swapMark(s, held, held) || sh.swapMark(s, m.MakeMark(1, false, 5e9), held) {
		t.Fatal("a swap from a mark the slot does not hold succeeded")
	}
	if n := sh.held.Load(); n != 0 {
		t.Fatalf("after two lost swaps, one of them to a hold: count %d", n)
	}
	if !sh.swapMark(s, MarkNone, held) || sh.held.Load() != 1 {
		t.Fatalf("a won swap to a hold: count %d", sh.held.Load())
	}
	if sh.swapMark(s, MarkNone, held) || sh.held.Load() != 1 {
		t.Fatalf("a lost swap from the wrong mark: count %d", sh.held.Load())
	}
}

// The key 0 is always decided by takeAt (the probe of cells alone cannot
// tell it from an empty cell), which clears an ended hold as takeMarked
// does for other keys: the shard's count falls back to 0.
func TestKeyZerosEndedHoldIsCleared(t *testing.T) {
	m := newMap(t, 10, 2, Config{MaxKeys: 100, Shards: 1, EvictBackoff: -1})
	sh := &m.shards[0]
	m.TakeAt(0, 0, 1)
	if _, ok := m.UpdateMark(0, func(Mark) (Mark, bool) { return m.MakeMark(0, true, 5e9), true }); !ok {
		t.Fatal("UpdateMark(0)")
	}
	if o := take(m, 0, 1e9, 1); o.Status != Held {
		t.Fatalf("key 0 while held: %+v", o)
	}
	if o := take(m, 0, 6e9, 1); o.Status != Taken || !o.Result.OK() {
		t.Fatalf("key 0 after its hold: %+v", o)
	}
	if n := sh.held.Load(); n != 0 {
		t.Fatalf("after a take past key 0's hold: count %d", n)
	}
	if mk, ok := m.MarkOf(0); !ok || mk != MarkNone {
		t.Fatalf("key 0 after that take: %v %v", mk, ok)
	}
}
