package core

import (
	"math/rand/v2"
	"net/netip"
	"strconv"
	"sync/atomic"
	"testing"
)

// Benchmarks of a Limiter take on an existing key at 1k and 1M keys, serial
// and parallel; the floor (a plain map[uint64]uint64 lookup of the same
// keys) is BenchmarkFloorGoMap in package shardmap.

type limFixture struct {
	l     *Limiter
	keys  []uint64
	strs  []string
	addrs []netip.Addr
}

var limFixtures = map[int]*limFixture{}

func benchLimiter(b *testing.B, n int) *limFixture {
	b.Helper()
	if f := limFixtures[n]; f != nil {
		return f
	}
	// An eighth of slack over n: the bound is per shard.
	l, err := NewLimiter(LimiterConfig{Rate: 1e6, Burst: 1000, MaxKeys: n + n/8, Clock: func() int64 { return 0 }})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	f := &limFixture{l: l}
	for len(f.keys) < n {
		k := r.Uint64()
		if l.TakeAt(k, 0, 1).Allowed {
			f.keys = append(f.keys, k)
		}
	}
	for i := 0; i < 1024; i++ {
		s := "player-" + strconv.Itoa(i)
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		l.TakeStringAt(s, 0, 1)
		l.TakeAddrAt(a, 0, 1)
		f.strs = append(f.strs, s)
		f.addrs = append(f.addrs, a)
	}
	limFixtures[n] = f
	return f
}

func xs(x uint64) uint64 {
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	return x
}

func pickN(x uint64, n int) int { return int(((x >> 32) * uint64(n)) >> 32) }

func BenchmarkLimiterTake(b *testing.B) {
	for _, sz := range []struct {
		name string
		n    int
	}{{"1k", 1000}, {"1M", 1 << 20}} {
		b.Run(sz.name+"/serial", func(b *testing.B) {
			f := benchLimiter(b, sz.n)
			x, now := uint64(88172645463325252), int64(1e9)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				x = xs(x)
				now += 1000
				f.l.TakeAt(f.keys[pickN(x, len(f.keys))], now, 1)
			}
		})
		b.Run(sz.name+"/parallel", func(b *testing.B) {
			f := benchLimiter(b, sz.n)
			var seed atomic.Uint64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				x, now := seed.Add(0x9e3779b97f4a7c15)|1, int64(1e9)
				for pb.Next() {
					x = xs(x)
					now += 1000
					f.l.TakeAt(f.keys[pickN(x, len(f.keys))], now, 1)
				}
			})
		})
	}
}

func BenchmarkLimiterTakeString(b *testing.B) {
	f := benchLimiter(b, 1000)
	x, now := uint64(88172645463325252), int64(1e9)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x = xs(x)
		now += 1000
		f.l.TakeStringAt(f.strs[pickN(x, len(f.strs))], now, 1)
	}
}

func BenchmarkLimiterTakeAddr(b *testing.B) {
	f := benchLimiter(b, 1000)
	x, now := uint64(88172645463325252), int64(1e9)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x = xs(x)
		now += 1000
		f.l.TakeAddrAt(f.addrs[pickN(x, len(f.addrs))], now, 1)
	}
}
