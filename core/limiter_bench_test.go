package core

import (
	"net/netip"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/sluicedev/sluice/internal/benchcheck"
	"github.com/sluicedev/sluice/internal/benchkeys"
)

// Benchmarks of a Limiter take on an existing key at 1k and 1M keys, serial
// and parallel; the floor (a plain map[uint64]uint64 lookup of the same
// keys) is BenchmarkFloorGoMap in package shardmap.

// limFixture is a limiter holding keys, strings and addresses, and the
// latest time a benchmark took at. The fixture outlives one run, so each
// run starts at now and leaves it past its own last take: a run that
// started over from an earlier time would find the buckets ahead of its
// clock and time step-back denials (then escalation and lockouts) instead
// of passes.
type limFixture struct {
	l     *Limiter
	keys  []uint64
	strs  []string
	addrs []netip.Addr
	now   int64
}

var limFixtures = map[int]*limFixture{}

// namedKeys is how many string keys and how many address keys a fixture
// holds besides its uint64 keys.
const namedKeys = 1024

func benchLimiter(b *testing.B, n int) *limFixture {
	b.Helper()
	if f := limFixtures[n]; f != nil {
		return f
	}
	// The fixture holds n keys, then the strings' and the addresses'
	// (without room for them, each of their takes would evict an idle key
	// and insert, and their benchmarks would time that instead of a take
	// on a tracked key), with an eighth of slack: the bound is per shard.
	// Escalation is off: the pass path is the same with it on, but the few
	// denials a preempted goroutine's stale clock reading causes in the
	// parallel runs would count as violations, and enough of them lock
	// keys out, so that later runs would time refusals. The rate, 1e6 a
	// key, is low enough that a clock reading a microsecond stale costs a
	// take one token, not the burst (at 1e9, 0.4% of the 1k parallel
	// takes failed on two cores), and high enough that the 1k fixture
	// refills 1e9 tokens a second in all.
	held := n + 2*namedKeys
	l, err := NewLimiter(LimiterConfig{Rate: 1e6, Burst: 1000, MaxKeys: held + held/8, DisableEscalation: true, Clock: func() int64 { return 0 }})
	if err != nil {
		b.Fatal(err)
	}
	f := &limFixture{l: l, now: 1e9}
	f.keys = benchkeys.Fill(n, func(k uint64) bool { return l.TakeAt(k, 0, 1).Allowed })
	for i := 0; i < namedKeys; i++ {
		s := "player-" + strconv.Itoa(i)
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		if !l.TakeStringAt(s, 0, 1).Allowed || !l.TakeAddrAt(a, 0, 1).Allowed {
			b.Fatalf("the fixture of %d keys has no room for %q or %v", n, s, a)
		}
		f.strs = append(f.strs, s)
		f.addrs = append(f.addrs, a)
	}
	limFixtures[n] = f
	return f
}

func BenchmarkLimiterTake(b *testing.B) {
	for _, sz := range []struct {
		name string
		n    int
	}{{"1k", 1000}, {"1M", 1 << 20}} {
		b.Run(sz.name+"/serial", func(b *testing.B) {
			f := benchLimiter(b, sz.n)
			x, now, ok := benchkeys.Start, f.now, 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				x = benchkeys.Next(x)
				now += 1000
				if f.l.TakeAt(f.keys[benchkeys.Pick(x, len(f.keys))], now, 1).Allowed {
					ok++
				}
			}
			b.StopTimer()
			f.now = now
			benchcheck.AllPassed(b, ok, b.N)
		})
		b.Run(sz.name+"/parallel", func(b *testing.B) {
			f := benchLimiter(b, sz.n)
			var seed atomic.Uint64
			clock := benchcheck.ClockFrom(f.now) // read once per 64 takes
			var passed atomic.Int64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				x, ok := seed.Add(benchkeys.Stride)|1, int64(0)
				var now int64
				for i := 0; pb.Next(); i++ {
					if i&63 == 0 {
						now = clock.Now()
					}
					x = benchkeys.Next(x)
					if f.l.TakeAt(f.keys[benchkeys.Pick(x, len(f.keys))], now, 1).Allowed {
						ok++
					}
				}
				passed.Add(ok)
			})
			b.StopTimer()
			f.now = clock.Now() // past every goroutine's last reading
			benchcheck.NearlyAllPassed(b, passed.Load(), int64(b.N))
		})
	}
}

func BenchmarkLimiterTakeString(b *testing.B) {
	f := benchLimiter(b, 1000)
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
	f := benchLimiter(b, 1000)
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
