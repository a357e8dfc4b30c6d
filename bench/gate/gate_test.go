package gate_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sluicedev/sluice/bench/gate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bench describes a synthetic benchmark: its median ns/op and allocs/op.
type bench struct {
	name   string
	ns     float64
	allocs int
}

// synth writes count samples of every benchmark in the Go benchmark format
// (as `go test -bench -count` prints them), each ns/op multiplied by
// scale[name] (default 1) and by noise: a log-normal factor with the given
// relative spread, plus an occasional outlier, as a loaded machine gives.
func synth(r *rand.Rand, count int, noise float64, scale map[string]float64, benches ...bench) string {
	var b strings.Builder
	b.WriteString("goos: linux\ngoarch: amd64\npkg: github.com/sluicedev/sluice/bench\ncpu: Synthetic CPU @ 3.00GHz\n")
	for _, bn := range benches {
		s := scale[bn.name]
		if s == 0 {
			s = 1
		}
		for i := 0; i < count; i++ {
			f := math.Exp(r.NormFloat64() * noise)
			if r.IntN(20) == 0 {
				f *= 1 + 3*noise // an outlier now and then
			}
			fmt.Fprintf(&b, "Benchmark%s-2 \t 1000000\t %.4f ns/op\t 0 B/op\t %d allocs/op\n", bn.name, bn.ns*s*f, bn.allocs)
		}
	}
	b.WriteString("PASS\nok  \tgithub.com/sluicedev/sluice/bench\t1.234s\n")
	return b.String()
}

var hot = []bench{
	{"Floor/cas", 3, 0},
	{"Floor/map1k", 8, 0},
	{"Bucket/pass/serial", 5, 0},
	{"Bucket/deny/serial", 6, 0},
	{"Keyed/1k/serial", 20, 0},
	{"Gate/accept", 55, 0},
}

func read(t *testing.T, text, name string) *gate.Set {
	t.Helper()
	s, err := gate.Read(strings.NewReader(text), name)
	require.NoError(t, err)
	return s
}

func compare(t *testing.T, base, cand string, cfg gate.Config) (*gate.Report, error) {
	t.Helper()
	return gate.Compare(read(t, base, "base"), read(t, cand, "cand"), cfg)
}

func find(t *testing.T, rep *gate.Report, name, unit string) gate.Comparison {
	t.Helper()
	for _, c := range rep.Comparisons {
		if c.Benchmark == name && c.Unit == unit {
			return c
		}
	}
	t.Fatalf("no comparison of %s %s", name, unit)
	return gate.Comparison{}
}

// The acceptance test of the gate: over many seeds, a 20% slowdown with 10
// samples per side is caught every time, a 2% wobble never, and 3 samples
// per side are an error.
func TestGateSynthetic(t *testing.T) {
	const seeds = 100
	t.Run("20% slowdown, 10 samples per side: caught", func(t *testing.T) {
		for seed := uint64(0); seed < seeds; seed++ {
			r := rand.New(rand.NewPCG(seed, 1))
			base := synth(r, 10, 0.03, nil, hot...)
			cand := synth(r, 10, 0.03, map[string]float64{"Bucket/pass/serial": 1.2}, hot...)
			rep, err := compare(t, base, cand, gate.DefaultConfig())
			require.NoError(t, err)
			c := find(t, rep, "Bucket/pass/serial", "sec/op")
			require.Equal(t, gate.Regressed, c.Verdict, "seed %d", seed)
			assert.Equal(t, "Floor/cas", c.FloorName)
			assert.Less(t, c.P, 0.05)
			assert.InDelta(t, 0.2, *c.Delta, 0.08, "seed %d", seed)
			assert.True(t, rep.Regressed())
		}
	})
	t.Run("2% wobble, 10 samples per side: not caught", func(t *testing.T) {
		// Every benchmark, floors included, 2% faster or slower at random:
		// often significant, never a regression, because it is smaller
		// than the minimum effect.
		significant, without := 0, 0
		for seed := uint64(0); seed < seeds; seed++ {
			r := rand.New(rand.NewPCG(seed, 2))
			wobble := map[string]float64{}
			for _, b := range hot {
				wobble[b.name] = 1 + 0.02*float64(1-2*r.IntN(2)) // ±2%
			}
			base := synth(r, 10, 0.015, nil, hot...)
			cand := synth(r, 10, 0.015, wobble, hot...)
			rep, err := compare(t, base, cand, gate.DefaultConfig())
			require.NoError(t, err)
			assert.False(t, rep.Regressed(), "seed %d: %v", seed, rep.Regressions())
			for _, c := range rep.Comparisons {
				if c.Significant && c.Unit == "sec/op" && c.Role == "" {
					significant++
				}
			}
			cfg := gate.DefaultConfig()
			cfg.MinEffect = -1 // no minimum effect
			cfg.Correction = gate.CorrectionNone
			cfg.Rules = nil
			rep, err = compare(t, base, cand, cfg)
			require.NoError(t, err)
			if rep.Regressed() {
				without++
			}
		}
		assert.Greater(t, significant, seeds, "the wobble is often significant")
		assert.Greater(t, without, seeds/4, "without a minimum effect, the U test alone cries wolf")
	})
	t.Run("twenty unchanged benchmarks: Holm keeps false alarms rare", func(t *testing.T) {
		var many []bench
		for i := 0; i < 20; i++ {
			many = append(many, bench{fmt.Sprintf("Thing/%d", i), 10 + float64(i), 0})
		}
		holm, none := 0, 0
		for seed := uint64(0); seed < seeds; seed++ {
			r := rand.New(rand.NewPCG(seed, 5))
			base := synth(r, 10, 0.10, nil, many...)
			cand := synth(r, 10, 0.10, nil, many...)
			cfg := gate.Config{MinEffect: -1}
			rep, err := compare(t, base, cand, cfg)
			require.NoError(t, err)
			assert.Equal(t, 20, rep.Tests)
			if rep.Regressed() {
				holm++
			}
			cfg.Correction = gate.CorrectionNone
			rep, err = compare(t, base, cand, cfg)
			require.NoError(t, err)
			if rep.Regressed() {
				none++
			}
		}
		t.Logf("runs with a false alarm out of %d: %d with Holm, %d without", seeds, holm, none)
		assert.LessOrEqual(t, holm, seeds*5/100)
		assert.Greater(t, none, seeds/5)
	})
	t.Run("3 samples per side: an error", func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 3))
		base := synth(r, 3, 0.03, nil, hot...)
		cand := synth(r, 3, 0.03, map[string]float64{"Bucket/pass/serial": 1.2}, hot...)
		rep, err := compare(t, base, cand, gate.DefaultConfig())
		require.Error(t, err)
		assert.ErrorIs(t, err, gate.ErrTooFewSamples)
		var se *gate.SampleError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, 3, se.Base)
		assert.Equal(t, 3, se.Cand)
		assert.Equal(t, gate.DefaultMinSamples, se.Need)
		require.NotNil(t, rep)
		assert.False(t, rep.Regressed(), "no decision on too few samples")
		assert.Equal(t, gate.Invalid, find(t, rep, "Bucket/pass/serial", "sec/op").Verdict)
		var out bytes.Buffer
		require.NoError(t, rep.WriteText(&out))
		assert.Contains(t, out.String(), "gate: ERROR")
	})
	t.Run("the U test's own limit applies whatever min_samples says", func(t *testing.T) {
		r := rand.New(rand.NewPCG(4, 4))
		base := synth(r, 3, 0.03, nil, hot...)
		cand := synth(r, 3, 0.03, nil, hot...)
		cfg := gate.DefaultConfig()
		cfg.MinSamples = 2
		_, err := compare(t, base, cand, cfg)
		assert.ErrorIs(t, err, gate.ErrTooFewSamples)
	})
}

func TestSlowerMachineIsNotARegression(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	slower := map[string]float64{}
	for _, b := range hot {
		slower[b.name] = 1.4 // everything, floors included, 40% slower
	}
	base := synth(r, 10, 0.02, nil, hot...)
	cand := synth(r, 10, 0.02, slower, hot...)

	rep, err := compare(t, base, cand, gate.DefaultConfig())
	require.NoError(t, err)
	assert.False(t, rep.Regressed(), "%v", rep.Regressions())
	c := find(t, rep, "Bucket/pass/serial", "sec/op")
	assert.Equal(t, gate.Unchanged, c.Verdict)
	assert.InDelta(t, 0.4, c.CandMedian/c.BaseMedian-1, 0.05, "raw medians show the slower machine")
	assert.Equal(t, gate.Floor, find(t, rep, "Floor/cas", "sec/op").Verdict, "floors are reported, never gated")

	assert.Equal(t, "Floor/cas", c.Floor, "the floor differs, so the ratio is compared")
	assert.Less(t, c.FloorP, 0.05)

	cfg := gate.DefaultConfig()
	cfg.Normalize = gate.NormalizeNever
	rep, err = compare(t, base, cand, cfg)
	require.NoError(t, err)
	assert.True(t, rep.Regressed(), "compared raw, the slower machine looks like a regression")
	assert.Equal(t, gate.Floor, find(t, rep, "Floor/cas", "sec/op").Verdict)
}

func TestImprovementAndDirection(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	base := synth(r, 10, 0.02, nil, hot...)
	cand := synth(r, 10, 0.02, map[string]float64{"Gate/accept": 0.7}, hot...)
	rep, err := compare(t, base, cand, gate.DefaultConfig())
	require.NoError(t, err)
	assert.False(t, rep.Regressed())
	assert.Equal(t, gate.Improved, find(t, rep, "Gate/accept", "sec/op").Verdict)

	// Higher is better for throughput: a drop regresses.
	var b, c gate.Set
	for i := 0; i < 8; i++ {
		b.AddValues("p", "Tput", "B/s", 100+float64(i))
		c.AddValues("p", "Tput", "B/s", 70+float64(i))
	}
	cfg := gate.Config{Units: []string{"B/s"}}
	rep, err = gate.Compare(&b, &c, cfg)
	require.NoError(t, err)
	assert.Equal(t, gate.Regressed, find(t, rep, "Tput", "B/s").Verdict)
	rep, err = gate.Compare(&c, &b, cfg)
	require.NoError(t, err)
	assert.Equal(t, gate.Improved, find(t, rep, "Tput", "B/s").Verdict)

	// A unit of unknown direction never regresses, and says so.
	var x, y gate.Set
	for i := 0; i < 8; i++ {
		x.AddValues("p", "Thing", "widgets", 100+float64(i))
		y.AddValues("p", "Thing", "widgets", 200+float64(i))
	}
	rep, err = gate.Compare(&x, &y, gate.Config{Units: []string{"widgets"}})
	require.NoError(t, err)
	assert.Equal(t, gate.Unknown, find(t, rep, "Thing", "widgets").Verdict)
	assert.False(t, rep.Regressed())
	assert.NotEmpty(t, rep.Warnings)
	// ... unless a rule says.
	rep, err = gate.Compare(&x, &y, gate.Config{Units: []string{"widgets"}, Rules: []gate.Rule{{Match: "^Thing$", Better: "lower"}}})
	require.NoError(t, err)
	assert.True(t, rep.Regressed())
}

func TestAllocationsAreExact(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	benches := []bench{{"Floor/cas", 3, 0}, {"Gate/deny", 90, 0}}
	base := synth(r, 6, 0.02, nil, benches...)
	benches[1].allocs = 1
	cand := synth(r, 6, 0.02, nil, benches...)
	rep, err := compare(t, base, cand, gate.DefaultConfig())
	require.NoError(t, err)
	c := find(t, rep, "Gate/deny", "allocs/op")
	assert.Equal(t, gate.Regressed, c.Verdict)
	assert.True(t, c.Exact)
	assert.Nil(t, c.Delta, "a rise from zero has no relative size")
	assert.Equal(t, gate.Unchanged, find(t, rep, "Gate/deny", "sec/op").Verdict)
	var out bytes.Buffer
	require.NoError(t, rep.WriteText(&out))
	assert.Contains(t, out.String(), "REGRESSION Gate/deny allocs/op: from 0 (exact")
	assert.Contains(t, out.String(), "allocs/op: the same median on both sides for 1 more benchmark(s)")
}

func TestPerBenchmarkRules(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	base := synth(r, 10, 0.02, nil, hot...)
	cand := synth(r, 10, 0.02, map[string]float64{"Keyed/1k/serial": 1.15, "Gate/accept": 1.15}, hot...)
	cfg := gate.DefaultConfig()
	cfg.Rules = append(cfg.Rules,
		gate.Rule{Match: "^Keyed/", MinEffect: new(0.20)},
		gate.Rule{Match: "^Gate/", Ignore: true})
	rep, err := compare(t, base, cand, cfg)
	require.NoError(t, err)
	c := find(t, rep, "Keyed/1k/serial", "sec/op")
	assert.Equal(t, "Floor/map1k", c.FloorName)
	assert.Equal(t, 0.20, c.MinEffect)
	assert.True(t, c.Significant)
	assert.Equal(t, gate.Unchanged, c.Verdict, "15% is below this benchmark's 20%")
	for _, c := range rep.Comparisons {
		assert.NotEqual(t, "Gate/accept", c.Benchmark, "ignored")
	}
	assert.False(t, rep.Regressed())
}

// With run keys (as `sluice bench ab` writes them) each sample is divided
// by its own run's floor, which cancels load that hit the whole run.
func TestRunPairing(t *testing.T) {
	side := func(r *rand.Rand, scale float64) string {
		var b strings.Builder
		b.WriteString("pkg: p\n")
		for run := 0; run < 10; run++ {
			load := 1 + 2*r.Float64() // this run's machine was 1-3x slower
			fmt.Fprintf(&b, "run: %d\n", run)
			fmt.Fprintf(&b, "BenchmarkFloor/cas-2 1000 %.4f ns/op\n", 3*load*(1+0.01*r.NormFloat64()))
			fmt.Fprintf(&b, "BenchmarkBucket/pass/serial-2 1000 %.4f ns/op\n", 5*scale*load*(1+0.01*r.NormFloat64()))
		}
		return b.String()
	}
	r := rand.New(rand.NewPCG(9, 9))
	base, cand := side(r, 1), side(r, 1.1)
	cfg := gate.DefaultConfig()
	cfg.Normalize = gate.NormalizeAlways
	rep, err := compare(t, base, cand, cfg)
	require.NoError(t, err)
	c := find(t, rep, "Bucket/pass/serial", "sec/op")
	assert.True(t, c.Paired)
	assert.Equal(t, gate.Regressed, c.Verdict, "a 10%% change under 1-3x load swings: %+v", c)
	assert.NotContains(t, rep.Base.Facts, gate.RunKey)

	cfg.Normalize = gate.NormalizeNever
	rep, err = compare(t, base, cand, cfg)
	require.NoError(t, err)
	assert.Equal(t, gate.Unchanged, find(t, rep, "Bucket/pass/serial", "sec/op").Verdict, "raw, the load swamps it")
}

func TestMissingFloorComparesRaw(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 10))
	benches := []bench{{"Bucket/pass/serial", 5, 0}}
	rep, err := compare(t, synth(r, 8, 0.02, nil, benches...), synth(r, 8, 0.02, nil, benches...), gate.DefaultConfig())
	require.NoError(t, err)
	assert.Empty(t, find(t, rep, "Bucket/pass/serial", "sec/op").Floor)
	assert.Contains(t, strings.Join(rep.Warnings, "\n"), "floor Floor/cas missing")
}

func TestMissingAndNewBenchmarks(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 11))
	base := synth(r, 8, 0.02, nil, bench{"Floor/cas", 3, 0}, bench{"Old", 10, 0})
	cand := synth(r, 8, 0.02, nil, bench{"Floor/cas", 3, 0}, bench{"New", 10, 0})
	rep, err := compare(t, base, cand, gate.DefaultConfig())
	// The candidate no longer runs Old: nothing says it did not regress,
	// so that is an error (too few samples: none), never a pass; and with
	// no benchmark on both sides nothing was compared at all.
	require.ErrorIs(t, err, gate.ErrTooFewSamples)
	require.ErrorIs(t, err, gate.ErrNothingCompared)
	assert.Equal(t, []string{"Old"}, rep.Missing)
	assert.Equal(t, []string{"New"}, rep.New)
	assert.False(t, rep.Regressed())
}

func TestOutput(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 12))
	base := synth(r, 10, 0.02, nil, hot...)
	cand := synth(r, 10, 0.02, map[string]float64{"Bucket/deny/serial": 1.3}, hot...)
	rep, err := compare(t, base, cand, gate.DefaultConfig())
	require.NoError(t, err)

	var text bytes.Buffer
	require.NoError(t, rep.WriteText(&text))
	out := text.String()
	assert.Contains(t, out, "cpu=Synthetic CPU @ 3.00GHz")
	assert.Regexp(t, `REGRESSION Bucket/deny/serial sec/op: \+[23]\d\.\d% \(p=\d\.\de-\d+, Holm-adjusted \d\.\de-\d+, n=10\+10, min effect 5%; [\d.]+ns → [\d.]+ns, compared raw: floor Floor/cas [+-]\d\.\d%\)`, out)
	assert.True(t, strings.HasSuffix(out, "gate: FAIL: 1 regression\n"), out)

	var js bytes.Buffer
	require.NoError(t, rep.WriteJSON(&js))
	var doc struct {
		Regressed   bool     `json:"regressed"`
		Regressions []string `json:"regressions"`
		Comparisons []struct {
			Benchmark string   `json:"benchmark"`
			Unit      string   `json:"unit"`
			Verdict   string   `json:"verdict"`
			Delta     *float64 `json:"delta"`
			P         *float64 `json:"p"`
			Floor     string   `json:"floor"`
		} `json:"comparisons"`
	}
	require.NoError(t, json.Unmarshal(js.Bytes(), &doc), js.String())
	assert.True(t, doc.Regressed)
	assert.Equal(t, []string{"Bucket/deny/serial sec/op"}, doc.Regressions)
	found := false
	for _, c := range doc.Comparisons {
		if c.Benchmark == "Bucket/deny/serial" && c.Unit == "sec/op" {
			found = true
			assert.Equal(t, gate.Regressed, c.Verdict)
			require.NotNil(t, c.P)
			assert.Less(t, *c.P, 0.05)
			require.NotNil(t, c.Delta)
			assert.InDelta(t, 0.3, *c.Delta, 0.05)
		}
		if c.Unit == "allocs/op" {
			assert.Nil(t, c.P, "exact units have no p-value")
		}
	}
	assert.True(t, found)

	rep, err = compare(t, base, base, gate.DefaultConfig())
	require.NoError(t, err)
	text.Reset()
	require.NoError(t, rep.WriteText(&text))
	assert.True(t, strings.HasSuffix(text.String(), "gate: ok\n"), text.String())
}

func TestReadErrors(t *testing.T) {
	_, err := gate.Read(strings.NewReader("PASS\nok x 1s\n"), "empty.txt")
	assert.ErrorIs(t, err, gate.ErrNoResults)
	_, err = gate.ReadFiles("testdata/does-not-exist.txt")
	assert.Error(t, err)
	_, err = gate.Compare(&gate.Set{}, &gate.Set{}, gate.Config{})
	assert.ErrorIs(t, err, gate.ErrNoResults)
	_, err = gate.CompareFiles([]string{"../baseline/quick.txt"}, []string{"testdata/does-not-exist.txt"}, gate.Config{})
	assert.Error(t, err)
	rep, err := gate.CompareFiles([]string{"../baseline/quick.txt"}, []string{"../baseline/quick.txt"}, gate.DefaultConfig())
	require.NoError(t, err)
	assert.False(t, rep.Regressed())

	s := read(t, "BenchmarkX-2 100 5 ns/op\nBenchmarkBroken 12\n", "w")
	assert.Len(t, s.Results, 1)
	assert.Len(t, s.Warnings, 1)

	// A written set reads back the same.
	var buf bytes.Buffer
	s.SetBetter("widgets", 1)
	require.NoError(t, s.Write(&buf))
	back := read(t, buf.String(), "back")
	assert.Len(t, back.Results, 1)
	assert.Equal(t, 1, back.Units.GetBetter("widgets"))
}

func TestConfig(t *testing.T) {
	c := gate.DefaultConfig()
	require.NoError(t, c.Validate())
	assert.Equal(t, 0.05, c.Alpha)
	assert.Equal(t, 0.05, c.MinEffect)
	assert.Equal(t, 6, c.MinSamples)

	for _, tc := range []struct{ yaml, field string }{
		{"alpha: 1.5\n", "alpha"},
		{"min_effect: lots\n", "min_effect"},
		{"min_samples: 1\n", "min_samples"},
		{"normalize: sometimes\n", "normalize"},
		{"correction: bonferroni\n", "correction"},
		{"rules:\n  - match: '('\n", "rules[0].match"},
		{"rules:\n  - match: x\n    role: ceiling\n", "rules[0].role"},
		{"rules:\n  - match: x\n    better: sideways\n", "rules[0].better"},
		{"rules:\n  - match: x\n    min_effect: 5 percent\n", "rules[0].min_effect"},
		{"alpah: 0.1\n", "alpah"},
	} {
		_, err := gate.ParseConfig(strings.NewReader(tc.yaml), "g.yaml")
		require.Error(t, err, tc.yaml)
		assert.ErrorIs(t, err, gate.ErrConfig)
		assert.Contains(t, err.Error(), tc.field)
	}

	c, err := gate.ParseConfig(strings.NewReader("min_effect: 7.5%\nrules:\n  - match: '^A'\n    min_effect: 0.2\n    floor: Floor/x\n"), "g.yaml")
	require.NoError(t, err)
	assert.Equal(t, 0.075, c.MinEffect)
	require.Len(t, c.Rules, 1)
	assert.Equal(t, 0.2, *c.Rules[0].MinEffect)

	for in, want := range map[string]float64{"5%": 0.05, "0.05": 0.05, " 12.5 % ": 0.125, "0": 0} {
		got, err := gate.ParseFraction(in)
		require.NoError(t, err, in)
		assert.InDelta(t, want, got, 1e-12, in)
	}
	_, err = gate.ParseFraction("five")
	assert.Error(t, err)
}

func TestHolm(t *testing.T) {
	cs := []gate.Comparison{{P: 0.01}, {P: 0.04}, {P: 0.03}, {P: 0.5, Role: gate.RoleFloor}, {P: math.NaN(), Exact: true}}
	assert.Equal(t, 3, gate.Holm(cs))
	assert.InDelta(t, 0.03, cs[0].AdjP, 1e-12)
	assert.InDelta(t, 0.06, cs[1].AdjP, 1e-12, "never below a smaller p's adjustment")
	assert.InDelta(t, 0.06, cs[2].AdjP, 1e-12)
	assert.Zero(t, cs[3].AdjP, "floors are not tests")
}

func TestMinP(t *testing.T) {
	// The U test's smallest two-sided p for n+n totally separated samples.
	assert.InDelta(t, 0.1, gate.MinP(3, 3), 1e-12)
	assert.InDelta(t, 2.0/70, gate.MinP(4, 4), 1e-12)
	assert.InDelta(t, 2.0/184756, gate.MinP(10, 10), 1e-15)
	assert.Equal(t, 1.0, gate.MinP(0, 5))
}
