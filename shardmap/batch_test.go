package shardmap

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/sluicedev/sluice/atomicbucket"
	"github.com/sluicedev/sluice/internal/lincheck"
)

// twinMaps returns two maps of one layout (seed and shards fixed), so that
// the same operations on both leave them in the same state.
func twinMaps(t *testing.T, maxKeys int) (*Map, *Map) {
	t.Helper()
	cfg := Config{MaxKeys: maxKeys, Shards: 4, Seed: 99}
	return newMap(t, 1000, 5, cfg), newMap(t, 1000, 5, cfg)
}

// sameTook reports whether a batch's outcome equals a single take's (the
// Results' configurations are twins' distinct Limits, so they are compared
// by what a caller reads of them).
func sameTook(got Took, r atomicbucket.Result, st Status) bool {
	g := got.Result
	return got.Status == st && g.Status() == r.Status() && g.Remaining() == r.Remaining() && g.RetryAfter() == r.RetryAfter()
}

// batchOps drives a batch map and a twin taking one key at a time through
// the same random history: batches of 1 to 300 keys (across chunk
// boundaries) drawn from keySpace keys (duplicates and new keys), n from 0
// to 6 (0 and 6 are invalid against the burst of 5), holds started and
// ended, keys deleted, clocks that advance, stand still or step back. With
// sweeps, both maps are swept at the same points.
func batchOps(t *testing.T, seed uint64, bm, sm *Map, keySpace uint64, rounds int, sweeps bool, afterBatch func(now int64)) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	keys := make([]uint64, 300)
	out := make([]Took, 300)
	hi := int64(1e9) // the latest clock reading
	for round := range rounds {
		switch r.IntN(10) {
		case 0:
			hi += r.Int64N(20e6)
		default:
			hi += r.Int64N(2e6)
		}
		now := hi
		if r.IntN(10) == 0 {
			now -= r.Int64N(2e6) // a stale reading, up to 2ms behind
		}
		if r.IntN(8) == 0 { // a hold, or the end of one, on both
			k := 1 + r.Uint64N(keySpace)
			mk := bm.MakeMark(0, r.IntN(2) == 0, now+r.Int64N(50e6))
			f := func(Mark) (Mark, bool) { return mk, true }
			// Only where the batch map has the key: a concurrent sweep may
			// have forgotten it there (idle), and its twin then must not
			// hold it either.
			if _, ok := bm.UpdateMark(k, f); ok {
				sm.UpdateMark(k, f)
			}
		}
		if r.IntN(16) == 0 {
			k := 1 + r.Uint64N(keySpace)
			bm.Delete(k)
			sm.Delete(k)
		}
		if sweeps && r.IntN(16) == 0 {
			if a, b := bm.SweepAt(now), sm.SweepAt(now); a != b {
				t.Fatalf("round %d: swept %d and %d", round, a, b)
			}
		}
		ks := keys[:1+r.IntN(len(keys))]
		for i := range ks {
			ks[i] = 1 + r.Uint64N(keySpace)
		}
		n := r.Uint64N(7)
		bm.TakeBatchAt(ks, now, n, out)
		for i, k := range ks {
			res, st := sm.TakeAt(k, now, n)
			if !sameTook(out[i], res, st) {
				t.Fatalf("seed %d round %d: key %d (#%d of %d) at %d, n %d: batch %v %v, one by one %v %v",
					seed, round, k, i, len(ks), now, n, out[i].Result, out[i].Status, res, st)
			}
		}
		if afterBatch != nil {
			afterBatch(hi)
		}
	}
}

// TestTakeBatchMatchesTakes: TakeBatchAt decides as TakeAt on each key in
// order, on tables that fill (Full), with duplicates, new keys, holds,
// deletions and sweeps; both maps end in the same state.
func TestTakeBatchMatchesTakes(t *testing.T) {
	for _, c := range []struct {
		maxKeys  int
		keySpace uint64
	}{{64, 400}, {400, 300}, {2000, 100000}} {
		for seed := range uint64(8) {
			bm, sm := twinMaps(t, c.maxKeys)
			bm.small = seed%2 == 0 // both paths of a batch: with and without the first pass
			batchOps(t, seed, bm, sm, c.keySpace, 300, true, nil)
			if bm.Len() != sm.Len() || bm.Counters() != sm.Counters() {
				t.Fatalf("maxKeys %d seed %d: Len %d and %d, counters %+v and %+v", c.maxKeys, seed, bm.Len(), sm.Len(), bm.Counters(), sm.Counters())
			}
		}
	}
}

// TestTakeBatchWithConcurrentSweep: a sweep racing the batches (at the
// clock of the batch before) forgets only idle keys, whose next take starts
// from a full bucket and no mark, as it would have: the decisions stay
// those of the twin that nothing sweeps. The tables never fill, so a sweep
// cannot turn a Full into an insert. Run it with -race.
func TestTakeBatchWithConcurrentSweep(t *testing.T) {
	bm, sm := twinMaps(t, 4000)
	bm.small = false // the first pass too
	var last atomic.Int64
	last.Store(1e9 - 3e6) // before any batch's clock
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	swept := 0
	go func() {
		defer wg.Done()
		for !stop.Load() {
			swept += bm.SweepAt(last.Load())
			runtime.Gosched()
		}
	}()
	// A batch's clock is at most 2ms behind the latest reading: the
	// sweeper runs 3ms behind it, so it never sweeps at a time after a
	// batch's.
	batchOps(t, 1, bm, sm, 1000, 2000, false, func(hi int64) { last.Store(hi - 3e6) })
	stop.Store(true)
	wg.Wait()
	if swept == 0 {
		t.Log("the sweeper forgot no key")
	}
}

// TestSmallTables: a batch skips its first pass exactly on tables whose
// cells fit in smallTable bytes.
func TestSmallTables(t *testing.T) {
	for _, c := range []struct {
		maxKeys int
		small   bool
	}{{1000, true}, {20_000, true}, {100_000, false}, {1 << 20, false}} {
		if m := newMap(t, 1, 1, Config{MaxKeys: c.maxKeys}); m.small != c.small {
			t.Errorf("MaxKeys %d: small %v, want %v", c.maxKeys, m.small, c.small)
		}
	}
}

func TestTakeBatchZeroAllocs(t *testing.T) {
	m := newMap(t, 1e9, 1e9, Config{MaxKeys: 100_000}) // 2.4 MB of cells: with the first pass
	keys := make([]uint64, 100)
	for i := range keys {
		keys[i] = uint64(i%70) + 1 // duplicates
	}
	out := make([]Took, len(keys))
	m.TakeBatchAt(keys, 1, 1, out) // inserts
	now := int64(1)
	if a := testing.AllocsPerRun(100, func() {
		now += 1000
		m.TakeBatchAt(keys, now, 1, out)
	}); a != 0 {
		t.Fatalf("TakeBatchAt: %v allocs per batch", a)
	}
	for i := range out {
		if !out[i].Result.OK() {
			t.Fatalf("key %d: %v", keys[i], out[i].Result)
		}
	}
}

// batchIn is one batch of a worker: its takes share now and n.
type batchIn struct {
	keys []uint64
	now  int64
	n    uint64
}

// TestLinearizableBatchedTakes is TestLinearizableKeyedTakes with every
// worker taking batches of 1 to 6 keys (duplicates included) through
// TakeBatchAt: each key's take is an operation whose interval is its
// batch's, and each key's history must be explained by one sequential
// bucket, while churn compacts the shard under the takes.
func TestLinearizableBatchedTakes(t *testing.T) {
	for _, procs := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			for seed := range uint64(3) {
				linBatchRound(t, procs, seed)
			}
		})
	}
}

func linBatchRound(t *testing.T, procs int, seed uint64) {
	const (
		keys    = 3
		workers = 4
		opsEach = 25
		t0      = int64(1e9)
	)
	lim, err := atomicbucket.NewLimit(1e7, 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(lim, Config{MaxKeys: 24, Shards: 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	m.small = seed%2 == 0 // both paths of a batch
	for k := uint64(1); k <= keys; k++ {
		if o := take(m, k, t0, 1); !o.Result.OK() {
			t.Fatal(o)
		}
		m.UpdateMark(k, func(Mark) (Mark, bool) { return m.MakeMark(1, false, t0+1e15), true })
	}
	var init atomic.Uint64
	init.Store(lim.FullWord(t0))
	lim.TakeAt(&init, t0, 1)
	var clock atomic.Int64
	clock.Store(t0)
	var churn sync.WaitGroup
	var stop atomic.Bool
	churn.Add(1)
	go func() {
		defer churn.Done()
		for i := uint64(0); !stop.Load() && i < 20000; i++ {
			k := 100 + i%40
			m.TakeAt(k, t0, 1)
			m.Delete(k)
		}
	}()
	batches := lincheck.Record(workers, opsEach, seed,
		func(r *rand.Rand) any {
			in := batchIn{keys: make([]uint64, 1+r.IntN(6)), now: clock.Add(r.Int64N(60)), n: 1 + r.Uint64N(2)}
			if r.IntN(4) == 0 {
				in.now -= r.Int64N(100)
			}
			for i := range in.keys {
				in.keys[i] = 1 + r.Uint64N(keys)
			}
			return in
		},
		func(input any) (any, bool) {
			in := input.(batchIn)
			out := make([]Took, len(in.keys))
			m.TakeBatchAt(in.keys, in.now, in.n, out)
			for i, o := range out {
				if o.Status != Taken {
					t.Errorf("key %d: %+v", in.keys[i], o)
					return nil, false
				}
			}
			return out, true
		})
	stop.Store(true)
	churn.Wait()
	// One operation per key's take, over its batch's interval.
	var history []porcupine.Operation
	for _, b := range batches {
		in, out := b.Input.(batchIn), b.Output.([]Took)
		for i, k := range in.keys {
			r := out[i].Result
			history = append(history, porcupine.Operation{ClientId: b.ClientId, Call: b.Call, Return: b.Return,
				Input: kInput{k, in.now, in.n}, Output: kOutput{r.Status(), r.Remaining(), r.RetryAfter()}})
		}
	}
	res := porcupine.CheckOperationsTimeout(keyedModel(lim, init.Load()), history, 20*time.Second)
	if res == porcupine.Illegal {
		t.Fatalf("GOMAXPROCS=%d seed %d: history of %d batched takes is not linearizable", procs, seed, len(history))
	}
	if res == porcupine.Unknown {
		t.Logf("GOMAXPROCS=%d seed %d: check timed out", procs, seed)
	}
}
