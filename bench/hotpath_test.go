package bench

import (
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/sluicedev/sluice/atomicbucket"
	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/internal/benchcheck"
	"github.com/sluicedev/sluice/internal/benchkeys"
	"github.com/sluicedev/sluice/internal/cputime"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// Every benchmark here reports allocations and CPU time (cpu-ns/op, see
// cpu_test.go), so the gate can hold them as well as wall time. The names are part of the contract with the
// gate's floor rules (bench/gate/default.yaml): rename both together.

// Sinks keep results alive so the compiler cannot drop the measured work.
// RunParallel's goroutines add to sinkPar: a plain store from each of them
// is a data race, which fails the benchmark under -race.
var (
	sinkInt int
	sinkU64 uint64
	sinkI64 int64
	sinkPar atomic.Int64
)

// large skips a benchmark whose fixture takes long to build in -short mode
// (the quick set).
func large(b *testing.B) {
	if testing.Short() {
		b.Skip("large fixture; runs without -short")
	}
}

// keySizes are the keyed table sizes: 1k in the quick set, 1M in the full.
var keySizes = []struct {
	name  string
	n     int
	large bool
}{{"1k", 1000, false}, {"1M", 1 << 20, true}}

// BenchmarkFloor measures what a hot path cannot beat on this machine, in
// the same run as the hot paths, so that ratios to it do not depend on the
// machine's speed.
func BenchmarkFloor(b *testing.B) {
	b.Run("cas", func(b *testing.B) {
		b.ReportAllocs()
		var w atomic.Uint64
		ok := 0
		m := cputime.Serial()
		for i := 0; i < b.N; i++ {
			old := w.Load()
			if w.CompareAndSwap(old, old+3) {
				ok++
			}
		}
		m.Stop(b)
		sinkInt = ok
	})
	b.Run("cas-shared", func(b *testing.B) {
		b.ReportAllocs()
		var w atomic.Uint64
		m := cputime.Parallel()
		b.RunParallel(func(pb *testing.PB) {
			ok := 0
			for pb.Next() {
				old := w.Load()
				if w.CompareAndSwap(old, old+3) {
					ok++
				}
			}
			sinkPar.Add(int64(ok))
		})
		m.Stop(b)
	})
	b.Run("clock", func(b *testing.B) {
		b.ReportAllocs()
		var t int64
		m := cputime.Serial()
		for i := 0; i < b.N; i++ {
			t += atomicbucket.Nanotime()
		}
		m.Stop(b)
		sinkI64 = t
	})
	for _, sz := range keySizes {
		b.Run("map"+sz.name, func(b *testing.B) {
			if sz.large {
				large(b)
			}
			keys := benchkeys.Random(sz.n)
			m := make(map[uint64]uint64, len(keys))
			for i, k := range keys {
				m[k] = uint64(i)
			}
			b.ReportAllocs()
			x := benchkeys.Start
			var sum uint64
			b.ResetTimer()
			cpu := cputime.Serial()
			for i := 0; i < b.N; i++ {
				x = benchkeys.Next(x)
				sum += m[keys[benchkeys.Pick(x, len(keys))]]
			}
			cpu.Stop(b)
			sinkU64 = sum
		})
	}
}

func mustBucket(b *testing.B, rate, burst float64, now int64) *atomicbucket.Bucket {
	b.Helper()
	bk, err := atomicbucket.NewAt(rate, burst, now)
	if err != nil {
		b.Fatal(err)
	}
	return bk
}

// BenchmarkBucket measures one take of one bucket: a pass (the bucket never
// runs dry: it refills a token per ns and one ns passes per take) and a
// deny (the bucket is empty and refills one token per second), serial and
// from every P at once on the same bucket, and a pass that reads the
// monotonic clock.
//
// Under the sluice_slow20 build tag each of them also makes one take on a
// twin bucket for every five takes measured, inside the timed region
// (see doc.go).
func BenchmarkBucket(b *testing.B) {
	for _, c := range []struct {
		name        string
		rate, burst float64
		empty       bool
	}{{"pass", 1e9, 1e9, false}, {"deny", 1, 1, true}} {
		fresh := func(b *testing.B) *atomicbucket.Bucket {
			bk := mustBucket(b, c.rate, c.burst, 0)
			if c.empty {
				bk.TakeAt(0, 1)
			}
			return bk
		}
		b.Run(c.name+"/serial", func(b *testing.B) {
			bk, twin := fresh(b), fresh(b)
			b.ReportAllocs()
			b.ResetTimer()
			m := cputime.Serial()
			sinkInt = serialTakes(bk, b.N) + serialTakes(twin, extraTakes(b.N))
			m.Stop(b)
		})
		b.Run(c.name+"/parallel", func(b *testing.B) {
			bk, twin := fresh(b), fresh(b)
			b.ReportAllocs()
			b.ResetTimer()
			m := cputime.Parallel()
			defer m.Stop(b)
			b.RunParallel(func(pb *testing.PB) {
				now, ok, n := int64(0), 0, 0
				for pb.Next() {
					now++
					n++
					if bk.TakeAt(now, 1).OK() {
						ok++
					}
				}
				ok += serialTakes(twin, extraTakes(n))
				sinkPar.Add(int64(ok))
			})
		})
	}
	b.Run("pass/clock", func(b *testing.B) {
		bk, twin := mustBucket(b, 1e9, 1e9, atomicbucket.Nanotime()), mustBucket(b, 1e9, 1e9, atomicbucket.Nanotime())
		b.ReportAllocs()
		b.ResetTimer()
		ok := 0
		m := cputime.Serial()
		for i := 0; i < b.N; i++ {
			if bk.Take(1).OK() {
				ok++
			}
		}
		for i := extraTakes(b.N); i > 0; i-- {
			if twin.Take(1).OK() {
				ok++
			}
		}
		m.Stop(b)
		sinkInt = ok
	})
}

// serialTakes makes n takes of one token at times 1..n and counts passes.
func serialTakes(bk *atomicbucket.Bucket, n int) int {
	now, ok := int64(0), 0
	for i := 0; i < n; i++ {
		now++
		if bk.TakeAt(now, 1).OK() {
			ok++
		}
	}
	return ok
}

// keyed fixtures are built once per process: the 1M one takes a while.
var keyedFixtures = map[int]*keyedFixture{}

// keyedFixture is a limiter holding keys, and the latest time a benchmark
// took at. Each run starts at now and leaves it past its own last take: a
// run that started over from an earlier time would find the buckets ahead
// of its clock and time step-back denials instead of passes.
type keyedFixture struct {
	l    *core.Limiter
	keys []uint64
	now  int64
}

func keyed(b *testing.B, n int) *keyedFixture {
	b.Helper()
	if f := keyedFixtures[n]; f != nil {
		return f
	}
	// An eighth of slack over n: the bound is kept per shard. Escalation
	// is off: the pass path is the same with it on, but the few denials a
	// preempted goroutine's stale clock reading causes would count as
	// violations, and enough of them lock keys out for 30 s of the
	// fixture's clock, so that later runs would time refusals.
	l, err := core.NewLimiter(core.LimiterConfig{Rate: 1e6, Burst: 1000, MaxKeys: n + n/8, DisableEscalation: true, Clock: func() int64 { return 0 }})
	if err != nil {
		b.Fatal(err)
	}
	// Keys a full shard refuses are skipped, so the table holds n keys.
	f := &keyedFixture{l: l, now: 1e9}
	f.keys = benchkeys.Fill(n, func(k uint64) bool { return l.TakeAt(k, 0, 1).Allowed })
	keyedFixtures[n] = f
	return f
}

// BenchmarkKeyed measures core.Limiter.TakeAt on an existing key among 1k
// and 1M tracked keys, drawn at random, serial and parallel. Its floors are
// Floor/map1k and Floor/map1M (the same draw into a Go map).
func BenchmarkKeyed(b *testing.B) {
	for _, sz := range keySizes {
		b.Run(sz.name+"/serial", func(b *testing.B) {
			if sz.large {
				large(b)
			}
			f := keyed(b, sz.n)
			x, now, ok := benchkeys.Start, f.now, 0
			b.ReportAllocs()
			b.ResetTimer()
			m := cputime.Serial()
			for i := 0; i < b.N; i++ {
				x = benchkeys.Next(x)
				now += 1000
				if f.l.TakeAt(f.keys[benchkeys.Pick(x, len(f.keys))], now, 1).Allowed {
					ok++
				}
			}
			m.Stop(b)
			sinkInt, f.now = ok, now
			benchcheck.AllPassed(b, ok, b.N)
		})
		b.Run(sz.name+"/parallel", func(b *testing.B) {
			if sz.large {
				large(b)
			}
			f := keyed(b, sz.n)
			var seed atomic.Uint64
			clock := benchcheck.ClockFrom(f.now) // read once per 64 takes
			var passed atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			m := cputime.Parallel()
			defer m.Stop(b)
			b.RunParallel(func(pb *testing.PB) {
				x, ok := seed.Add(benchkeys.Stride)|1, 0
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
				passed.Add(int64(ok))
			})
			f.now = clock.Now() // past every goroutine's last reading
			benchcheck.NearlyAllPassed(b, passed.Load(), int64(b.N))
		})
	}
}

// gatePolicy has a channel that always passes and one that is empty after
// its first message; every other layer is generous and strikes are off, so
// the deny benchmark stays on the channel-deny path.
func gatePolicy() core.Policy {
	return core.Policy{
		Channels: []core.Channel{
			{Name: "move", Class: core.ClassInput, Rate: new(1e9), Burst: new(1e9)},
			{Name: "slow", Class: core.ClassInput, Rate: new(1.0), Burst: new(1.0)},
		},
		Transport: core.Transport{
			Bytes:  core.Budget{Rate: new(1e9), Burst: new(1e9)},
			Frames: core.Budget{Rate: new(1e9), Burst: new(1e9)},
		},
		Account: core.Budget{Rate: new(1e9), Burst: new(1e9)},
		Match:   core.Budget{Rate: new(1e9), Burst: new(1e9)},
		Strikes: core.Strikes{Disabled: true},
	}
}

// BenchmarkGate measures core.Gate.Check of a 32-byte input message of an
// authenticated session in a match: accept (transport, account, channel and
// match buckets all pass) and deny (the channel's bucket is empty).
//
// accept-recorded is accept with a recorder attached (core.WithRecorder),
// its trace.Recorder draining the buffer into a trace file on a goroutine
// of its own, as `sluice serve --record` runs it; lost/op is the fraction
// of records the buffer had to drop because the writer fell behind.
func BenchmarkGate(b *testing.B) {
	for _, c := range []struct {
		name     string
		kind     uint16
		want     core.Action
		scraped  bool // a metrics.GateCollector attached and scraped without pause
		recorded bool // a recorder attached, its writer draining to a file
	}{{"accept", 0, core.Accept, false, false}, {"accept-recorded", 0, core.Accept, false, true}, {"deny", 1, core.Drop, false, false}, {"accept-scraped", 0, core.Accept, true, false}} {
		b.Run(c.name, func(b *testing.B) {
			var opts []core.GateOption
			var rec *benchRecorder
			if c.recorded {
				rec = newBenchRecorder(b, gatePolicy())
				opts = append(opts, core.WithRecorder(rec.buf))
			}
			g, err := core.NewGate(gatePolicy(), 0, opts...)
			if err != nil {
				b.Fatal(err)
			}
			s, v := g.Open(netip.MustParseAddrPort("192.0.2.1:4000"), 0)
			if !v.OK() {
				b.Fatalf("open: %+v", v)
			}
			if v := g.Authenticate(s, 42, 0); !v.OK() {
				b.Fatalf("authenticate: %+v", v)
			}
			m := core.Message{Session: s, Match: 7, Size: 32, Kind: c.kind}
			g.Check(m, 0) // empties "slow"
			if v := g.Check(m, 1000); v.Action != c.want {
				b.Fatalf("check: %+v, want %v", v, c.want)
			}
			if c.scraped {
				defer scrapeContinuously(b, g)()
			}
			now, ok := int64(1000), 0
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cputime.Serial()
			for i := 0; i < b.N; i++ {
				now += 1000
				if g.Check(m, now).OK() {
					ok++
				}
			}
			cpu.Stop(b)
			sinkInt = ok
			if rec != nil {
				rec.stop(b)
			}
		})
	}
	// Sessions and accounts drawn from 100,000 (gate_batch_test.go).
	b.Run("accept-100k", func(b *testing.B) { benchGate100k(b, 0) })
	b.Run("accept-batch-100k", func(b *testing.B) { benchGate100k(b, 64) })
}

// BenchmarkWire measures decoding a 4 kB buffer of typical client frames
// (inputs, requests and pings, 16-byte payloads) with wire.Decoder.
func BenchmarkWire(b *testing.B) {
	b.Run("decode", func(b *testing.B) {
		var buf []byte
		payload := make([]byte, 16)
		for i := 0; len(buf) < 4000; i++ {
			buf, _ = wire.AppendInput(buf, 1, payload)
			buf, _ = wire.AppendRequest(buf, 2, uint64(i), payload)
			buf = wire.AppendPing(buf, uint64(i))
		}
		var d wire.Decoder
		var m wire.Msg
		frames := 0
		b.SetBytes(int64(len(buf)))
		b.ReportAllocs()
		b.ResetTimer()
		cpu := cputime.Serial()
		for i := 0; i < b.N; i++ {
			d.Reset(buf)
			for d.Next(&m) == nil {
				frames++
			}
		}
		cpu.Stop(b)
		sinkInt = frames
	})
}
