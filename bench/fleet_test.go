package bench

import (
	"testing"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/fleet"
	"github.com/sluicedev/sluice/internal/cputime"
)

// fleetBenchLimiter is the configuration of both sides of BenchmarkFleet:
// a bucket so deep that a benchmark's takes never empty it.
func fleetBenchLimiter() core.LimiterConfig {
	return core.LimiterConfig{Rate: 1e9, Burst: 1e9, MaxKeys: 1000, DenyReason: core.AccountLimit, DisableEscalation: true, Clock: func() int64 { return 0 }}
}

// BenchmarkFleet compares a take of one tracked key in lease mode (a
// fleet.Layer spending tokens this server leased) with the same take on a
// core.Limiter alone. The lease is taken before the timer starts (on an
// in-memory store); the refresher is not running, so the take is the
// message path alone, as on a server whose leases are topped up.
func BenchmarkFleet(b *testing.B) {
	const key = 42
	b.Run("lease/take", func(b *testing.B) {
		f, err := fleet.New(fleet.Config{Store: fleet.NewMemStore(nil), Lease: 1e9})
		if err != nil {
			b.Fatal(err)
		}
		l, err := f.Layer(core.KeyedLayerSpec{Reason: core.AccountLimit, Path: "account", Limiter: fleetBenchLimiter()})
		if err != nil {
			b.Fatal(err)
		}
		if !l.TakeAt(key, 0, 1).Allowed {
			b.Fatal("first take denied")
		}
		b.ReportAllocs()
		ok := 0
		m := cputime.Serial()
		for i := 0; i < b.N; i++ {
			if l.TakeAt(key, 0, 1).Allowed {
				ok++
			}
		}
		m.Stop(b)
		if ok != b.N {
			b.Fatalf("%d of %d takes denied", b.N-ok, b.N)
		}
		sinkInt = ok
	})
	b.Run("local/take", func(b *testing.B) {
		l, err := core.NewLimiter(fleetBenchLimiter())
		if err != nil {
			b.Fatal(err)
		}
		l.TakeAt(key, 0, 1)
		b.ReportAllocs()
		ok := 0
		m := cputime.Serial()
		for i := 0; i < b.N; i++ {
			if l.TakeAt(key, 0, 1).Allowed {
				ok++
			}
		}
		m.Stop(b)
		if ok != b.N {
			b.Fatalf("%d of %d takes denied", b.N-ok, b.N)
		}
		sinkInt = ok
	})
}
