package gate

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Report is the outcome of Compare: one Comparison per benchmark and unit,
// in the base side's order, the benchmarks only one side has, and warnings.
// It is plain data, not safe for concurrent mutation.
type Report struct {
	Base, Cand Side
	// Alpha, MinEffect, MinSamples and Normalize are the settings in force
	// (rules may override the first two per benchmark; each Comparison
	// carries its own).
	Alpha      float64
	MinEffect  float64
	MinSamples int
	Normalize  string
	// Correction is the correction for multiple comparisons in force, and
	// Tests the number of p-values it adjusted.
	Correction string
	Tests      int
	// Comparisons in the base side's order.
	Comparisons []Comparison
	// Missing are benchmarks the base has and the candidate does not (each
	// makes Compare's error wrap ErrTooFewSamples: nothing says it did not
	// regress); New the reverse, which is no error.
	Missing, New []string
	// Warnings: unparsable lines, missing floors, GOMAXPROCS mismatches,
	// units of unknown direction.
	Warnings []string
}

// Side describes one side of a comparison: its label and the file
// configuration of its results (goos, goarch, cpu and any other facts
// recorded in the header, such as a baseline's cores and commit).
type Side struct {
	Label string            `json:"label"`
	Facts map[string]string `json:"facts,omitempty"`
}

// Comparison is one benchmark in one unit.
type Comparison struct {
	Benchmark string // without "Benchmark" and the -GOMAXPROCS suffix
	Package   string
	Unit      string
	Role      string // "" or RoleFloor
	// Floor is the floor the values were divided by, "" when compared raw;
	// Paired is true when each sample was divided by the floor's sample
	// of the same run (RunKey), false when by the floor's sample of the
	// same index (or its median, when the counts differ).
	Floor  string
	Paired bool
	// FloorName is the benchmark's configured floor even when it was not
	// divided by (NormalizeAuto with a floor that did not change); FloorP
	// is the U test's p-value of the floor between the sides.
	FloorName string
	FloorP    float64
	// BaseN and CandN are the sample counts.
	BaseN, CandN int
	// Base and Cand are the medians of what was compared: ratios to the
	// floor when Floor is set, raw values otherwise.
	Base, Cand float64
	// BaseMedian and CandMedian are the medians of the raw values;
	// BaseFloor and CandFloor the floor's medians (0 without a floor).
	BaseMedian, CandMedian float64
	BaseFloor, CandFloor   float64
	// Delta is Cand/Base - 1; nil when Base is 0.
	Delta *float64
	// RatioDelta is set when the values were compared raw beside a floor
	// (FloorName set, Floor empty) whose median moved significantly or by
	// no more than the minimum effect: the change of the ratio of the
	// medians to the floor's medians. A change counts only when this too
	// is larger than the minimum effect, in the same direction.
	RatioDelta *float64
	// P is the U test's two-sided p-value (NaN for exact units and for
	// invalid comparisons); AdjP is P adjusted for multiple comparisons
	// (Config.Correction; P itself without one). Significant is AdjP <
	// Alpha (true for exact units).
	P           float64
	AdjP        float64
	Significant bool
	Exact       bool
	// Alpha and MinEffect in force for this benchmark.
	Alpha, MinEffect float64
	// Better is -1 when lower is better, +1 when higher is, 0 unknown.
	Better int
	// Verdict is Regressed, Improved, Unchanged, Floor, Unknown or Invalid.
	Verdict string

	need int
}

// Regressed reports whether any comparison regressed.
func (r *Report) Regressed() bool { return len(r.Regressions()) > 0 }

// Regressions returns the comparisons that regressed.
func (r *Report) Regressions() []Comparison { return r.withVerdict(Regressed) }

// Invalid returns the comparisons that had too few samples.
func (r *Report) Invalid() []Comparison { return r.withVerdict(Invalid) }

// withVerdict returns the comparisons whose verdict is v, in order.
func (r *Report) withVerdict(v string) []Comparison {
	var out []Comparison
	for _, c := range r.Comparisons {
		if c.Verdict == v {
			out = append(out, c)
		}
	}
	return out
}

// finite returns a pointer to f, or nil for NaN and infinities (JSON has
// neither).
func finite(f float64) *float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return &f
}

type comparisonJSON struct {
	Benchmark   string   `json:"benchmark"`
	Package     string   `json:"package,omitempty"`
	Unit        string   `json:"unit"`
	Role        string   `json:"role,omitempty"`
	Floor       string   `json:"floor,omitempty"`
	Paired      bool     `json:"paired,omitempty"`
	FloorName   string   `json:"floor_name,omitempty"`
	FloorP      *float64 `json:"floor_p,omitempty"`
	Verdict     string   `json:"verdict"`
	Delta       *float64 `json:"delta"`
	RatioDelta  *float64 `json:"ratio_delta,omitempty"`
	P           *float64 `json:"p"`
	AdjP        *float64 `json:"p_adjusted"`
	Significant bool     `json:"significant"`
	Exact       bool     `json:"exact,omitempty"`
	BaseN       int      `json:"base_n"`
	CandN       int      `json:"cand_n"`
	Base        *float64 `json:"base"`
	Cand        *float64 `json:"cand"`
	BaseMedian  *float64 `json:"base_median"`
	CandMedian  *float64 `json:"cand_median"`
	BaseFloor   *float64 `json:"base_floor,omitempty"`
	CandFloor   *float64 `json:"cand_floor,omitempty"`
	Alpha       float64  `json:"alpha"`
	MinEffect   float64  `json:"min_effect"`
	Better      int      `json:"better"`
}

// MarshalJSON encodes the comparison with snake_case keys; NaN and
// infinite numbers (an exact unit's p, a delta from zero) are null.
func (c Comparison) MarshalJSON() ([]byte, error) {
	j := comparisonJSON{
		Benchmark: c.Benchmark, Package: c.Package, Unit: c.Unit, Role: c.Role, Floor: c.Floor, Paired: c.Paired, FloorName: c.FloorName,
		Verdict: c.Verdict, Delta: c.Delta, RatioDelta: c.RatioDelta, P: finite(c.P), AdjP: finite(c.AdjP), Significant: c.Significant, Exact: c.Exact,
		BaseN: c.BaseN, CandN: c.CandN, Base: finite(c.Base), Cand: finite(c.Cand),
		BaseMedian: finite(c.BaseMedian), CandMedian: finite(c.CandMedian),
		Alpha: c.Alpha, MinEffect: c.MinEffect, Better: c.Better,
	}
	if c.FloorName != "" {
		j.BaseFloor, j.CandFloor, j.FloorP = finite(c.BaseFloor), finite(c.CandFloor), finite(c.FloorP)
	}
	return json.Marshal(j)
}

// WriteJSON writes the report as one JSON object: base, cand, alpha,
// min_effect, min_samples, normalize, correction, tests, regressed (bool),
// regressions (the regressed comparisons' names), comparisons, missing,
// new, warnings.
func (r *Report) WriteJSON(w io.Writer) error {
	names := []string{}
	for _, c := range r.Regressions() {
		names = append(names, c.Benchmark+" "+c.Unit)
	}
	out := struct {
		Base        Side         `json:"base"`
		Cand        Side         `json:"cand"`
		Alpha       float64      `json:"alpha"`
		MinEffect   float64      `json:"min_effect"`
		MinSamples  int          `json:"min_samples"`
		Normalize   string       `json:"normalize"`
		Correction  string       `json:"correction"`
		Tests       int          `json:"tests"`
		Regressed   bool         `json:"regressed"`
		Regressions []string     `json:"regressions"`
		Comparisons []Comparison `json:"comparisons"`
		Missing     []string     `json:"missing,omitempty"`
		New         []string     `json:"new,omitempty"`
		Warnings    []string     `json:"warnings,omitempty"`
	}{r.Base, r.Cand, r.Alpha, r.MinEffect, r.MinSamples, r.Normalize, r.Correction, r.Tests, len(names) > 0, names,
		r.Comparisons, r.Missing, r.New, r.Warnings}
	if out.Comparisons == nil {
		out.Comparisons = []Comparison{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// WriteText writes a table of every comparison, then one line per
// regression naming it with its delta and p-value, then a verdict line:
// "gate: ok" or "gate: FAIL: N regressions".
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "base: %s%s\n", r.Base.Label, factLine(r.Base.Facts))
	fmt.Fprintf(&b, "cand: %s%s\n", r.Cand.Label, factLine(r.Cand.Facts))
	norm := map[string]string{
		NormalizeAuto:   "time as a ratio to its floor (×) when the floor differs between the sides, else raw",
		NormalizeAlways: "time as a ratio to its floor (×) measured in the same run",
		NormalizeNever:  "raw values (floor normalisation off)",
	}[r.Normalize]
	corr, pcol := "", "p"
	if r.Correction == CorrectionHolm {
		corr, pcol = ", p-values Holm-adjusted over "+plural(r.Tests, "test"), "p(holm)"
	}
	fmt.Fprintf(&b, "alpha %g%s, min effect %s, at least %d samples per side; %s\n\n",
		r.Alpha, corr, pct(r.MinEffect), r.MinSamples, norm)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "benchmark\tunit\tbase\tcand\tdelta\t%s\tn\tverdict\t\n", pcol)
	same := map[string]int{} // exact units equal on both sides, not listed
	var sameUnits []string
	for _, c := range r.Comparisons {
		if c.Exact && c.Base == c.Cand && (c.Verdict == Unchanged || c.Verdict == Floor) {
			if same[c.Unit] == 0 {
				sameUnits = append(sameUnits, c.Unit)
			}
			same[c.Unit]++
			continue
		}
		verdict := c.Verdict
		switch verdict {
		case Regressed:
			verdict = "REGRESSED"
		case Unchanged:
			switch {
			case c.Significant && c.RatioDelta != nil && c.Delta != nil && math.Abs(*c.Delta) > c.MinEffect:
				verdict = "~ (×floor " + delta(c.RatioDelta) + ")"
			case c.Significant && c.Delta != nil && *c.Delta != 0:
				verdict = "~ (< " + pct(c.MinEffect) + ")"
			default:
				verdict = "~"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d+%d\t%s\t\n",
			c.Benchmark, c.Unit, value(c, c.Base, c.BaseMedian), value(c, c.Cand, c.CandMedian),
			delta(c.Delta), pval(c.AdjP), c.BaseN, c.CandN, verdict)
	}
	tw.Flush()
	for _, u := range sameUnits {
		fmt.Fprintf(&b, "%s: the same median on both sides for %d more benchmark(s), not listed\n", u, same[u])
	}
	if len(r.Missing) > 0 {
		fmt.Fprintf(&b, "\nmissing in cand: %s\n", strings.Join(r.Missing, ", "))
	}
	if len(r.New) > 0 {
		fmt.Fprintf(&b, "new in cand: %s\n", strings.Join(r.New, ", "))
	}
	for _, wn := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", wn)
	}
	b.WriteString("\n")
	invalid := r.Invalid()
	for _, c := range invalid {
		fmt.Fprintf(&b, "INVALID %s %s: too few samples (%d+%d, need %d per side)\n", c.Benchmark, c.Unit, c.BaseN, c.CandN, c.need)
	}
	regs := r.Regressions()
	for _, c := range regs {
		fmt.Fprintf(&b, "REGRESSION %s %s: %s (%s, n=%d+%d, min effect %s", c.Benchmark, c.Unit, delta(c.Delta), pFull(c), c.BaseN, c.CandN, pct(c.MinEffect))
		switch {
		case c.Floor != "":
			fmt.Fprintf(&b, "; ratio to %s %.3g → %.3g; raw %s → %s", c.Floor, c.Base, c.Cand, unitValue(c.Unit, c.BaseMedian), unitValue(c.Unit, c.CandMedian))
		case c.FloorName != "":
			fmt.Fprintf(&b, "; %s → %s, compared raw: floor %s %s", unitValue(c.Unit, c.Base), unitValue(c.Unit, c.Cand), c.FloorName, delta(relDelta(c.BaseFloor, c.CandFloor)))
		default:
			fmt.Fprintf(&b, "; %s → %s", unitValue(c.Unit, c.Base), unitValue(c.Unit, c.Cand))
		}
		b.WriteString(")\n")
	}
	switch {
	case len(invalid) > 0:
		fmt.Fprintf(&b, "gate: ERROR: %s with too few samples: the gate needs %s\n", plural(len(invalid), "comparison"), SampleRule(r.MinSamples))
	case len(regs) > 0:
		fmt.Fprintf(&b, "gate: FAIL: %s\n", plural(len(regs), "regression"))
	default:
		b.WriteString("gate: ok\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// plural writes n and the noun, in the plural unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func factLine(f map[string]string) string {
	if len(f) == 0 {
		return ""
	}
	keys := make([]string, 0, len(f))
	for k := range f {
		if !strings.HasPrefix(k, ".") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+f[k])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func pct(f float64) string { return strconv.FormatFloat(f*100, 'g', 4, 64) + "%" }

func delta(d *float64) string {
	if d == nil {
		return "from 0"
	}
	return fmt.Sprintf("%+.1f%%", *d*100)
}

func pval(p float64) string {
	if math.IsNaN(p) {
		return "-"
	}
	return fmt.Sprintf("%.3f", p)
}

func pFull(c Comparison) string {
	if c.Exact {
		return "exact"
	}
	f := func(p float64) string {
		if p < 0.001 {
			return fmt.Sprintf("%.1e", p)
		}
		return fmt.Sprintf("%.3f", p)
	}
	if c.AdjP != c.P {
		return "p=" + f(c.P) + ", Holm-adjusted " + f(c.AdjP)
	}
	return "p=" + f(c.P)
}

// value shows a compared median: "2.64× (7.6ns)" (the ratio to the floor,
// then the raw median) with a floor, the raw value otherwise.
func value(c Comparison, compared, raw float64) string {
	if math.IsNaN(compared) {
		return "-"
	}
	if c.Floor != "" {
		return fmt.Sprintf("%.3g× (%s)", compared, unitValue(c.Unit, raw))
	}
	return unitValue(c.Unit, compared)
}

// unitValue formats v in unit with three significant digits, seconds in
// the closest of ns, µs, ms and s.
func unitValue(unit string, v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	if isTime(unit) {
		switch a := math.Abs(v); {
		case a == 0:
			return "0s"
		case a < 1e-6:
			return strconv.FormatFloat(v*1e9, 'g', 3, 64) + "ns"
		case a < 1e-3:
			return strconv.FormatFloat(v*1e6, 'g', 3, 64) + "µs"
		case a < 1:
			return strconv.FormatFloat(v*1e3, 'g', 3, 64) + "ms"
		}
		return strconv.FormatFloat(v, 'g', 3, 64) + "s"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
