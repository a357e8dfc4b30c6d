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

// keyedModel is one sequential bucket of lim per key, starting from init,
// the word every key holds after the setup take.
func keyedModel(lim *atomicbucket.Limit, init uint64) porcupine.Model {
	type state struct {
		set  bool
		word uint64
	}
	return porcupine.Model{
		Partition: lincheck.PartitionByKey(func(in any) uint64 { return in.(kInput).key }),
		Init:      func() any { return state{} },
		Step: func(st, input, output any) (bool, any) {
			s, in, out := st.(state), input.(kInput), output.(kOutput)
			w := init
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
	// model starts each key from the word that first take leaves.
	for k := uint64(1); k <= keys; k++ {
		if o := take(m, k, t0, 1); !o.Result.OK() {
			t.Fatal(o)
		}
		m.UpdateMark(k, func(Mark) (Mark, bool) { return m.MakeMark(1, false, t0+1e15), true })
	}
	var init atomic.Uint64
	init.Store(lim.FullWord(t0))
	lim.TakeAt(&init, t0, 1)
	var clocks [keys + 1]atomic.Int64
	for i := range clocks {
		clocks[i].Store(t0)
	}
	// Churn: other keys in the same shard, inserted and deleted, so the
	// shard compacts (moves every slot) while the takes run.
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
	history := lincheck.Record(workers, opsEach, seed,
		func(r *rand.Rand) any {
			k := 1 + r.Uint64N(keys)
			now := clocks[k].Add(r.Int64N(60))
			if r.IntN(4) == 0 {
				now -= r.Int64N(100) // a stale reading
			}
			return kInput{k, now, 1 + r.Uint64N(2)}
		},
		func(input any) (any, bool) {
			in := input.(kInput)
			o := take(m, in.key, in.now, in.n)
			if o.Status != Taken {
				t.Errorf("key %d: %+v", in.key, o)
				return nil, false
			}
			return kOutput{o.Result.Status(), o.Result.Remaining(), o.Result.RetryAfter()}, true
		})
	stop.Store(true)
	churn.Wait()
	if c := m.Counters(); c.Compactions == 0 {
		t.Logf("no compaction during the round: %+v", c)
	}
	res := porcupine.CheckOperationsTimeout(keyedModel(lim, init.Load()), history, 20*time.Second)
	if res == porcupine.Illegal {
		t.Fatalf("GOMAXPROCS=%d seed %d: history of %d takes is not linearizable", procs, seed, len(history))
	}
	if res == porcupine.Unknown {
		t.Logf("GOMAXPROCS=%d seed %d: check timed out", procs, seed)
	}
}
