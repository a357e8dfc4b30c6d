package reports

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// The interactive charts. Every chart of the page is drawn twice from the
// same data: as inline SVG (gonum/plot), which any browser shows with
// scripts off, and as a live spec, a small JSON object that the page's
// script hands to uPlot (vendored in assets/uplot, embedded in the page,
// never fetched) for hover readouts, drag-to-zoom (double-click resets) and
// series toggles (click a legend entry). When the script runs, the live
// chart replaces the SVG; when it does not, nothing changes.

//go:embed assets/uplot/uPlot.iife.min.js
var uplotJS string

//go:embed assets/uplot/uPlot.min.css
var uplotCSS string

//go:embed report.js
var reportJS string

// liveSpec is one chart for the page's script: the x values first in
// Data, then one row per series (null where the series has no value: a
// gap), and the markers to draw as vertical lines.
type liveSpec struct {
	// X is "time" (seconds since the start of the run) or "nines"
	// (log10 of 1/(1−p): 1 is 90%, 2 is 99%).
	X string `json:"x"`
	// XLabel and YLabel name the axes, with their units.
	XLabel string `json:"xLabel"`
	YLabel string `json:"yLabel"`
	// YUnit is "ns" (a latency: log scale), "/s" (a rate) or "%".
	YUnit string `json:"yUnit"`
	// Step draws each value until the next x (counts per interval).
	Step    bool         `json:"step,omitempty"`
	Series  []liveSeries `json:"series"`
	Data    [][]*float64 `json:"data"`
	Markers []liveMarker `json:"markers,omitempty"`
}

type liveSeries struct {
	Label string `json:"label"`
	Color string `json:"color"`
	Dash  bool   `json:"dash,omitempty"`
}

// liveMarker is a moment worth a vertical line: the end of the warm-up,
// a population's first disconnect, lockout or cut-off.
type liveMarker struct {
	X     float64 `json:"x"`
	Label string  `json:"label"`
	Color string  `json:"color"`
}

// liveJSON encodes a spec for a <script type="application/json"> element:
// json.Marshal escapes <, > and &, so the text cannot close the element.
func liveJSON(s *liveSpec) (template.JS, error) {
	if s == nil {
		return "", nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("reports: encode chart data: %w", err)
	}
	return template.JS(b), nil //nolint:gosec // JSON from encoding/json, which escapes <, > and &
}

// num is a value for the page's JSON, kept to four significant digits
// (the page shows three) and no finer than a thousandth: the data travel
// in the page, whose size is bounded.
func num(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	r := v
	if a := math.Abs(v); a >= 1 {
		p := math.Pow(10, math.Floor(math.Log10(a))-3)
		r = math.Round(v/p) * p
	}
	r = math.Round(r*1000) / 1000
	return &r
}

// spectrumLive samples each histogram's percentile spectrum on one grid of
// nines (0 to log10 of the largest count, 25 steps a decade), the grid
// uPlot needs shared by every series. A zero latency has no place on a log
// axis: it is a gap.
func spectrumLive(lines []spectrumLine, xLabel string) *liveSpec {
	var maxN int64
	for _, l := range lines {
		if l.Hist != nil {
			maxN = max(maxN, l.Hist.TotalCount())
		}
	}
	if maxN == 0 {
		return nil
	}
	top := math.Max(2, math.Ceil(math.Log10(float64(maxN))))
	s := &liveSpec{X: "nines", XLabel: xLabel, YLabel: "response time", YUnit: "ns"}
	const perDecade = 25
	xs := make([]*float64, 0, int(top*perDecade)+1)
	for i := 0; i <= int(top*perDecade); i++ {
		xs = append(xs, num(float64(i)/perDecade))
	}
	s.Data = append(s.Data, xs)
	for _, l := range lines {
		if l.Hist == nil || l.Hist.TotalCount() == 0 {
			continue
		}
		n := float64(l.Hist.TotalCount())
		row := make([]*float64, len(xs))
		for i, x := range xs {
			// Beyond 1/n of the way from the top there is no more data.
			if math.Pow(10, *x) > n*10 {
				continue
			}
			q := 100 * (1 - math.Pow(10, -*x))
			if v := l.Hist.ValueAtQuantile(q); v > 0 {
				row[i] = num(float64(v))
			}
		}
		s.Series = append(s.Series, liveSeries{Label: fmt.Sprintf("%s (n=%s)", l.Name, formatCount(n)), Color: l.Color, Dash: l.Dashed})
		s.Data = append(s.Data, row)
	}
	return s
}

// timeRow is one series of a time chart: its value per interval start,
// absent where it has none.
type timeRow struct {
	label, color string
	dash         bool
	at           map[time.Duration]float64
}

// timeLive lays rows on the union of their interval starts, in seconds.
func timeLive(yLabel, yUnit string, step bool, rows []timeRow, markers []liveMarker) *liveSpec {
	set := map[time.Duration]bool{}
	for _, r := range rows {
		for t := range r.at {
			set[t] = true
		}
	}
	if len(set) == 0 {
		return nil
	}
	var ts []time.Duration
	for t := range set {
		ts = append(ts, t)
	}
	sortDurations(ts)
	s := &liveSpec{X: "time", XLabel: "time since start (s)", YLabel: yLabel, YUnit: yUnit, Step: step, Markers: markers}
	xs := make([]*float64, len(ts))
	for i, t := range ts {
		xs[i] = num(t.Seconds())
	}
	s.Data = append(s.Data, xs)
	for _, r := range rows {
		row := make([]*float64, len(ts))
		for i, t := range ts {
			if v, ok := r.at[t]; ok {
				row[i] = num(v)
			}
		}
		s.Series = append(s.Series, liveSeries{Label: r.label, Color: r.color, Dash: r.dash})
		s.Data = append(s.Data, row)
	}
	return s
}

func sortDurations(ts []time.Duration) {
	for i := 1; i < len(ts); i++ {
		for j := i; j > 0 && ts[j] < ts[j-1]; j-- {
			ts[j], ts[j-1] = ts[j-1], ts[j]
		}
	}
}

// popMarkers finds, in a population's series, the first interval in which
// its clients were disconnected (a Disconnected drop), locked out (a
// Lockout drop) and, for a hostile population, cut off (its first
// messages not sent after it had sent some: its connections were down).
// They mark charts over time; the exact times are not recorded, so each
// is the start of its interval.
func popMarkers(p *Population, col string) []liveMarker {
	var out []liveMarker
	find := func(label string, hit func(iv Interval) bool) {
		for _, iv := range p.Series {
			if hit(iv) {
				out = append(out, liveMarker{X: iv.Start.Seconds(), Label: p.Name + ": " + label, Color: col})
				return
			}
		}
	}
	find("first disconnect", func(iv Interval) bool { return iv.Drops["Disconnected"] > 0 })
	find("first lockout", func(iv Interval) bool { return iv.Drops["Lockout"] > 0 })
	if p.Role == Hostile {
		sent := false
		find("cut off", func(iv Interval) bool {
			hit := sent && iv.NotSent > 0
			sent = sent || iv.Sent > 0
			return hit
		})
	}
	return out
}

// addMarkers draws markers on a static chart as dotted vertical lines in
// the population's colour, and names them in the legend.
func addMarkers(c *chart, ms []liveMarker, yLo, yHi float64, add func(xys plotter.XYs, col string) error) error {
	for _, m := range ms {
		if err := add(plotter.XYs{{X: m.X, Y: yLo}, {X: m.X, Y: yHi}}, m.Color); err != nil {
			return err
		}
		c.Legend = append(c.Legend, legendItem{Name: fmt.Sprintf("│ %s at %s s", m.Label, sig3(m.X)), Color: m.Color, Dashed: true})
	}
	return nil
}

// allZero reports whether a histogram holds only zero latencies (a reply
// in the same virtual instant): a spectrum of it says nothing.
func allZero(h *hdrhistogram.Histogram) bool { return h != nil && h.TotalCount() > 0 && h.Max() == 0 }

// rateChart draws rates over time, one stepped line per row (a value held
// over its interval), static and live alike: messages not sent per
// population, or admitted messages per variant. end is where the last
// interval ends.
func rateChart(title, yLabel string, rows []timeRow, warmup, end time.Duration, markers []liveMarker) (*chart, error) {
	yHi := 0.0
	any := false
	for _, r := range rows {
		for _, v := range r.at {
			yHi = math.Max(yHi, v)
			any = true
		}
	}
	if !any || yHi == 0 {
		return nil, nil
	}
	p := newPlot("time since start (s)", yLabel)
	p.Y.Tick.Marker = countTicks{suffix: "/s"}
	p.X.Tick.Marker = timeTicks{}
	yTop := step125(yHi*1.02, true)
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, end.Seconds(), 0, yTop
	c := &chart{Title: title}
	if err := addWarmup(p, c, warmup, 0, yTop); err != nil {
		return nil, err
	}
	if err := addMarkers(c, markers, 0, yTop, func(xys plotter.XYs, col string) error { return addLine(p, xys, col, true, 0.8) }); err != nil {
		return nil, err
	}
	for _, r := range rows {
		var ts []time.Duration
		for t := range r.at {
			ts = append(ts, t)
		}
		if len(ts) == 0 {
			continue
		}
		sortDurations(ts)
		var xys plotter.XYs
		for _, t := range ts {
			xys = append(xys, plotter.XY{X: t.Seconds(), Y: r.at[t]})
		}
		xys = append(xys, plotter.XY{X: end.Seconds(), Y: r.at[ts[len(ts)-1]]})
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("reports: chart line: %w", err)
		}
		l.StepStyle = plotter.PostStep
		l.Color = rgb(r.color)
		l.Width = 1.4
		if r.dash {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(2.5)}
		}
		p.Add(l)
		c.Legend = append(c.Legend, legendItem{Name: r.label, Color: r.color, Dashed: r.dash})
	}
	svg, err := renderSVG(p, chartW, chartH, title)
	if err != nil {
		return nil, err
	}
	c.SVG = svg
	c.spec = timeLive(yLabel, "/s", true, rows, withWarmup(markers, warmup))
	return c, nil
}

// rateRow is a population's per-second rate of one count per interval.
func rateRow(label, col string, series []Interval, count func(Interval) int64) timeRow {
	r := timeRow{label: label, color: col, at: map[time.Duration]float64{}}
	ivs, err := group(series, maxSteps, false) // without latencies it cannot fail
	if err != nil {
		ivs = series
	}
	for _, iv := range ivs {
		r.at[iv.Start] = float64(count(iv)) / iv.Length.Seconds()
	}
	return r
}
