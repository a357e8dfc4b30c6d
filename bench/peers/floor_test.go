package peers

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicedev/sluice/internal/cputime"
)

// Sinks keep results alive so the compiler cannot drop the measured work.
var (
	sinkU64 uint64
	sinkDur time.Duration
)

// BenchmarkFloor measures what a take cannot beat on this machine, in the
// same run as the limiters, so ratios to it are machine-independent:
//
//   - cas: one atomic Load and one CompareAndSwap of a uint64 with trivial
//     arithmetic, uncontended (the least a one-word bucket must do to pass);
//   - cas-call: the same behind a function call that the compiler may not
//     inline, returning a four-word result like atomicbucket.Result: the
//     least a take costs when it is too big for Go's inliner, as every
//     take with a rate, a burst and a clock is;
//   - timesince: time.Since(start) (what atomicbucket.Nanotime costs);
//   - timenow: time.Now() (what clocked peers read on every take);
//   - map1k, map1m: one map[uint64]uint64 lookup of a key drawn like the
//     keyed benchmarks draw theirs (the least a keyed take must do).
func BenchmarkFloor(b *testing.B) {
	b.Run("cas", func(b *testing.B) {
		b.ReportAllocs()
		var w atomic.Uint64
		var ok uint64
		for i := 0; i < b.N; i++ {
			old := w.Load()
			if w.CompareAndSwap(old, old+3) {
				ok++
			}
		}
		sinkU64 = ok
	})
	b.Run("cas-call", func(b *testing.B) {
		b.ReportAllocs()
		var w atomic.Uint64
		var ok uint64
		for i := 0; i < b.N; i++ {
			if casCall(&w, 3).status == 1 {
				ok++
			}
		}
		sinkU64 = ok
	})
	b.Run("timesince", func(b *testing.B) {
		b.ReportAllocs()
		start := time.Now()
		var d time.Duration
		for i := 0; i < b.N; i++ {
			d += time.Since(start)
		}
		sinkDur = d
	})
	b.Run("timenow", func(b *testing.B) {
		b.ReportAllocs()
		var t time.Time
		for i := 0; i < b.N; i++ {
			t = time.Now()
		}
		sinkTime = t
	})
	for _, sz := range keySizes {
		b.Run("map"+sz.name, func(b *testing.B) {
			ks := keySetOf(sz.n)
			m := make(map[uint64]uint64, len(ks.u))
			for i, k := range ks.u {
				m[k] = uint64(i)
			}
			b.ReportAllocs()
			b.ResetTimer()
			var sum uint64
			cpu := cputime.Serial()
			for i := 0; i < b.N; i++ {
				sum += m[ks.u[ks.draws[i&drawMask]]]
			}
			cpu.Stop(b)
			sinkU64 = sum
		})
	}
}

// casResult has the shape of atomicbucket.Result: four words, returned in
// registers. Only status is read; the other fields are there for the shape.
//
//lint:ignore U1000 the unread fields give the result atomicbucket.Result's size
type casResult struct {
	p         *uint64
	now, need int64
	status    uint64
}

// casCall is Floor/cas behind a call boundary.
//
//go:noinline
func casCall(w *atomic.Uint64, n uint64) casResult {
	old := w.Load()
	if w.CompareAndSwap(old, old+n) {
		return casResult{status: 1}
	}
	return casResult{}
}
