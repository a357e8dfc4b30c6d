package core

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

// Linearizability of Limiter takes, partitioned by key (porcupine), with
// escalation off so that a take is one bucket operation: every key's
// history must be explained by one sequential token bucket of the same
// rate and burst. Other keys churn (insert, delete) through the same
// shards meanwhile, so takes race compactions.

type limIn struct {
	key uint64
	now int64
	n   uint64
}

func limModel(ref *atomicbucket.Limit, t0 int64) porcupine.Model {
	type state struct {
		set  bool
		word uint64
	}
	return porcupine.Model{
		Partition: lincheck.PartitionByKey(func(in any) uint64 { return in.(limIn).key }),
		Init:      func() any { return state{} },
		Step: func(st, input, output any) (bool, any) {
			s, in, out := st.(state), input.(limIn), output.(Decision)
			var tmp atomic.Uint64
			if s.set {
				tmp.Store(s.word)
			} else { // the word after the setup take at t0
				tmp.Store(ref.FullWord(t0))
				ref.TakeAt(&tmp, t0, 1)
			}
			r := ref.TakeAt(&tmp, in.now, in.n)
			want := Decision{Allowed: r.OK(), Remaining: r.Remaining()}
			if !r.OK() {
				want.Reason, want.RetryAfter = AccountLimit, r.RetryAfter()
			}
			if want != out {
				return false, s
			}
			return true, state{true, tmp.Load()}
		},
		Equal: func(a, b any) bool { return a == b },
		DescribeOperation: func(input, output any) string {
			in := input.(limIn)
			return fmt.Sprintf("k%d.take(now=%d, n=%d) → %v", in.key, in.now, in.n, output.(Decision))
		},
	}
}

func TestLimiterLinearizable(t *testing.T) {
	for _, procs := range []int{1, 2, 4, 8} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			for seed := uint64(0); seed < 3; seed++ {
				limLinRound(t, seed)
			}
		})
	}
}

func limLinRound(t *testing.T, seed uint64) {
	const (
		t0      = int64(0)
		keys    = 4
		workers = 4
		opsEach = 50
	)
	l := newLimiter(t, LimiterConfig{Rate: 1e7, Burst: 3, MaxKeys: 32, Shards: 2, DisableEscalation: true})
	ref, err := atomicbucket.NewLimit(1e7, 3, t0)
	if err != nil {
		t.Fatal(err)
	}
	// Each key is inserted at t0 by one take before the run, so every
	// later take (at t0+1000 or after) sees the word that take left; the
	// model starts there. The churn keys are deleted right after their
	// insertion, so the table never fills and nothing is evicted.
	for k := uint64(1); k <= keys; k++ {
		if d := l.TakeAt(k, t0, 1); !d.Allowed {
			t.Fatal(d)
		}
	}
	var (
		clocks [keys]atomic.Int64
		stop   atomic.Bool
		churn  sync.WaitGroup
	)
	for i := range clocks {
		clocks[i].Store(t0 + 1000)
	}
	churn.Add(1)
	go func() {
		defer churn.Done()
		for i := uint64(0); !stop.Load(); i++ {
			k := 1000 + i%24
			l.TakeAt(k, t0, 1)
			l.Delete(k)
		}
	}()
	history := lincheck.Record(workers, opsEach, seed,
		func(r *rand.Rand) any {
			k := r.Uint64N(keys)
			now := clocks[k].Add(r.Int64N(80))
			return limIn{k + 1, now, 1 + r.Uint64N(2)}
		},
		func(input any) (any, bool) {
			in := input.(limIn)
			return l.TakeAt(in.key, in.now, in.n), true
		})
	stop.Store(true)
	churn.Wait()
	if res := porcupine.CheckOperationsTimeout(limModel(ref, t0), history, 20*time.Second); res == porcupine.Illegal {
		t.Fatalf("seed %d: %d takes not linearizable", seed, len(history))
	}
}
