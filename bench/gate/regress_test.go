package gate_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/bench/gate"
)

// side is synth's n samples of each named benchmark at ns ns/op (and 0
// allocs/op), with 1% noise.
func side(names []string, n int, ns float64) string {
	bs := make([]bench, len(names))
	for i, name := range names {
		bs[i] = bench{name, ns, 0}
	}
	return synth(rand.New(rand.NewPCG(uint64(n), uint64(ns))), n, 0.01, nil, bs...)
}

// With Holm over 24 tests, 6 samples per side can never be significant
// (24 × the least p of 6+6 is above alpha): that is too few samples, an
// error, not a pass of a 2× slowdown.
func TestHolmNeedsSamplesEnoughForItsFamily(t *testing.T) {
	var names []string
	for i := range 24 {
		names = append(names, fmt.Sprintf("B%02d", i))
	}
	rep, err := compare(t, side(names, 6, 100), side(names, 6, 200), gate.Config{})
	require.ErrorIs(t, err, gate.ErrTooFewSamples)
	var se *gate.SampleError
	require.ErrorAs(t, err, &se)
	assert.Greater(t, se.Need, 6)
	assert.Equal(t, gate.Invalid, find(t, rep, "B00", "sec/op").Verdict)
	// With enough samples the same slowdown is a regression.
	rep, err = compare(t, side(names, 10, 100), side(names, 10, 200), gate.Config{})
	require.NoError(t, err)
	assert.True(t, rep.Regressed())
}

// An invalid comparison was not tested: its p-values are NaN, not the 0
// that reads as highly significant.
func TestInvalidComparisonHasNoPValue(t *testing.T) {
	rep, err := compare(t, side([]string{"A"}, 3, 100), side([]string{"A"}, 3, 100), gate.Config{})
	require.ErrorIs(t, err, gate.ErrTooFewSamples)
	c := find(t, rep, "A", "sec/op")
	assert.True(t, math.IsNaN(c.P) && math.IsNaN(c.AdjP), "P %v, AdjP %v", c.P, c.AdjP)
}

// Units that match nothing (go test's ns/op, where the gate reads sec/op)
// compare nothing: an error, not an empty table that passes.
func TestNothingComparedIsAnError(t *testing.T) {
	cfg, err := gate.ParseConfig(strings.NewReader("units: [ns/op]\n"), "x.yaml")
	require.NoError(t, err)
	_, err = compare(t, side([]string{"A"}, 10, 100), side([]string{"A"}, 10, 300), cfg)
	require.ErrorIs(t, err, gate.ErrNothingCompared)
}

// A rule's better applies only to a unit that does not say: a time stays
// lower-is-better under a rule written for a throughput beside it.
func TestRuleBetterDoesNotFlipTime(t *testing.T) {
	cfg := gate.Config{Rules: []gate.Rule{{Match: "^A$", Better: "higher", Units: []string{"sec/op", "frames/s"}}}}
	mk := func(ns, fps float64) string {
		var b strings.Builder
		b.WriteString("pkg: example.com/p\n")
		for i := range 10 {
			j := 1 + float64(i)/1000
			fmt.Fprintf(&b, "BenchmarkA-2 1000 %.4f ns/op %.4f frames/s\n", ns*j, fps*j)
		}
		return b.String()
	}
	rep, err := compare(t, mk(100, 1000), mk(200, 500), cfg)
	require.NoError(t, err)
	assert.Equal(t, gate.Regressed, find(t, rep, "A", "sec/op").Verdict, "sec/op doubled")
	assert.Equal(t, gate.Regressed, find(t, rep, "A", "frames/s").Verdict, "frames/s halved, better: higher")
}

// Samples of one benchmark at different GOMAXPROCS (go test -cpu 1,4: the
// first without a suffix) are pooled with a warning that says so.
func TestPooledGOMAXPROCSWarns(t *testing.T) {
	base := strings.ReplaceAll(side([]string{"A"}, 10, 100), "-2 ", "-4 ")
	cand := base + strings.ReplaceAll(side([]string{"A"}, 10, 400), "-2 ", " ")
	rep, _ := compare(t, base, cand, gate.Config{})
	assert.Contains(t, strings.Join(rep.Warnings, "\n"), "A: cand pools samples at GOMAXPROCS [4 1]")
}

// A configured unit that matches nothing on either side (go test's ns/op,
// where the gate reads sec/op), beside one that is compared, is not
// skipped silently: the report warns that nothing was gated on it. (A
// warning, not an error: cpu-sec/op is absent where the harness does not
// measure CPU time.) A default unit that a Config with no units leaves to
// the defaults is not warned about: plain go test -bench output may lack
// some of them (here cpu-sec/op, B/op and allocs/op). (DefaultConfig,
// which sluice gate and sluice bench ab use, names its units, so they
// warn.)
func TestUnitMatchingNothingWarns(t *testing.T) {
	cfg, err := gate.ParseConfig(strings.NewReader("units: [ns/op, allocs/op]\nexact_units: [allocs/op]\n"), "x.yaml")
	require.NoError(t, err)
	rep, err := compare(t, side([]string{"A"}, 10, 100), side([]string{"A"}, 10, 200), cfg)
	require.NoError(t, err)
	assert.Contains(t, rep.Warnings, "unit ns/op is configured but no benchmark reported it: nothing was gated on it")

	plain := func(ns float64) string {
		return regexp.MustCompile(`\t [0-9]+ B/op\t [0-9]+ allocs/op`).ReplaceAllString(side([]string{"A"}, 10, ns), "")
	}
	rep, err = compare(t, plain(100), plain(200), gate.Config{})
	require.NoError(t, err)
	assert.Empty(t, rep.Warnings)

	// A unit that only a rule names is configured too.
	cfg, err = gate.ParseConfig(strings.NewReader("rules:\n  - match: '^A$'\n    units: [sec/op, allocs/op]\n"), "x.yaml")
	require.NoError(t, err)
	rep, err = compare(t, plain(100), plain(200), cfg)
	require.NoError(t, err)
	assert.Contains(t, rep.Warnings, "unit allocs/op is configured but no benchmark reported it: nothing was gated on it")
}

// A machine slower by a little less than the minimum effect (4.5%, every
// benchmark and floor alike) is not "the machines differ" to NormalizeAuto,
// so the benchmarks are compared raw; their noise then carries that 4.5%
// over the 5% minimum effect in about half the runs. Compared raw, a change
// must also exceed the minimum effect as a ratio to its floor: a slower
// machine is not a regression, just below the threshold as well as above.
func TestSlightlySlowerMachineIsNotARegression(t *testing.T) {
	const seeds = 100
	for _, slower := range []float64{1.03, 1.045, 1.055} {
		scale := map[string]float64{}
		for _, b := range hot {
			scale[b.name] = slower
		}
		alarms := 0
		for seed := uint64(0); seed < seeds; seed++ {
			r := rand.New(rand.NewPCG(seed, 21))
			base := synth(r, 10, 0.01, nil, hot...)
			cand := synth(r, 10, 0.01, scale, hot...)
			rep, err := compare(t, base, cand, gate.DefaultConfig())
			require.NoError(t, err)
			if rep.Regressed() {
				alarms++
			}
		}
		t.Logf("machine %.1f%% slower: a false alarm in %d runs of %d", (slower-1)*100, alarms, seeds)
		assert.LessOrEqual(t, alarms, seeds*5/100, "machine %.1f%% slower", (slower-1)*100)
	}
}

// The ratio check of a raw comparison applies only beside a floor that
// moved significantly: a noisy floor whose median moved by chance must not
// cancel a benchmark's real regression. Here the floor's samples are
// spread over 2-3.5 ns on both sides (its median moves by chance, p far
// above alpha), and the benchmark is 20% slower with 1% noise.
func TestNoisyFloorDoesNotHideARegression(t *testing.T) {
	floor := func(vals ...float64) string {
		var b strings.Builder
		for _, v := range vals {
			fmt.Fprintf(&b, "BenchmarkFloor/cas-2 \t 1000000\t %.4f ns/op\t 0 B/op\t 0 allocs/op\n", v)
		}
		return b.String()
	}
	work := func(ns float64) string {
		var b strings.Builder
		r := rand.New(rand.NewPCG(3, 4))
		for range 10 {
			fmt.Fprintf(&b, "BenchmarkBucket/pass/serial-2 \t 1000000\t %.4f ns/op\t 0 B/op\t 0 allocs/op\n", ns*math.Exp(r.NormFloat64()*0.01))
		}
		return b.String()
	}
	head := "goos: linux\ngoarch: amd64\npkg: github.com/sluicedev/sluice/bench\n"
	base := head + floor(2, 2, 2, 2, 2.5, 3, 3.5, 3.5, 3.5, 3.5) + work(5)
	cand := head + floor(2, 2, 2, 2, 3, 3.5, 3.5, 3.5, 3.5, 3.5) + work(6)
	rep, err := compare(t, base, cand, gate.DefaultConfig())
	require.NoError(t, err)
	fl := find(t, rep, "Bucket/pass/serial", "sec/op")
	require.Greater(t, fl.FloorP, 0.05, "the floor did not move significantly")
	assert.True(t, rep.Regressed(), "a 20%% regression beside a noisy floor: %+v", fl)
}

// A machine a little slower (4.5%, below the minimum effect) whose floor is
// noisier than its benchmarks: the floor's move is often not significant,
// and the ratio check must still apply, or the raw 4.5% plus noise alarms
// (70 runs of 200 when it applied only beside a significant move). It is
// left out only where the floor's median moved by more than the minimum
// effect by chance, which is the price of not letting such a floor hide a
// real regression (TestNoisyFloorDoesNotHideARegression): 12 runs of 200
// here, at seeds 0-199, above alpha; the bound is that count, so that the
// rule can only get better at it (TestPowerBesideANoisyFloor holds the
// other side of the trade).
func TestSlightlySlowerMachineNoisyFloor(t *testing.T) {
	const seeds = 200
	floors, others := splitFloors(hot)
	slower := map[string]float64{}
	for _, b := range hot {
		slower[b.name] = 1.045
	}
	alarms := 0
	for seed := uint64(0); seed < seeds; seed++ {
		r := rand.New(rand.NewPCG(seed, 23))
		side := func(scale map[string]float64) string {
			return synth(r, 10, 0.04, scale, floors...) + synth(r, 10, 0.01, scale, others...)
		}
		base, cand := side(nil), side(slower)
		rep, err := compare(t, base, cand, gate.DefaultConfig())
		require.NoError(t, err)
		if rep.Regressed() {
			alarms++
		}
	}
	t.Logf("machine 4.5%% slower, floors at 4%% noise: a false alarm in %d runs of %d", alarms, seeds)
	assert.LessOrEqual(t, alarms, 12)
}

// The other side of that trade: beside a floor noisier than its benchmarks
// (4% against 1%), on an unchanged machine, a real slowdown of one
// benchmark is caught. The ratio check, which can cancel an alarm, costs
// some power here: at seeds 0-199, a 6% slowdown is caught in 129 runs and
// an 8% one in 181. The bounds are those counts. Two other rules, measured
// with this test's seeds for power and with other seeds (200 runs) for
// false alarms on a 4.5% slower machine: using the floor only once it
// moved significantly caught 184 and 194 but alarmed in 56 runs, against
// 15 for this rule; dividing every small move out sample by sample caught
// 86 and 157 and alarmed in 11.
func TestPowerBesideANoisyFloor(t *testing.T) {
	floors, others := splitFloors(hot)
	for _, c := range []struct {
		slower float64
		want   int
	}{{1.06, 129}, {1.08, 181}} {
		caught := 0
		for seed := uint64(0); seed < 200; seed++ {
			r := rand.New(rand.NewPCG(seed, 35))
			side := func(scale map[string]float64) string {
				return synth(r, 10, 0.04, scale, floors...) + synth(r, 10, 0.01, scale, others...)
			}
			rep, err := compare(t, side(nil), side(map[string]float64{"Bucket/pass/serial": c.slower}), gate.DefaultConfig())
			require.NoError(t, err)
			if find(t, rep, "Bucket/pass/serial", "sec/op").Verdict == gate.Regressed {
				caught++
			}
		}
		t.Logf("%.0f%% slower beside a noisy floor: caught in %d runs of 200", (c.slower-1)*100, caught)
		assert.GreaterOrEqual(t, caught, c.want)
	}
}

// Without run keys (plain go test -count output) time is divided by the
// floor sample of the same index, as Set says, so each ratio is one
// independent sample. Dividing every sample of a side by the floor's median
// instead shifts the whole side by that median's own sampling error, which
// the U test then takes for a change of the benchmark: with 10% noise a
// machine 40% slower (every benchmark and floor alike) gave a false alarm
// in about one run of nine (22 of 200).
func TestSlowerMachineUnpairedFalseAlarms(t *testing.T) {
	const seeds = 200
	slower := map[string]float64{}
	for _, b := range hot {
		slower[b.name] = 1.4
	}
	alarms := 0
	for seed := uint64(0); seed < seeds; seed++ {
		r := rand.New(rand.NewPCG(seed, 22))
		base := synth(r, 10, 0.10, nil, hot...)
		cand := synth(r, 10, 0.10, slower, hot...)
		rep, err := compare(t, base, cand, gate.DefaultConfig())
		require.NoError(t, err)
		c := find(t, rep, "Bucket/pass/serial", "sec/op")
		require.Equal(t, "Floor/cas", c.Floor, "seed %d: divided by the floor", seed)
		require.False(t, c.Paired, "no run keys")
		if rep.Regressed() {
			alarms++
		}
	}
	t.Logf("machine 40%% slower, 10%% noise: a false alarm in %d runs of %d", alarms, seeds)
	assert.LessOrEqual(t, alarms, seeds*5/100)
}

// min_effect: 0 in a config file means no minimum effect, as it does in a
// rule; it is not the zero value that a Config left unset fills with the
// 5% default.
func TestExplicitZeroMinEffect(t *testing.T) {
	for _, y := range []string{"min_effect: 0\n", "min_effect: 0%\n"} {
		cfg, err := gate.ParseConfig(strings.NewReader(y), "x.yaml")
		require.NoError(t, err)
		rep, err := compare(t, side([]string{"A"}, 10, 100), side([]string{"A"}, 10, 103), cfg)
		require.NoError(t, err)
		assert.Equal(t, 0.0, rep.MinEffect, "%q", y)
		assert.Equal(t, gate.Regressed, find(t, rep, "A", "sec/op").Verdict, "%q: a 3%% slowdown, no minimum effect", y)
	}
}

// A config file of two YAML documents (a stray "---") is an error naming
// it, not the first document with the rest silently ignored.
func TestConfigSecondDocumentIsAnError(t *testing.T) {
	_, err := gate.ParseConfig(strings.NewReader("alpha: 0.05\n---\nmin_effect: 20%\n"), "two.yaml")
	require.Error(t, err)
	assert.ErrorIs(t, err, gate.ErrConfig)
	assert.Contains(t, err.Error(), "two.yaml")
	assert.Contains(t, err.Error(), "document")
}

// splitFloors parts benches into the floors and the rest, for samples that
// give them different noise.
func splitFloors(benches []bench) (floors, others []bench) {
	for _, b := range benches {
		if strings.HasPrefix(b.name, "Floor/") {
			floors = append(floors, b)
		} else {
			others = append(others, b)
		}
	}
	return floors, others
}
