package reports

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// synthKind describes one message kind of a synthetic population.
type synthKind struct {
	name       string
	perClientS float64            // messages per client per second
	median     float64            // response-time median, ns
	sigma      float64            // log-normal spread
	drops      map[string]float64 // share of sent dropped per reason
	bytes      int64              // frame size
}

type synthPop struct {
	name, behaviour string
	role            Role
	clients         int
	kinds           []synthKind
}

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, int64(60*time.Second), 3) }

// lognormal draws a latency in ns.
func lognormal(rng *rand.Rand, median, sigma float64) int64 {
	v := median * math.Exp(sigma*rng.NormFloat64())
	return int64(math.Max(1000, math.Min(v, 30e9)))
}

// synthResults builds a realistic result: two variants, four populations
// (two honest, two hostile), several kinds, real histograms of random
// values, a minute of one-second intervals with a reconnect burst, summary
// measures and thresholds. The same seed gives the same result.
func synthResults(tb testing.TB, seed uint64) *Results {
	tb.Helper()
	return synthWith(tb, seed, 60, 2)
}

// synthWith is synthResults for a run of the given length in seconds (one
// interval a second, the burst half way) and 1 to 3 variants.
func synthWith(tb testing.TB, seed uint64, seconds, variants int) *Results {
	tb.Helper()
	start := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	run := Run{
		Scenario:       "raid-night",
		Description:    "Evening raid: 200 honest players, a laggy reconnect burst at 30 s, a chat flood and a replay attack.",
		ScenarioSHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Seed:           seed,
		Driver:         DriverLoopback,
		Duration:       time.Duration(seconds) * time.Second,
		Warmup:         10 * time.Second,
		Interval:       time.Second,
		Started:        start,
		Finished:       start.Add(2*time.Minute + 3*time.Second),
		Complete:       true,
	}
	env := Environment{
		CPU: "Synthetic CPU @ 3.00GHz", CacheLineBytes: 64, PhysicalCores: 8, LogicalCores: 16,
		GoVersion: "go1.26.0", OS: "linux", Arch: "amd64", GOMAXPROCS: 16, SluiceVersion: "v0.0.0-test",
	}
	r := New(run, env)
	pops := []synthPop{
		{"players", "honest", Honest, 200, []synthKind{
			{"move", 20, 2e6, 0.45, map[string]float64{"ChannelLimit": 0.0004}, 32},
			{"chat", 0.2, 3e6, 0.5, map[string]float64{"ChannelLimit": 0.002}, 120},
			{"purchase", 0.02, 8e6, 0.6, map[string]float64{"InFlightLimit": 0.001, "Timeout": 0.0005}, 64},
		}},
		{"laggy", "laggy", Honest, 50, []synthKind{
			{"move", 20, 15e6, 0.9, map[string]float64{"FrameLimit": 0.004, "ByteLimit": 0.001, "NotSent": 0.002}, 32},
			{"reconnect", 0.1, 40e6, 0.7, map[string]float64{"AddressLimit": 0.01, "Refused": 0.003}, 48},
		}},
		{"chat-flood", "flood", Hostile, 20, []synthKind{
			{"chat", 400, 5e6, 1.0, map[string]float64{"ChannelLimit": 0.55, "AccountLimit": 0.2, "FrameLimit": 0.1, "Disconnected": 0.05}, 120},
		}},
		{"replayers", "replay", Hostile, 5, []synthKind{
			{"purchase", 50, 9e6, 0.8, map[string]float64{"Replay": 0.7, "Duplicate": 0.15, "Lockout": 0.1}, 64},
			{"malformed", 30, 1e6, 0.5, map[string]float64{"Malformed": 0.9, "Oversize": 0.05}, 900},
		}},
	}
	type variantSpec struct {
		name   string
		policy any
		strict float64 // multiplies honest drops; divides hostile admits
	}
	specs := []variantSpec{
		{"baseline", map[string]any{"channel": map[string]any{"chat": map[string]any{"rate": 2, "burst": 5}, "move": map[string]any{"rate": 30, "burst": 30}}, "frames_per_s": 60, "strikes": map[string]any{"disconnect": 10, "lockout": "5m"}}, 1},
		{"strict", map[string]any{"channel": map[string]any{"chat": map[string]any{"rate": 1, "burst": 2}, "move": map[string]any{"rate": 25, "burst": 25}}, "frames_per_s": 40, "strikes": map[string]any{"disconnect": 5, "lockout": "15m"}}, 2.5},
		{"lenient", map[string]any{"channel": map[string]any{"chat": map[string]any{"rate": 4, "burst": 10}, "move": map[string]any{"rate": 40, "burst": 40}}, "frames_per_s": 80, "strikes": map[string]any{"disconnect": 20, "lockout": "1m"}}, 0.6},
	}
	rng := rand.New(rand.NewPCG(seed, 0x5111ce))
	measured := run.Measured().Seconds()
	nIntervals := int(run.Duration / run.Interval)
	for vi, spec := range specs[:variants] {
		v, err := r.AddVariant(spec.name, spec.policy)
		if err != nil {
			tb.Fatal(err)
		}
		v.SetServerCPU(time.Duration(float64(3*time.Second)*(1+0.1*float64(vi))), 9_000_000)
		for _, sp := range pops {
			p := v.AddPopulation(sp.name, sp.behaviour, sp.role, sp.clients)
			// per-interval accumulators across kinds
			ivSent := make([]int64, nIntervals)
			ivAcc := make([]int64, nIntervals)
			ivDrops := make([]map[string]int64, nIntervals)
			ivHist := make([]*hdrhistogram.Histogram, nIntervals)
			for i := range ivHist {
				// Interval histograms need less precision (and so
				// less space) than the per-kind ones.
				ivHist[i] = hdrhistogram.New(1, int64(60*time.Second), 2)
				ivDrops[i] = map[string]int64{}
			}
			for _, sk := range sp.kinds {
				k := p.Kind(sk.name)
				sent := int64(sk.perClientS * float64(sp.clients) * measured)
				k.Sent, k.SentBytes = sent, sent*sk.bytes
				var dropped int64
				total := 0.0
				for _, share := range sk.drops {
					total += share
				}
				for _, reason := range sortedReasons(sharesAsCounts(sk.drops)) {
					share := sk.drops[reason]
					f := share * spec.strict
					if sp.role == Hostile {
						// The stricter policy lets through 1/strict of
						// what the baseline admits.
						f = share * (1 - (1-total)/spec.strict) / total
					}
					n := int64(f * float64(sent) * (0.95 + 0.05*rng.Float64()))
					if dropped+n > sent {
						n = sent - dropped
					}
					k.Drop(reason, n)
					dropped += n
				}
				k.Accepted = sent - dropped
				k.AcceptedBytes = k.Accepted * sk.bytes
				// Latencies: up to 20k samples per kind.
				samples := min(k.Accepted, 20_000)
				rt, st, lag := newHist(), newHist(), newHist()
				for range samples {
					l := lognormal(rng, sk.median*(1+0.3*float64(vi)), sk.sigma)
					g := int64(rng.ExpFloat64() * 50e3)
					_ = rt.RecordValue(l + g)
					_ = st.RecordValue(l)
					_ = lag.RecordValue(max(g, 1))
				}
				for m, h := range map[Metric]*hdrhistogram.Histogram{ResponseTime: rt, ServiceTime: st, SendLag: lag} {
					if err := k.AddHistogram(m, h); err != nil {
						tb.Fatal(err)
					}
				}
				// Spread the kind over the intervals with a burst at 30 s.
				for i := range nIntervals {
					w := 1.0
					if burst := nIntervals / 2; i >= burst && i < burst+4 {
						w = 3
						if sp.behaviour == "laggy" {
							w = 8
						}
					}
					share := w / float64(nIntervals+16)
					ivSent[i] += int64(float64(sent) * share)
					ivAcc[i] += int64(float64(k.Accepted) * share)
					for reason, n := range k.Drops {
						ivDrops[i][reason] += int64(float64(n) * share * (0.6 + 0.8*rng.Float64()))
					}
					for range 100 {
						_ = ivHist[i].RecordValue(lognormal(rng, sk.median*(1+0.3*float64(vi))*w, sk.sigma))
					}
				}
			}
			for i := range nIntervals {
				if err := p.AddInterval(time.Duration(i)*run.Interval, run.Interval, ivSent[i], ivAcc[i], ivDrops[i], ivHist[i]); err != nil {
					tb.Fatal(err)
				}
			}
			if sp.role == Honest {
				p.Summary.FalseDisconnects = int64(vi*4 + len(sp.name)%3)
				p.Summary.FalseLockouts = int64(vi)
			} else {
				var cut []time.Duration
				for c := 0; c < sp.clients-(1-vi); c++ {
					cut = append(cut, time.Duration(float64(800*time.Millisecond)*(1+rng.Float64()*3)/(1+float64(vi))))
				}
				p.Summary.CutOff = CutOffTimes(cut, sp.clients)
			}
		}
	}
	if err := r.Finalize(); err != nil {
		tb.Fatal(err)
	}
	// Thresholds evaluated on what was measured, as the harness would.
	for _, v := range r.Variants {
		vs, err := computeVariant(v, run.Measured())
		if err != nil {
			tb.Fatal(err)
		}
		dr := vs.honestDropRate()
		p99 := float64(Percentiles(vs.honestResp).P99)
		v.AddThreshold("players.drop_rate < 0.3%", dr, "", dr < 0.003)
		v.AddThreshold("players.p99 < 150ms", p99, "ns", p99 < 150e6)
		v.AddThreshold("chat-flood.admitted_per_s < 2000", vs.hostileAdmittedPS, "1/s", vs.hostileAdmittedPS < 2000)
	}
	return r
}

var synthCache sync.Map // seed -> []byte

// synthCopy returns a fresh copy of synthResults(seed), built once per test
// binary and copied through JSON (which also exercises the decoder).
func synthCopy(tb testing.TB, seed uint64) *Results {
	tb.Helper()
	b, ok := synthCache.Load(seed)
	if !ok {
		enc, err := Marshal(synthResults(tb, seed))
		if err != nil {
			tb.Fatal(err)
		}
		b, _ = synthCache.LoadOrStore(seed, enc)
	}
	r, err := Unmarshal(b.([]byte))
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

func sharesAsCounts(m map[string]float64) map[string]int64 {
	out := map[string]int64{}
	for k := range m {
		out[k] = 1
	}
	return out
}
