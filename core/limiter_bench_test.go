package core

import (
	"net/netip"
	"strconv"
	"testing"

	"github.com/sluicedev/sluice/internal/benchcheck"
	"github.com/sluicedev/sluice/internal/benchkeys"
)

// Benchmarks of a Limiter take on an existing string and address key. The
// take on an existing uint64 key, at 1k and 1M keys, serial and parallel,
// is BenchmarkKeyed in package bench (the regression gate's suite), whose
// floor is the same draw into a Go map (Floor/map1k, Floor/map1M).

// limFixture is a limiter holding string and address keys, and the
// latest time a benchmark took at. The fixture outlives one run, so each
// run starts at now and leaves it past its own last take: a run that
// started over from an earlier time would find the buckets ahead of its
// clock and time step-back denials (then escalation and lockouts) instead
// of passes.
type limFixture struct {
	l     *Limiter
	strs  []string
	addrs []netip.Addr
	now   int64
}

var limFix *limFixture

// namedKeys is how many string keys and how many address keys the fixture
// holds.
const namedKeys = 1024

func benchLimiter(b *testing.B) *limFixture {
	b.Helper()
	if limFix != nil {
		return limFix
	}
	// Room for every key, with an eighth of slack (the bound is per
	// shard): without it, a take would evict an idle key and insert, and
	// the benchmarks would time that instead of a take on a tracked key.
	// Escalation is off, as in package bench's keyed fixture: the pass
	// path is the same with it on.
	tracked := 2 * namedKeys
	l, err := NewLimiter(LimiterConfig{Rate: 1e6, Burst: 1000, MaxKeys: tracked + tracked/8, DisableEscalation: true, Clock: func() int64 { return 0 }})
	if err != nil {
		b.Fatal(err)
	}
	f := &limFixture{l: l, now: 1e9}
	for i := 0; i < namedKeys; i++ {
		s := "player-" + strconv.Itoa(i)
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		if !l.TakeStringAt(s, 0, 1).Allowed || !l.TakeAddrAt(a, 0, 1).Allowed {
			b.Fatalf("the fixture has no room for %q or %v", s, a)
		}
		f.strs = append(f.strs, s)
		f.addrs = append(f.addrs, a)
	}
	limFix = f
	return f
}

func BenchmarkLimiterTakeString(b *testing.B) {
	f := benchLimiter(b)
	x, now, ok := benchkeys.Start, f.now, 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x = benchkeys.Next(x)
		now += 1000
		if f.l.TakeStringAt(f.strs[benchkeys.Pick(x, len(f.strs))], now, 1).Allowed {
			ok++
		}
	}
	b.StopTimer()
	f.now = now
	benchcheck.AllPassed(b, ok, b.N)
}

func BenchmarkLimiterTakeAddr(b *testing.B) {
	f := benchLimiter(b)
	x, now, ok := benchkeys.Start, f.now, 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x = benchkeys.Next(x)
		now += 1000
		if f.l.TakeAddrAt(f.addrs[benchkeys.Pick(x, len(f.addrs))], now, 1).Allowed {
			ok++
		}
	}
	b.StopTimer()
	f.now = now
	benchcheck.AllPassed(b, ok, b.N)
}
