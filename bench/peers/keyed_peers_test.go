package peers

import (
	"sync"
	"testing"
	"time"

	"github.com/sethvargo/go-limiter"
	sethvargo "github.com/sethvargo/go-limiter/memorystore"
	"github.com/throttled/throttled/v2"
	ulule "github.com/ulule/limiter/v3"
	xrate "golang.org/x/time/rate"

	"github.com/sluicedev/sluice/atomicbucket"
)

// ---- xrate-map: one x/time/rate Limiter per key in a map[uint64] under a
// sync.RWMutex (read-locked for the lookup; the Limiter has its own mutex).

//
// xrate-map-at: the same map, each take AllowN(t, 1) with t the caller's
// clock, as sluice-at is handed it: x/time/rate's own API for a time the
// caller read. The caller's int64 clock (atomicbucket.Nanotime's scale) is
// carried over to a time.Time by one Add from an anchor read at build
// time, the cost of keeping a time.Time clock.

type xrateMap struct {
	mu sync.RWMutex
	m  map[uint64]*xrate.Limiter
	c  keyedConfig
	// at: AllowN at the caller's clock (xrate-map-at), else Allow.
	at       bool
	anchor   time.Time // a time.Now() reading ...
	anchorNs int64     // ... and atomicbucket.Nanotime() read beside it
}

func buildXrateMap(at bool) func(tb testing.TB, ks *keySet, c keyedConfig) keyedLimiter {
	return func(tb testing.TB, ks *keySet, c keyedConfig) keyedLimiter {
		x := &xrateMap{m: make(map[uint64]*xrate.Limiter), c: c, at: at}
		x.anchor, x.anchorNs = time.Now(), atomicbucket.Nanotime()
		return insertAll(tb, ks, x)
	}
}

func (x *xrateMap) Take(_ int, k uint64, now int64) bool {
	x.mu.RLock()
	l := x.m[k]
	x.mu.RUnlock()
	if l == nil {
		x.mu.Lock()
		if l = x.m[k]; l == nil {
			l = xrate.NewLimiter(xrate.Limit(x.c.rate), int(x.c.burst))
			x.m[k] = l
		}
		x.mu.Unlock()
	}
	if x.at {
		return l.AllowN(x.anchor.Add(time.Duration(now-x.anchorNs)), 1)
	}
	return l.Allow()
}

func (x *xrateMap) Close() {}

// ---- sethvargo: memorystore (map[string] under an RWMutex, a mutex per
// bucket). Tokens = burst per Interval = burst/rate (1000 per 1 ms).

type sethvargoKeyed struct {
	ks *keySet
	st limiter.Store
}

func buildSethvargoKeyed(tb testing.TB, ks *keySet, c keyedConfig) keyedLimiter {
	st := newSethvargo(tb, &sethvargo.Config{
		Tokens:       uint64(c.burst),
		Interval:     time.Duration(c.burst / c.rate * float64(time.Second)),
		InitialAlloc: 0, // the library's default (4096)
	})
	return insertAll(tb, ks, &sethvargoKeyed{ks: ks, st: st})
}

func (s *sethvargoKeyed) Take(i int, _ uint64, _ int64) bool { return sethvargoTake(s.st, s.ks.s[i]) }
func (s *sethvargoKeyed) Close()                             { s.st.Close(bg) }

// ---- throttled: GCRA over memstore.NewCtx(0) (map[string]*int64 under an
// RWMutex, no LRU bound).

type throttledKeyed struct {
	ks *keySet
	l  *throttled.GCRARateLimiterCtx
}

func buildThrottledKeyed(tb testing.TB, ks *keySet, c keyedConfig) keyedLimiter {
	l := newThrottled(tb, config{rate: c.rate, burst: c.burst})
	return insertAll(tb, ks, &throttledKeyed{ks: ks, l: l})
}

func (t *throttledKeyed) Take(i int, _ uint64, _ int64) bool { return throttledTake(t.l, t.ks.s[i]) }
func (t *throttledKeyed) Close()                             {}

// ---- ulule: fixed window over its memory store (a sync.Map of counters,
// each with an RWMutex; every take builds "prefix:key"). Limit = burst per
// Period = burst/rate (1000 per 1 ms); clean-up goroutine off.

type ululeKeyed struct {
	ks *keySet
	l  *ulule.Limiter
}

func buildUluleKeyed(tb testing.TB, ks *keySet, c keyedConfig) keyedLimiter {
	l := newUlule(config{rate: c.rate, burst: c.burst})
	return insertAll(tb, ks, &ululeKeyed{ks: ks, l: l})
}

func (u *ululeKeyed) Take(i int, _ uint64, _ int64) bool { return ululeTake(u.l, u.ks.s[i]) }
func (u *ululeKeyed) Close()                             {}
