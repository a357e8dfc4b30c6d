package peers

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"time"

	jujurate "github.com/juju/ratelimit"
	"github.com/sethvargo/go-limiter"
	sethvargo "github.com/sethvargo/go-limiter/memorystore"
	"github.com/throttled/throttled/v2"
	"github.com/throttled/throttled/v2/store/memstore"
	ulule "github.com/ulule/limiter/v3"
	ulumem "github.com/ulule/limiter/v3/drivers/store/memory"
	uber "go.uber.org/ratelimit"
	xrate "golang.org/x/time/rate"

	"github.com/sluicedev/sluice/atomicbucket"
	"github.com/sluicedev/sluice/internal/benchcheck"
)

// config is the one bucket every implementation is built with, translated
// into each library's own terms by its constructor below.
type config struct {
	name  string  // "pass" or "deny"
	pass  bool    // every take must pass (checked after the timed loop)
	rate  float64 // tokens per second
	burst float64 // tokens
}

var (
	// passConfig: a rate so high that every take passes: one token per
	// nanosecond, and a burst of 1e9 so that even a take racing ahead of
	// the refill finds tokens.
	passConfig = config{name: "pass", pass: true, rate: 1e9, burst: 1e9}
	// denyConfig: one token per second, burst 1. The benchmark takes the
	// one token before the timer starts, so the timed takes are denials
	// (at most one more passes per elapsed second).
	denyConfig = config{name: "deny", pass: false, rate: 1, burst: 1}

	oneBucketConfigs = []config{passConfig, denyConfig}
)

// oneBucketImpl is one implementation under BenchmarkOneBucket. serial and
// parallel build a fresh bucket from the config, take its first token in
// deny mode, reset the timer, run b.N takes and return how many passed,
// with the timer stopped. parallel's goroutines count in a local and add it
// to a shared total once, so the timed loop writes no shared memory.
//
// Every pair is written out rather than built from one take closure: the
// timed loop calls the take directly, as a server would, where a closure
// would add an indirect call per op, a sizeable share of a sluice take of a
// few nanoseconds.
type oneBucketImpl struct {
	name     string
	passOnly bool // the library blocks instead of denying (uber)
	serial   func(b *testing.B, c config) (passed int64)
	parallel func(b *testing.B, c config) (passed int64)
}

// oneBucketImpls is every implementation measured on a single shared
// bucket. Names are part of the benchmark contract (see bench/README.md).
var oneBucketImpls = []oneBucketImpl{
	{name: "sluice", serial: sluiceSerial, parallel: sluiceParallel},
	{name: "sluice-at", serial: sluiceAtSerial, parallel: sluiceAtParallel},
	{name: "sluice-coarse", serial: sluiceCoarseSerial, parallel: sluiceCoarseParallel},
	{name: "xrate", serial: xrateSerial, parallel: xrateParallel},
	{name: "xrate-at", serial: xrateAtSerial, parallel: xrateAtParallel},
	{name: "uber", passOnly: true, serial: uberSerial, parallel: uberParallel},
	{name: "juju", serial: jujuSerial, parallel: jujuParallel},
	{name: "throttled", serial: throttledSerial, parallel: throttledParallel},
	{name: "sethvargo", serial: sethvargoSerial, parallel: sethvargoParallel},
	{name: "ulule", serial: ululeSerial, parallel: ululeParallel},
}

// BenchmarkOneBucket/<impl>/<pass|deny>/<serial|parallel>: one take of one
// token from one bucket per op. parallel shares ONE bucket among the
// b.RunParallel goroutines (GOMAXPROCS of them).
func BenchmarkOneBucket(b *testing.B) {
	for _, im := range oneBucketImpls {
		b.Run(im.name, func(b *testing.B) {
			for _, c := range oneBucketConfigs {
				if im.passOnly && !c.pass {
					continue
				}
				b.Run(c.name, func(b *testing.B) {
					b.Run("serial", func(b *testing.B) { runOneBucket(b, c, im.serial) })
					b.Run("parallel", func(b *testing.B) { runOneBucket(b, c, im.parallel) })
				})
			}
		})
	}
}

// runOneBucket runs one leaf benchmark and checks, outside the timed loop,
// that the takes did what the mode says: in pass mode every take passed; in
// deny mode at most one take per elapsed second (plus slack) passed.
func runOneBucket(b *testing.B, c config, run func(*testing.B, config) int64) {
	b.ReportAllocs()
	passed := run(b, c)
	checkPassed(b, c, passed)
}

func checkPassed(b *testing.B, c config, passed int64) {
	b.Helper()
	if c.pass {
		benchcheck.AllPassed(b, int(passed), b.N)
		return
	}
	if limit := int64(b.Elapsed()/time.Second) + 2; passed > limit {
		b.Fatalf("deny mode: %d of %d takes passed in %v (at most %d expected)", passed, b.N, b.Elapsed(), limit)
	}
}

// mustFirst fails the benchmark when the first take of a fresh bucket, made
// before the timer starts in deny mode, did not pass.
func mustFirst(b *testing.B, ok bool) {
	b.Helper()
	if !ok {
		b.Fatal("the first take of a full bucket was denied")
	}
}

// ---- sluice: Take(1) on its own monotonic clock (atomicbucket.Nanotime).

func newSluice(b *testing.B, c config, now int64) *atomicbucket.Bucket {
	bk, err := atomicbucket.NewAt(c.rate, c.burst, now)
	if err != nil {
		b.Fatal(err)
	}
	return bk
}

func sluiceSerial(b *testing.B, c config) int64 {
	bk := newSluice(b, c, atomicbucket.Nanotime())
	if !c.pass {
		mustFirst(b, bk.Take(1).OK())
	}
	var passed int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if bk.Take(1).OK() {
			passed++
		}
	}
	b.StopTimer()
	return passed
}

func sluiceParallel(b *testing.B, c config) int64 {
	bk := newSluice(b, c, atomicbucket.Nanotime())
	if !c.pass {
		mustFirst(b, bk.Take(1).OK())
	}
	var total atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var passed int64
		for pb.Next() {
			if bk.Take(1).OK() {
				passed++
			}
		}
		total.Add(passed)
	})
	b.StopTimer()
	return total.Load()
}

// ---- sluice-at: TakeAt(now, 1) with the caller's clock: a local int64
// counter advanced by 1 ns per op. In parallel each goroutine keeps its own
// counter, all starting at the bucket's creation time 0: a game server's
// per-worker tick. The counters drift apart, so some takes carry a reading
// older than the bucket's last update, which the bucket handles (it credits
// nothing for it).

func sluiceAtSerial(b *testing.B, c config) int64 {
	bk := newSluice(b, c, 0)
	now := int64(0)
	if !c.pass {
		mustFirst(b, bk.TakeAt(now, 1).OK())
	}
	var passed int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now++
		if bk.TakeAt(now, 1).OK() {
			passed++
		}
	}
	b.StopTimer()
	return passed
}

func sluiceAtParallel(b *testing.B, c config) int64 {
	bk := newSluice(b, c, 0)
	if !c.pass {
		mustFirst(b, bk.TakeAt(0, 1).OK())
	}
	var total atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var passed int64
		now := int64(0) // per-goroutine caller clock
		for pb.Next() {
			now++
			if bk.TakeAt(now, 1).OK() {
				passed++
			}
		}
		total.Add(passed)
	})
	b.StopTimer()
	return total.Load()
}

// ---- sluice-coarse: TakeAt(clock.Now(), 1) with a CoarseClock (1 ms tick)
// started for the benchmark and stopped after it.

func sluiceCoarseSerial(b *testing.B, c config) int64 {
	clk := atomicbucket.StartCoarseClock(time.Millisecond)
	defer clk.Stop()
	bk := newSluice(b, c, clk.Now())
	if !c.pass {
		mustFirst(b, bk.TakeAt(clk.Now(), 1).OK())
	}
	var passed int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if bk.TakeAt(clk.Now(), 1).OK() {
			passed++
		}
	}
	b.StopTimer()
	return passed
}

func sluiceCoarseParallel(b *testing.B, c config) int64 {
	clk := atomicbucket.StartCoarseClock(time.Millisecond)
	defer clk.Stop()
	bk := newSluice(b, c, clk.Now())
	if !c.pass {
		mustFirst(b, bk.TakeAt(clk.Now(), 1).OK())
	}
	var total atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var passed int64
		for pb.Next() {
			if bk.TakeAt(clk.Now(), 1).OK() {
				passed++
			}
		}
		total.Add(passed)
	})
	b.StopTimer()
	return total.Load()
}

// ---- xrate: golang.org/x/time/rate Limiter.Allow (a mutex and time.Now),
// as sluice's own-clock Take reads its clock.

func newXrate(c config) *xrate.Limiter {
	return xrate.NewLimiter(xrate.Limit(c.rate), int(c.burst))
}

func xrateSerial(b *testing.B, c config) int64 {
	l := newXrate(c)
	if !c.pass {
		mustFirst(b, l.Allow())
	}
	var passed int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if l.Allow() {
			passed++
		}
	}
	b.StopTimer()
	return passed
}

func xrateParallel(b *testing.B, c config) int64 {
	l := newXrate(c)
	if !c.pass {
		mustFirst(b, l.Allow())
	}
	var total atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var passed int64
		for pb.Next() {
			if l.Allow() {
				passed++
			}
		}
		total.Add(passed)
	})
	b.StopTimer()
	return total.Load()
}

// ---- xrate-at: Limiter.AllowN(t, 1) with the caller's clock, as sluice-at
// is handed it: a time.Time advanced by 1 ns per op (in parallel, one per
// goroutine, all starting at the bucket's creation), x/time/rate's own API
// for a time the caller keeps.

func xrateAtSerial(b *testing.B, c config) int64 {
	l := newXrate(c)
	t := time.Now()
	if !c.pass {
		mustFirst(b, l.AllowN(t, 1))
	}
	var passed int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t = t.Add(1)
		if l.AllowN(t, 1) {
			passed++
		}
	}
	b.StopTimer()
	return passed
}

func xrateAtParallel(b *testing.B, c config) int64 {
	l := newXrate(c)
	start := time.Now()
	if !c.pass {
		mustFirst(b, l.AllowN(start, 1))
	}
	var total atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var passed int64
		t := start
		for pb.Next() {
			t = t.Add(1)
			if l.AllowN(t, 1) {
				passed++
			}
		}
		total.Add(passed)
	})
	b.StopTimer()
	return total.Load()
}

// ---- uber: go.uber.org/ratelimit Take. It never denies: it sleeps until
// the next permit. Pass mode only: New(1e9) is one permit per nanosecond
// with the default slack of 10, so a take sleeps only if takes arrive faster
// than one per nanosecond on average, which a take costing tens of
// nanoseconds cannot do. Every Take counts as a pass.

func newUber(c config) uber.Limiter { return uber.New(int(c.rate)) }

var sinkTime time.Time

func uberSerial(b *testing.B, c config) int64 {
	l := newUber(c)
	var t time.Time
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t = l.Take()
	}
	b.StopTimer()
	sinkTime = t
	return int64(b.N)
}

func uberParallel(b *testing.B, c config) int64 {
	l := newUber(c)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var t time.Time
		for pb.Next() {
			t = l.Take()
		}
		_ = t
	})
	b.StopTimer()
	return int64(b.N)
}

// ---- juju: github.com/juju/ratelimit Bucket.TakeAvailable(1) (a mutex).

func newJuju(c config) *jujurate.Bucket {
	return jujurate.NewBucketWithRate(c.rate, int64(c.burst))
}

func jujuSerial(b *testing.B, c config) int64 {
	tb := newJuju(c)
	if !c.pass {
		mustFirst(b, tb.TakeAvailable(1) == 1)
	}
	var passed int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if tb.TakeAvailable(1) == 1 {
			passed++
		}
	}
	b.StopTimer()
	return passed
}

func jujuParallel(b *testing.B, c config) int64 {
	tb := newJuju(c)
	if !c.pass {
		mustFirst(b, tb.TakeAvailable(1) == 1)
	}
	var total atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var passed int64
		for pb.Next() {
			if tb.TakeAvailable(1) == 1 {
				passed++
			}
		}
		total.Add(passed)
	})
	b.StopTimer()
	return total.Load()
}

// ---- throttled: GCRA (throttled/v2) over its in-memory store
// (memstore.NewCtx(0): a plain map under an RWMutex, no LRU bound), one key.
// Its MaxBurst counts requests beyond the first, so burst b is MaxBurst b-1.
// Its CAS loop gives up with an error after 10 lost races by default, which
// two goroutines hammering one key hit now and then (a take that neither
// passes nor is denied); like sluice's CAS loop it is set to retry until it
// wins, so every take gets a decision.

var bg = context.Background()

func newThrottled(b testing.TB, c config) *throttled.GCRARateLimiterCtx {
	st, err := memstore.NewCtx(0)
	if err != nil {
		b.Fatal(err)
	}
	l, err := throttled.NewGCRARateLimiterCtx(st, throttled.RateQuota{
		MaxRate:  throttled.PerSec(int(c.rate)),
		MaxBurst: int(c.burst) - 1,
	})
	if err != nil {
		b.Fatal(err)
	}
	l.SetMaxCASAttemptsLimit(math.MaxInt)
	return l
}

func throttledTake(l *throttled.GCRARateLimiterCtx, key string) bool {
	limited, _, err := l.RateLimitCtx(bg, key, 1)
	return !limited && err == nil
}

func throttledSerial(b *testing.B, c config) int64 {
	l := newThrottled(b, c)
	if !c.pass {
		mustFirst(b, throttledTake(l, "k"))
	}
	var passed int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if throttledTake(l, "k") {
			passed++
		}
	}
	b.StopTimer()
	return passed
}

func throttledParallel(b *testing.B, c config) int64 {
	l := newThrottled(b, c)
	if !c.pass {
		mustFirst(b, throttledTake(l, "k"))
	}
	var total atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var passed int64
		for pb.Next() {
			if throttledTake(l, "k") {
				passed++
			}
		}
		total.Add(passed)
	})
	b.StopTimer()
	return total.Load()
}

// ---- sethvargo: github.com/sethvargo/go-limiter memorystore, one key.
// Its bucket holds Tokens and refills on Interval ticks. Tokens = burst and
// Interval = burst/rate is the same bucket, except that v0.7.1 refills
// ticks × Interval/Tokens tokens per tick (capped at Tokens), which for
// Tokens = 1e9, Interval = 1s is ONE token per second after the first
// interval. So pass mode uses Interval = 1000 s: every take of a run falls
// in the first interval and passes; the code path per take is the same.

func sethvargoStoreConfig(c config) *sethvargo.Config {
	interval := time.Duration(c.burst / c.rate * float64(time.Second))
	if c.pass {
		interval = 1000 * time.Second
	}
	return &sethvargo.Config{Tokens: uint64(c.burst), Interval: interval}
}

func newSethvargo(b testing.TB, cfg *sethvargo.Config) limiter.Store {
	st, err := sethvargo.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return st
}

func sethvargoTake(st limiter.Store, key string) bool {
	_, _, _, ok, err := st.Take(bg, key)
	return ok && err == nil
}

func sethvargoSerial(b *testing.B, c config) int64 {
	st := newSethvargo(b, sethvargoStoreConfig(c))
	defer st.Close(bg)
	if !c.pass {
		mustFirst(b, sethvargoTake(st, "k"))
	}
	var passed int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if sethvargoTake(st, "k") {
			passed++
		}
	}
	b.StopTimer()
	return passed
}

func sethvargoParallel(b *testing.B, c config) int64 {
	st := newSethvargo(b, sethvargoStoreConfig(c))
	defer st.Close(bg)
	if !c.pass {
		mustFirst(b, sethvargoTake(st, "k"))
	}
	var total atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var passed int64
		for pb.Next() {
			if sethvargoTake(st, "k") {
				passed++
			}
		}
		total.Add(passed)
	})
	b.StopTimer()
	return total.Load()
}

// ---- ulule: github.com/ulule/limiter/v3 with its memory store, one key.
// It is a fixed-window counter: Limit = burst takes per Period = burst/rate.
// The store's clean-up goroutine is off (CleanUpInterval 0); it only
// deletes expired keys and is not on the take path.

func newUlule(c config) *ulule.Limiter {
	store := ulumem.NewStoreWithOptions(ulule.StoreOptions{Prefix: ulule.DefaultPrefix})
	return ulule.New(store, ulule.Rate{
		Period: time.Duration(c.burst / c.rate * float64(time.Second)),
		Limit:  int64(c.burst),
	})
}

func ululeTake(l *ulule.Limiter, key string) bool {
	ctx, err := l.Get(bg, key)
	return !ctx.Reached && err == nil
}

func ululeSerial(b *testing.B, c config) int64 {
	l := newUlule(c)
	if !c.pass {
		mustFirst(b, ululeTake(l, "k"))
	}
	var passed int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if ululeTake(l, "k") {
			passed++
		}
	}
	b.StopTimer()
	return passed
}

func ululeParallel(b *testing.B, c config) int64 {
	l := newUlule(c)
	if !c.pass {
		mustFirst(b, ululeTake(l, "k"))
	}
	var total atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var passed int64
		for pb.Next() {
			if ululeTake(l, "k") {
				passed++
			}
		}
		total.Add(passed)
	})
	b.StopTimer()
	return total.Load()
}
