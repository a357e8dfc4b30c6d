package gate

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
)

// ErrTooFewSamples is wrapped by Compare's error when a benchmark has too
// few samples on a side to decide (none at all, for a benchmark or unit
// the candidate no longer reports): that is an error, never a pass.
var ErrTooFewSamples = errors.New("gate: too few samples")

// ErrNothingCompared is returned by Compare when no benchmark and unit
// was compared at all (the units configured match nothing, or no
// benchmark is on both sides): an empty table is not a pass.
var ErrNothingCompared = errors.New("gate: nothing was compared")

// SampleError says which benchmark had too few samples; it wraps
// ErrTooFewSamples.
type SampleError struct {
	Benchmark, Unit string
	Base, Cand      int // samples on each side
	Need            int
}

func (e *SampleError) Error() string {
	return fmt.Sprintf("gate: %s %s: too few samples: %d+%d, need at least %d per side",
		e.Benchmark, e.Unit, e.Base, e.Cand, e.Need)
}

func (e *SampleError) Unwrap() error { return ErrTooFewSamples }

// Verdicts of a Comparison.
const (
	Regressed = "regressed" // significant, worse, and by more than the minimum effect
	Improved  = "improved"  // significant, better, and by more than the minimum effect
	Unchanged = "unchanged" // not significant, or smaller than the minimum effect
	Floor     = "floor"     // a floor: reported, never gated
	Unknown   = "unknown"   // no direction is known for the unit
	Invalid   = "invalid"   // too few samples: no decision
)

// key identifies a benchmark across sides: package and name without the
// GOMAXPROCS suffix.
type key struct{ pkg, name string }

// series are one benchmark's samples on one side, per unit, in order.
type series struct {
	procs  []string
	values map[string][]float64
	runs   map[string][]string // the RunKey of each value, "" if none
	timed  []float64           // seconds each sample took to time: iterations × sec/op
}

type side struct {
	order []key
	by    map[key]*series
	units benchfmt.UnitMetadataMap
	facts map[string]string
}

func splitName(n benchfmt.Name) (name, procs string) {
	base, parts := n.Parts()
	var b strings.Builder
	b.Write(base)
	for _, p := range parts {
		if len(p) > 0 && p[0] == '-' {
			procs = string(p[1:])
			continue
		}
		b.Write(p)
	}
	return b.String(), procs
}

func index(s *Set) *side {
	sd := &side{by: map[key]*series{}, units: s.Units, facts: map[string]string{}}
	for _, r := range s.Results {
		name, procs := splitName(r.Name)
		k := key{pkg: r.GetConfig("pkg"), name: name}
		sr := sd.by[k]
		if sr == nil {
			sr = &series{values: map[string][]float64{}, runs: map[string][]string{}}
			sd.by[k] = sr
			sd.order = append(sd.order, k)
		}
		if procs == "" {
			procs = "1" // go test leaves the suffix off at GOMAXPROCS 1
		}
		if !slices.Contains(sr.procs, procs) {
			sr.procs = append(sr.procs, procs)
		}
		run := r.GetConfig(RunKey)
		for _, v := range r.Values {
			if v.Unit == "sec/op" && r.Iters > 0 {
				sr.timed = append(sr.timed, float64(r.Iters)*v.Value)
			}
			sr.values[v.Unit] = append(sr.values[v.Unit], v.Value)
			sr.runs[v.Unit] = append(sr.runs[v.Unit], run)
		}
		for _, c := range r.Config {
			if c.File && c.Key != "pkg" && c.Key != RunKey {
				if _, ok := sd.facts[c.Key]; !ok {
					sd.facts[c.Key] = string(c.Value)
				}
			}
		}
	}
	return sd
}

func (sd *side) runs(k key, unit string) []string {
	if sr := sd.by[k]; sr != nil {
		return sr.runs[unit]
	}
	return nil
}

func (sd *side) values(k key, unit string) []float64 {
	if sr := sd.by[k]; sr != nil {
		return sr.values[unit]
	}
	return nil
}

// Compare compares the candidate side with the base side, benchmark by
// benchmark and unit by unit, as cfg says (see Config and Rule; the zero
// Config compares every benchmark raw with the default thresholds, and
// DefaultConfig is the one for sluice's own benchmarks).
//
// A benchmark regresses in a unit when all of these hold: the Mann-Whitney
// U test (benchmath.AssumeNothing, two-sided) rejects "same distribution"
// at the benchmark's alpha; the candidate's median is worse (the unit's
// direction: lower is better for sec/op, B/op, allocs/op); and worse by
// more than the benchmark's minimum effect. Units in ExactUnits skip the
// test: the median worse by more than the minimum effect regresses (from
// zero, any rise). Time (sec/op) of a benchmark with a floor is compared
// as the ratio to its floor measured in the same run and package (each
// sample over the floor's sample of the same RunKey when the results carry
// one, else over the floor's sample of the same index when both have as
// many, else over the floor's median), so a machine that is uniformly slower
// is not a regression. By default (NormalizeAuto) that happens when the
// floor itself differs between the sides significantly and by more than
// the minimum effect (the machines differ); otherwise the raw values are
// compared, without the floor's own noise, and a change counts only when
// the ratio of the medians to the floor's medians changed by more than the
// minimum effect too, in the same direction (a machine slower by less than
// the minimum effect is not a regression either).
//
// Compare returns an error wrapping ErrNoResults when a side is empty,
// ErrNothingCompared when nothing was compared, and one wrapping
// ErrTooFewSamples (joined *SampleError values) when some benchmark has
// fewer than MinSamples on a side (none, if the candidate lacks it), or
// too few for the U test to ever reach alpha once the correction for
// multiple comparisons has multiplied it: the report is still returned,
// for display, and such benchmarks have the verdict Invalid.
func Compare(base, cand *Set, cfg Config) (*Report, error) {
	c, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	for _, s := range []*Set{base, cand} {
		if s == nil || len(s.Results) == 0 {
			label := "(nil)"
			if s != nil {
				label = s.Label
			}
			return nil, fmt.Errorf("%w in %s", ErrNoResults, label)
		}
	}
	b, n := index(base), index(cand)
	rep := &Report{
		Base:       Side{Label: base.Label, Facts: b.facts},
		Cand:       Side{Label: cand.Label, Facts: n.facts},
		Alpha:      c.Alpha,
		MinEffect:  c.MinEffect,
		MinSamples: c.MinSamples,
		Normalize:  c.Normalize,
		Correction: c.Correction,
	}
	for _, w := range base.Warnings {
		rep.Warnings = append(rep.Warnings, "base: "+w)
	}
	for _, w := range cand.Warnings {
		rep.Warnings = append(rep.Warnings, "cand: "+w)
	}
	units := benchfmt.UnitMetadataMap{}
	maps.Copy(units, base.Units)
	maps.Copy(units, cand.Units)
	var errs []error
	// configured[u] says whether unit u, configured for some benchmark,
	// matched a sample of it on either side.
	configured := map[string]bool{}
	for _, k := range b.order {
		s := c.settingsFor(k.name)
		if s.ignore {
			continue
		}
		for _, unit := range s.units {
			configured[unit] = configured[unit] || len(b.values(k, unit)) > 0 || len(n.values(k, unit)) > 0
		}
		if n.by[k] == nil {
			// A benchmark the candidate no longer runs (removed, renamed,
			// skipped, or a truncated output) cannot be said not to
			// have regressed.
			rep.Missing = append(rep.Missing, k.name)
			for _, unit := range s.units {
				if bv := b.values(k, unit); len(bv) > 0 {
					errs = append(errs, &SampleError{Benchmark: k.name, Unit: unit, Base: len(bv), Cand: 0, Need: c.MinSamples})
				}
			}
			continue
		}
		if bp, cp := b.by[k].procs, n.by[k].procs; !slices.Equal(bp, cp) {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: GOMAXPROCS %v in base, %v in cand", k.name, bp, cp))
		}
		for _, sd := range []struct {
			label string
			procs []string
		}{{"base", b.by[k].procs}, {"cand", n.by[k].procs}} {
			if len(sd.procs) > 1 {
				// -cpu 1,4 and the like: the samples pooled here come from
				// different parallelism, and their spread is not noise.
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: %s pools samples at GOMAXPROCS %v", k.name, sd.label, sd.procs))
			}
		}
		if slices.Contains(s.units, "sec/op") {
			bd, bshort := shortSamples(b.by[k])
			cd, cshort := shortSamples(n.by[k])
			if bshort || cshort {
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: samples time %v (base) and %v (cand) each, median of iterations × sec/op, "+
					"under %v: too short to time, so a change in sec/op may be noise; raise -benchtime", k.name, bd, cd, MinSampleTime))
			}
		}
		for _, unit := range s.units {
			bv, cv := b.values(k, unit), n.values(k, unit)
			if len(bv) == 0 && len(cv) == 0 {
				continue
			}
			cm := c.compare(rep, b, n, k, unit, s, units)
			if cm.Verdict == Invalid {
				errs = append(errs, cm.sampleError())
			}
			rep.Comparisons = append(rep.Comparisons, cm)
		}
	}
	if c.Correction == CorrectionHolm {
		rep.Tests = holm(rep.Comparisons)
		// Holm multiplies the smallest p by the number of tests: with too
		// few samples for m·minP to fall below alpha, no change could
		// ever be significant, and the gate would pass whatever happened.
		for i := range rep.Comparisons {
			cm := &rep.Comparisons[i]
			if !inFamily(cm) || float64(rep.Tests)*minP(cm.BaseN, cm.CandN) < cm.Alpha {
				continue
			}
			cm.invalidate(samplesFor(cm.Alpha/float64(rep.Tests), cm.BaseN))
			errs = append(errs, cm.sampleError())
		}
	}
	gated := 0
	for i := range rep.Comparisons {
		if rep.Comparisons[i].Role != RoleFloor {
			gated++
		}
	}
	if gated == 0 {
		errs = append(errs, ErrNothingCompared)
	}
	for _, unit := range slices.Sorted(maps.Keys(configured)) {
		if !configured[unit] && cfg.wrote(unit) { // cfg as given: a default unit is nobody's misspelling
			// A misspelt unit (go test's ns/op for benchfmt's sec/op)
			// gates nothing; cpu-sec/op is absent where the harness does
			// not measure CPU time.
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("unit %s is configured but no benchmark reported it: nothing was gated on it", unit))
		}
	}
	for i := range rep.Comparisons {
		decide(rep, &rep.Comparisons[i])
	}
	for _, k := range n.order {
		if b.by[k] == nil && !c.settingsFor(k.name).ignore {
			rep.New = append(rep.New, k.name)
		}
	}
	return rep, errors.Join(errs...)
}

// samplesFor is the least number of samples a side needs, from at least
// from (and at most 64), for a U test between two sides of that many to be
// able to reach a p-value below alpha.
func samplesFor(alpha float64, from int) int {
	need := from
	for need < 64 && minP(need, need) >= alpha {
		need++
	}
	return need
}

// invalidate marks a comparison untested for want of samples (need per
// side). Its p-values are NaN, not 0, which would read as significant.
func (cm *Comparison) invalidate(need int) {
	cm.Verdict, cm.need, cm.P, cm.AdjP = Invalid, need, math.NaN(), math.NaN()
}

// sampleError is the error of a comparison invalidated for want of
// samples.
func (cm *Comparison) sampleError() error {
	return &SampleError{Benchmark: cm.Benchmark, Unit: cm.Unit, Base: cm.BaseN, Cand: cm.CandN, Need: cm.need}
}

// wrote reports whether unit was named by the configuration (its units or
// a rule's), rather than compared by default. Called on the configuration
// as given, before its defaults are filled in.
func (c *Config) wrote(unit string) bool {
	if slices.Contains(c.Units, unit) {
		return true
	}
	for _, r := range c.Rules {
		if slices.Contains(r.Units, unit) {
			return true
		}
	}
	return false
}

// isTime reports whether unit is a time per op (sec/op, cpu-sec/op): the
// units that floor normalisation applies to, and for which lower is
// better unless the unit metadata says otherwise.
func isTime(unit string) bool { return strings.HasSuffix(unit, "sec/op") }

func (c *Config) compare(rep *Report, b, n *side, k key, unit string, s settings, units benchfmt.UnitMetadataMap) Comparison {
	bv, cv := b.values(k, unit), n.values(k, unit)
	cmp := Comparison{
		Benchmark: k.name, Package: k.pkg, Unit: unit, Role: s.role,
		BaseN: len(bv), CandN: len(cv),
		Alpha: s.alpha, MinEffect: s.minEffect,
		BaseMedian: median(bv), CandMedian: median(cv),
	}
	// The unit's own direction first (a time is lower-is-better whatever
	// a rule says); a rule's better only for a unit that does not say.
	better := units.GetBetter(unit)
	if better == 0 && isTime(unit) {
		better = -1
	}
	if better == 0 {
		better = s.better
	}
	cmp.Better = better
	exact := slices.Contains(c.ExactUnits, unit)
	cmp.Exact = exact

	// Samples compared: raw, or ratios to the floor.
	bx, cx := bv, cv
	if isTime(unit) && s.floor != "" && c.Normalize != NormalizeNever && s.role != RoleFloor {
		fk := key{pkg: k.pkg, name: s.floor}
		bf, cf := b.values(fk, unit), n.values(fk, unit)
		switch {
		case len(bf) == 0 || len(cf) == 0:
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: floor %s missing (base %d, cand %d samples): compared raw", k.name, s.floor, len(bf), len(cf)))
		default:
			cmp.FloorName = s.floor
			cmp.BaseFloor, cmp.CandFloor = median(bf), median(cf)
			cmp.FloorP = uTest(bf, cf, s.alpha)
			moved := relDelta(cmp.BaseFloor, cmp.CandFloor)
			small := moved != nil && math.Abs(*moved) <= s.minEffect
			switch machine := cmp.FloorP < s.alpha && !small; {
			case c.Normalize == NormalizeAlways || machine:
				cmp.Floor = s.floor
				var bp, cp bool
				bx, bp = ratios(bv, b.runs(k, unit), bf, b.runs(fk, unit))
				cx, cp = ratios(cv, n.runs(k, unit), cf, n.runs(fk, unit))
				cmp.Paired = bp && cp
			case small:
				// Compared raw beside a floor that moved by no more than
				// the minimum effect (a machine a little slower or faster,
				// significantly or within its noise): what it moved by is
				// in the raw delta too, so the change must also be large
				// as a ratio of the medians (RatioDelta). Not beside a
				// floor moved further without being significant: a median
				// moved that far by chance would cancel a real regression
				// (the check only ever cancels an alarm).
				cmp.RatioDelta = relDelta(cmp.BaseMedian/cmp.BaseFloor, cmp.CandMedian/cmp.CandFloor)
			}
		}
	}
	cmp.Base, cmp.Cand = median(bx), median(cx)
	cmp.Delta = relDelta(cmp.Base, cmp.Cand)

	need := c.MinSamples
	if !exact {
		need = samplesFor(s.alpha, need)
	}
	if len(bx) < need || len(cx) < need || (!exact && minP(len(bx), len(cx)) >= s.alpha) {
		cmp.invalidate(need)
		return cmp
	}

	if exact {
		cmp.P, cmp.AdjP = math.NaN(), math.NaN()
	} else {
		cmp.P = uTest(bx, cx, s.alpha)
		cmp.AdjP = cmp.P
	}
	return cmp
}

// inFamily reports whether a comparison's p-value is one of the tests the
// correction for multiple comparisons counts: gated (not a floor), tested
// (not exact) and decided (not invalid).
func inFamily(c *Comparison) bool {
	return c.Role != RoleFloor && !c.Exact && c.Verdict != Invalid && !math.IsNaN(c.P)
}

// holm replaces AdjP of the family's comparisons by Holm's step-down
// adjusted p-values: the k-th smallest p (from 0) times the number of
// tests not yet passed, m-k, made non-decreasing and capped at 1. Judging
// each adjusted p against alpha keeps the chance of any false alarm in the
// whole report at most alpha.
func holm(cs []Comparison) int {
	var fam []*Comparison
	for i := range cs {
		if inFamily(&cs[i]) {
			fam = append(fam, &cs[i])
		}
	}
	slices.SortStableFunc(fam, func(a, b *Comparison) int { return cmp.Compare(a.P, b.P) })
	m, run := len(fam), 0.0
	for k, c := range fam {
		run = math.Max(run, math.Min(1, float64(m-k)*c.P))
		c.AdjP = run
	}
	return m
}

// decide sets a comparison's Significant and Verdict from its adjusted
// p-value, its delta and its direction.
func decide(rep *Report, c *Comparison) {
	if c.Verdict == Invalid {
		return
	}
	c.Significant = c.Exact || c.AdjP < c.Alpha
	big := c.Delta == nil || math.Abs(*c.Delta) > c.MinEffect
	if r := c.RatioDelta; big && r != nil && c.Delta != nil {
		// Compared raw: large also as a ratio to the floor, the same way.
		big = math.Abs(*r) > c.MinEffect && (*r > 0) == (*c.Delta > 0)
	}
	worse := c.Better < 0 && c.Cand > c.Base || c.Better > 0 && c.Cand < c.Base
	switch {
	case c.Role == RoleFloor:
		c.Verdict = Floor
	case !c.Significant || !big || c.Base == c.Cand:
		c.Verdict = Unchanged
	case c.Better == 0:
		c.Verdict = Unknown
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s %s: changed, but whether higher is better is unknown (set a rule's better)", c.Benchmark, c.Unit))
	case worse:
		c.Verdict = Regressed
	default:
		c.Verdict = Improved
	}
}

// uTest is the two-sided p-value of the Mann-Whitney U test of a and b
// (1 when it cannot be computed: too few or all-equal values).
func uTest(a, b []float64, alpha float64) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 1
	}
	thr := benchmath.Thresholds{CompareAlpha: alpha}
	return benchmath.AssumeNothing.Compare(
		benchmath.NewSample(slices.Clone(a), &thr),
		benchmath.NewSample(slices.Clone(b), &thr)).P
}

// RunKey is the configuration key that ties samples to the run (process)
// that measured them: `sluice bench ab` writes a "run: N" line before each
// run's output. Samples of a benchmark and of its floor with the same run
// are divided pairwise; without run keys the i-th sample is divided by the
// floor's i-th (the floor's median when their counts differ).
const RunKey = "run"

// ratios divides each sample by its floor: pairwise by run when every
// sample's run has exactly one floor sample (paired is true), else by the
// floor's sample of the same index when the counts are equal, else by the
// floor's median. Each ratio is then an independent sample, as the U test
// needs; dividing every sample by one median would shift the whole side by
// that median's own sampling error, which the test would take for a change.
func ratios(v []float64, runs []string, floor []float64, floorRuns []string) (out []float64, paired bool) {
	byRun := map[string]float64{}
	paired = len(runs) == len(v) && len(floorRuns) == len(floor)
	for i, r := range floorRuns {
		if _, dup := byRun[r]; dup || r == "" {
			paired = false
			break
		}
		byRun[r] = floor[i]
	}
	if paired {
		for _, r := range runs {
			if _, ok := byRun[r]; !ok {
				paired = false
				break
			}
		}
	}
	out = make([]float64, len(v))
	m := median(floor)
	byIndex := !paired && len(v) == len(floor)
	for i, x := range v {
		f := m
		if paired {
			f = byRun[runs[i]]
		} else if byIndex {
			f = floor[i]
		}
		if f > 0 {
			out[i] = x / f
		} else {
			out[i] = math.Inf(1)
		}
	}
	return out, paired
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	h := len(s) / 2
	if len(s)%2 == 1 {
		return s[h]
	}
	return (s[h-1] + s[h]) / 2
}

// relDelta is cand/base - 1, or nil when base is 0 (or either is NaN).
func relDelta(base, cand float64) *float64 {
	if base == 0 || math.IsNaN(base) || math.IsNaN(cand) || math.IsInf(base, 0) || math.IsInf(cand, 0) {
		return nil
	}
	d := cand/base - 1
	return &d
}

// minP is the smallest two-sided p-value the Mann-Whitney U test can give
// for samples of n1 and n2 values: both samples totally separated, no ties,
// 2 / C(n1+n2, n1).
func minP(n1, n2 int) float64 {
	if n1 == 0 || n2 == 0 {
		return 1
	}
	c := 1.0
	for i := 1; i <= n2; i++ {
		c = c * float64(n1+i) / float64(i)
	}
	return math.Min(1, 2/c)
}
