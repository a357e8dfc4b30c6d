package core

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/sluicedev/sluice/atomicbucket"
	"github.com/sluicedev/sluice/internal/lincheck"
)

// batchLimiterOps drives a batch limiter and its twin (one layout: the same
// HashSeed and Shards) through one random history, bl by TakeBatchAt and tl
// by TakeAt on each key in order, and fails on the first decision that
// differs. Batches of 1 to 200 keys (across chunk boundaries) from keySpace
// keys (duplicates and new keys), n from 0 to 4 (0 and 4 invalid against
// the burst of 3), the clock advancing, standing still or a little stale,
// keys deleted; with sweeps, both are swept at the same points. afterBatch
// is called with the latest clock reading after each batch.
func batchLimiterOps(t *testing.T, seed uint64, bl, tl *Limiter, keySpace uint64, rounds int, sweeps bool, afterBatch func(hi int64)) {
	batchLimiterOpsWith(t, (*Limiter).TakeBatchAt, seed, bl, tl, keySpace, rounds, sweeps, afterBatch)
}

// batchLimiterOpsWith is batchLimiterOps with bl's batches taken by batch.
func batchLimiterOpsWith(t *testing.T, batch func(*Limiter, []uint64, int64, uint64, []Decision), seed uint64, bl, tl *Limiter, keySpace uint64, rounds int, sweeps bool, afterBatch func(hi int64)) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 11))
	keys := make([]uint64, 200)
	out := make([]Decision, 200)
	hi := int64(1e9)
	for round := range rounds {
		if r.IntN(8) == 0 {
			hi += r.Int64N(300e6)
		} else {
			hi += r.Int64N(3e6)
		}
		now := hi
		if r.IntN(10) == 0 {
			now -= r.Int64N(2e6)
		}
		if r.IntN(16) == 0 {
			k := 1 + r.Uint64N(keySpace)
			if bl.Delete(k) {
				tl.Delete(k)
			}
		}
		if sweeps && r.IntN(16) == 0 {
			if a, b := bl.SweepAt(now), tl.SweepAt(now); a != b {
				t.Fatalf("round %d: swept %d and %d", round, a, b)
			}
		}
		ks := keys[:1+r.IntN(len(keys))]
		for i := range ks {
			ks[i] = 1 + r.Uint64N(keySpace)
		}
		n := r.Uint64N(5)
		batch(bl, ks, now, n, out[:len(ks)])
		for i, k := range ks {
			if d := tl.TakeAt(k, now, n); out[i] != d {
				t.Fatalf("seed %d round %d: key %d (#%d of %d) at %d, n %d: batch %v, one by one %v", seed, round, k, i, len(ks), now, n, out[i], d)
			}
		}
		if afterBatch != nil {
			afterBatch(hi)
		}
	}
}

func twinLimiters(t *testing.T, cfg LimiterConfig) (*Limiter, *Limiter) {
	cfg.HashSeed, cfg.Shards = 5, 4
	return newLimiter(t, cfg), newLimiter(t, cfg)
}

// TestLimiterTakeBatchMatchesTakes: TakeBatchAt decides as TakeAt on each
// key in order: soft violations and lockouts (a duplicate later in a batch
// is refused by a lockout an earlier take of it started), full tables
// failing closed and open, escalation off, oversized takes; both limiters
// end with the same keys and counters.
func TestLimiterTakeBatchMatchesTakes(t *testing.T) {
	base := LimiterConfig{Rate: 1000, Burst: 3, MaxSoftViolations: 3, SoftViolationWindow: 50 * time.Millisecond, LockoutDuration: 200 * time.Millisecond}
	for _, c := range []struct {
		name     string
		keySpace uint64
		mod      func(*LimiterConfig)
	}{
		{"escalation", 300, func(c *LimiterConfig) { c.MaxKeys = 2000 }},
		// A table of over 1 MB of cells, whose batches load the cells in a
		// pass of their own first (shardmap's smallTable).
		{"escalation-large", 300, func(c *LimiterConfig) { c.MaxKeys = 100_000 }},
		{"escalation-hot", 20, func(c *LimiterConfig) { c.MaxKeys = 2000 }},
		{"full-closed", 400, func(c *LimiterConfig) { c.MaxKeys = 64 }},
		{"full-open", 400, func(c *LimiterConfig) { c.MaxKeys = 64; c.FailOpen = true }},
		{"no-escalation", 100, func(c *LimiterConfig) { c.MaxKeys = 2000; c.DisableEscalation = true }},
	} {
		// TakeBatchAt itself (on a table in cache, a loop of TakeAt), and
		// its path through the map's batches, whatever the table's size.
		for _, p := range []struct {
			name  string
			batch func(*Limiter, []uint64, int64, uint64, []Decision)
		}{{"", (*Limiter).TakeBatchAt}, {"-chunked", (*Limiter).takeBatchChunked}} {
			t.Run(c.name+p.name, func(t *testing.T) {
				for seed := range uint64(4) {
					cfg := base
					c.mod(&cfg)
					bl, tl := twinLimiters(t, cfg)
					batchLimiterOpsWith(t, p.batch, seed, bl, tl, c.keySpace, 300, true, nil)
					if a, b := bl.ReportAt(2e9), tl.ReportAt(2e9); a != b {
						t.Fatalf("seed %d: reports differ:\n%v\n%v", seed, a, b)
					}
				}
			})
		}
	}
}

// TestLimiterTakeBatchConcurrentSweep: a sweep racing the batches (3ms
// behind the latest reading; no batch's clock is more than 2ms behind it)
// forgets only idle keys, whose next take starts full and unmarked as it
// would have, so the decisions stay the unswept twin's. Run it with -race.
func TestLimiterTakeBatchConcurrentSweep(t *testing.T) {
	bl, tl := twinLimiters(t, LimiterConfig{Rate: 1000, Burst: 3, MaxKeys: 100_000, MaxSoftViolations: 3, SoftViolationWindow: 50 * time.Millisecond, LockoutDuration: 200 * time.Millisecond})
	var last atomic.Int64
	last.Store(1e9 - 3e6)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			bl.SweepAt(last.Load())
			runtime.Gosched()
		}
	}()
	batchLimiterOps(t, 3, bl, tl, 500, 1500, false, func(hi int64) { last.Store(hi - 3e6) })
	stop.Store(true)
	wg.Wait()
}

func TestLimiterTakeBatchClosed(t *testing.T) {
	l := newLimiter(t, LimiterConfig{Rate: 10, MaxKeys: 10})
	l.Close()
	out := make([]Decision, 3)
	l.TakeBatchAt([]uint64{1, 2, 1}, 0, 1, out)
	for i, d := range out {
		if d != (Decision{Reason: Closed}) {
			t.Fatalf("#%d: %v after Close", i, d)
		}
	}
}

func TestLimiterTakeBatchZeroAllocs(t *testing.T) {
	l := newLimiter(t, LimiterConfig{Rate: 1e9, Burst: 1e9, MaxKeys: 1000})
	keys := make([]uint64, 150)
	for i := range keys {
		keys[i] = uint64(i%90) + 1 // duplicates: runs end early
	}
	out := make([]Decision, len(keys))
	l.TakeBatchAt(keys, 1, 1, out)
	now := int64(1)
	if a := testing.AllocsPerRun(100, func() {
		now += 1000
		l.TakeBatchAt(keys, now, 1, out)
	}); a != 0 {
		t.Fatalf("TakeBatchAt: %v allocs per batch", a)
	}
	if a := testing.AllocsPerRun(100, func() {
		now += 1000
		l.takeBatchChunked(keys, now, 1, out)
	}); a != 0 {
		t.Fatalf("takeBatchChunked: %v allocs per batch", a)
	}
	for i, d := range out {
		if !d.Allowed {
			t.Fatalf("key %d: %v", keys[i], d)
		}
	}
}

// TestLimiterStringAndAddrBatches: the string and address forms decide as
// their single takes in order (duplicates included), and allocate nothing.
func TestLimiterStringAndAddrBatches(t *testing.T) {
	cfg := LimiterConfig{Rate: 100, Burst: 2, MaxKeys: 1000, MaxSoftViolations: 2}
	bl, tl := twinLimiters(t, cfg)
	bl.seed = tl.seed // one string and address hash for both
	r := rand.New(rand.NewPCG(8, 9))
	strs := make([]string, 150)
	addrs := make([]netip.Addr, 150)
	out := make([]Decision, 150)
	for round := range 40 {
		now := int64(round) * 7 * ms
		for i := range strs {
			strs[i] = fmt.Sprint("player-", r.IntN(60))
			addrs[i] = netip.AddrFrom4([4]byte{192, 0, 2, byte(r.IntN(60))})
		}
		bl.TakeStringBatchAt(strs, now, 1, out)
		for i, s := range strs {
			if d := tl.TakeStringAt(s, now, 1); out[i] != d {
				t.Fatalf("round %d: %q (#%d): batch %v, one by one %v", round, s, i, out[i], d)
			}
		}
		bl.TakeAddrBatchAt(addrs, now, 1, out)
		for i, a := range addrs {
			if d := tl.TakeAddrAt(a, now, 1); out[i] != d {
				t.Fatalf("round %d: %v (#%d): batch %v, one by one %v", round, a, i, out[i], d)
			}
		}
	}
	now := int64(1e12)
	if a := testing.AllocsPerRun(50, func() {
		now += 1e9
		bl.TakeStringBatchAt(strs, now, 1, out)
		bl.TakeAddrBatchAt(addrs, now, 1, out)
	}); a != 0 {
		t.Fatalf("%v allocs per pair of batches", a)
	}
}

// limBatchIn is one batch of a worker: its takes share now and n.
type limBatchIn struct {
	keys []uint64
	now  int64
	n    uint64
}

// TestLimiterBatchLinearizable is TestLimiterLinearizable with batches of
// 1 to 6 keys (duplicates included) through the map's batches
// (takeBatchChunked: TakeBatchAt on this table, which fits in cache, takes
// the keys one by one with TakeAt): each key's take is an operation over
// its batch's interval, partitioned by key.
func TestLimiterBatchLinearizable(t *testing.T) {
	for _, procs := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			for seed := range uint64(3) {
				limBatchLinRound(t, seed)
			}
		})
	}
}

func limBatchLinRound(t *testing.T, seed uint64) {
	const (
		t0      = int64(0)
		keys    = 4
		workers = 4
		opsEach = 20
	)
	l := newLimiter(t, LimiterConfig{Rate: 1e7, Burst: 3, MaxKeys: 32, Shards: 2, DisableEscalation: true})
	ref, err := atomicbucket.NewLimit(1e7, 3, t0)
	if err != nil {
		t.Fatal(err)
	}
	for k := uint64(1); k <= keys; k++ {
		if d := l.TakeAt(k, t0, 1); !d.Allowed {
			t.Fatal(d)
		}
	}
	var clock atomic.Int64
	clock.Store(t0 + 1000)
	var stop atomic.Bool
	var churn sync.WaitGroup
	churn.Add(1)
	go func() {
		defer churn.Done()
		for i := uint64(0); !stop.Load(); i++ {
			k := 1000 + i%24
			l.TakeAt(k, t0, 1)
			l.Delete(k)
		}
	}()
	batches := lincheck.Record(workers, opsEach, seed,
		func(r *rand.Rand) any {
			in := limBatchIn{keys: make([]uint64, 1+r.IntN(6)), now: clock.Add(r.Int64N(80)), n: 1 + r.Uint64N(2)}
			for i := range in.keys {
				in.keys[i] = 1 + r.Uint64N(keys)
			}
			return in
		},
		func(input any) (any, bool) {
			in := input.(limBatchIn)
			out := make([]Decision, len(in.keys))
			l.takeBatchChunked(in.keys, in.now, in.n, out)
			return out, true
		})
	stop.Store(true)
	churn.Wait()
	var history []porcupine.Operation
	for _, b := range batches {
		in, out := b.Input.(limBatchIn), b.Output.([]Decision)
		for i, k := range in.keys {
			history = append(history, porcupine.Operation{ClientId: b.ClientId, Call: b.Call, Return: b.Return, Input: limIn{k, in.now, in.n}, Output: out[i]})
		}
	}
	if res := porcupine.CheckOperationsTimeout(limModel(ref, t0), history, 20*time.Second); res == porcupine.Illegal {
		t.Fatalf("seed %d: %d batched takes not linearizable", seed, len(history))
	}
}
