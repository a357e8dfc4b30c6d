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

// Linearizability of keyed takes, checked with porcupine and partitioned by
// key: each key's history must be explained by one sequential bucket. The
// keys share a one-shard map that is churned (other keys inserted and
// deleted) all along, so takes race compactions that move their slots.

type kInput struct {
	key uint64
	now int64
	n   uint64
}

type kOutput struct {
	status    atomicbucket.Status
	remaining uint32
	retry     time.Duration
}

func keyedModel(lim *atomicbucket.Limit, init map[uint64]uint64) porcupine.Model {
	type state struct {
		set  bool
		word uint64
	}
	return porcupine.Model{
		Partition: lincheck.PartitionByKey(func(in any) uint64 { return in.(kInput).key }),
		Init:      func() any { return state{} },
		Step: func(st, input, output any) (bool, any) {
			s, in, out := st.(state), input.(kInput), output.(kOutput)
			w := init[in.key]
			if s.set {
				w = s.word
			}
			var tmp atomic.Uint64
			tmp.Store(w)
			r := lim.TakeAt(&tmp, in.now, in.n)
			if (kOutput{r.Status(), r.Remaining(), r.RetryAfter()}) != out {
				return false, s
			}
			return true, state{true, tmp.Load()}
		},
		Equal: func(a, b any) bool { return a == b },
		DescribeOperation: func(input, output any) string {
			in, out := input.(kInput), output.(kOutput)
			return fmt.Sprintf("k%d.take(now=%d, n=%d) → %v rem=%d retry=%v", in.key, in.now, in.n, out.status, out.remaining, out.retry)
		},
	}
}

func TestLinearizableKeyedTakes(t *testing.T) {
	for _, procs := range []int{1, 2, 4, 8} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			for round := 0; round < 4; round++ {
				linRound(t, procs, uint64(round))
			}
		})
	}
}

func linRound(t *testing.T, procs int, seed uint64) {
	const (
		keys    = 3
		workers = 4
		opsEach = 60
		t0      = int64(1e9)
	)
	// 1e7 tokens/s: one token per 100ns; burst 4.
	lim, err := atomicbucket.NewLimit(1e7, 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(lim, Config{MaxKeys: 24, Shards: 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Insert the keys at t0 and mark them so churn cannot evict them; the
	// model starts each key from its word after that first take.
	init := map[uint64]uint64{}
	for k := uint64(1); k <= keys; k++ {
		if o := take(m, k, t0, 1); !o.Result.OK() {
			t.Fatal(o)
		}
		m.UpdateMark(k, func(Mark) (Mark, bool) { return m.MakeMark(1, false, t0+1e15), true })
		w := lim.FullWord(t0)
		var tmp atomic.Uint64
		tmp.Store(w)
		lim.TakeAt(&tmp, t0, 1)
		init[k] = tmp.Load()
	}
	var clocks [keys + 1]atomic.Int64
	for i := range clocks {
		clocks[i].Store(t0)
	}
	var (
		mu      sync.Mutex
		history []porcupine.Operation
		wg      sync.WaitGroup
		stop    atomic.Bool
		start   = time.Now()
	)
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			ops := make([]porcupine.Operation, 0, opsEach)
			for i := 0; i < opsEach; i++ {
				k := 1 + r.Uint64N(keys)
				now := clocks[k].Add(r.Int64N(60))
				if r.IntN(4) == 0 {
					now -= r.Int64N(100) // a stale reading
				}
				n := 1 + r.Uint64N(2)
				call := time.Since(start).Nanoseconds()
				o := take(m, k, now, n)
				ret := time.Since(start).Nanoseconds()
				if o.Status != Taken {
					t.Errorf("key %d: %+v", k, o)
					return
				}
				ops = append(ops, porcupine.Operation{
					ClientId: g,
					Input:    kInput{k, now, n},
					Call:     call,
					Output:   kOutput{o.Result.Status(), o.Result.Remaining(), o.Result.RetryAfter()},
					Return:   ret,
				})
			}
			mu.Lock()
			history = append(history, ops...)
			mu.Unlock()
		}(g)
	}
	// Churn: other keys in the same shard, inserted and deleted, so the
	// shard compacts (moves every slot) while the takes run.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := uint64(0); !stop.Load() && i < 20000; i++ {
			k := 100 + i%40
			m.TakeAt(k, t0, 1)
			m.Delete(k)
		}
	}()
	for {
		mu.Lock()
		done := len(history) == workers*opsEach
		mu.Unlock()
		if done || t.Failed() {
			break
		}
		runtime.Gosched()
	}
	stop.Store(true)
	wg.Wait()
	if c := m.Counters(); c.Compactions == 0 {
		t.Logf("no compaction during the round: %+v", c)
	}
	res := porcupine.CheckOperationsTimeout(keyedModel(lim, init), history, 20*time.Second)
	if res == porcupine.Illegal {
		t.Fatalf("GOMAXPROCS=%d seed %d: history of %d takes is not linearizable", procs, seed, len(history))
	}
	if res == porcupine.Unknown {
		t.Logf("GOMAXPROCS=%d seed %d: check timed out", procs, seed)
	}
}
