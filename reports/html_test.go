package reports

import (
	"bytes"
	"errors"
	"html/template"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot"
)

func renderHTML(t *testing.T, r *Results) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

var (
	chartSVG  = regexp.MustCompile(`(?s)<svg class="chart".*?</svg>`)
	svgPath   = regexp.MustCompile(`<path d="([^"]*)"[^>]*?(?:style="([^"]*)")?\s*/?>`)
	anyURL    = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[^\s"'<>)]*`)
	srcHref   = regexp.MustCompile(`(?i)<[a-z][^>]*?\s(?:src|href|xlink:href|action|poster|data|srcset)\s*=\s*["']?\s*([^"'\s>]*)`)
	cssURL    = regexp.MustCompile(`(?i)url\(\s*['"]?([^'")]*)`)
	hexColor  = regexp.MustCompile(`#[0-9A-Fa-f]{6}`)
	allowedNS = map[string]bool{
		"http://www.w3.org/2000/svg":   true,
		"http://www.w3.org/1999/xlink": true,
		// the vendored chart library's attribution, in its licence comment
		"https://github.com/leeoniya/uPlot": true,
	}
)

// dataColors are the colours only data are drawn in (axes and grid are
// grey or black).
func dataColors() map[string]bool {
	m := map[string]bool{acceptedColor: true}
	for _, c := range populationColors {
		m[c] = true
	}
	for _, c := range variantColors {
		m[c] = true
	}
	for _, c := range reasonColors {
		m[c] = true
	}
	for _, c := range otherReasonColors {
		m[c] = true
	}
	return m
}

// chartDataPaths returns, per inline chart, how many of its paths are drawn
// in a data colour and the most segments any of them has.
func chartDataPaths(html string) (paths, segments []int) {
	colors := dataColors()
	for _, svg := range chartSVG.FindAllString(html, -1) {
		n, most := 0, 0
		for _, m := range svgPath.FindAllStringSubmatch(svg, -1) {
			isData := false
			for _, c := range hexColor.FindAllString(m[2], -1) {
				if colors[strings.ToUpper(c)] {
					isData = true
				}
			}
			if !isData {
				continue
			}
			n++
			most = max(most, strings.Count(m[1], "L"))
		}
		paths = append(paths, n)
		segments = append(segments, most)
	}
	return paths, segments
}

// externalRefs lists every reference in the page that would reach outside
// it: absolute URLs other than XML namespaces, and src/href/url() values
// that are not fragment links or data: URIs.
func externalRefs(html string) []string {
	var out []string
	for _, u := range anyURL.FindAllString(html, -1) {
		if !allowedNS[u] {
			out = append(out, u)
		}
	}
	for _, re := range []*regexp.Regexp{srcHref, cssURL} {
		for _, m := range re.FindAllStringSubmatch(html, -1) {
			v := m[1]
			if strings.HasPrefix(v, "#") || strings.HasPrefix(strings.ToLower(v), "data:") {
				continue
			}
			out = append(out, m[0])
		}
	}
	for _, tag := range []string{"<link", "<iframe", "<img", "@import", "<object", "<embed"} {
		if strings.Contains(strings.ToLower(html), tag) {
			out = append(out, tag)
		}
	}
	// Scripts are inline, never loaded: the vendored chart library, the
	// page's own script and the charts' JSON data, nothing else.
	for _, m := range scriptTag.FindAllString(html, -1) {
		if m != "<script>" && m != `<script type="application/json" class="live-data">` {
			out = append(out, m)
		}
	}
	return out
}

var (
	scriptTag = regexp.MustCompile(`(?i)<script[^>]*>`)
	liveData  = regexp.MustCompile(`(?s)<script type="application/json" class="live-data">.*?</script>`)
)

func TestHTMLSections(t *testing.T) {
	r := synthCopy(t, 1)
	html := renderHTML(t, r)
	for _, want := range []string{
		// sections
		`id="verdict"`, `id="run"`, `id="summary"`, `id="comparison"`, `id="variant-1"`, `id="variant-2"`, `id="outcomes"`, `id="environment"`,
		// verdict and headline
		`<p class="verdict">`, "disconnected / locked out", "admitted game messages", "admitted game bytes",
		// every outcome defined
		"<dt>scheduled</dt>", "<dt>not sent</dt>", "<dt>drop rate</dt>", "<dt>loss</dt>", "<dt>no outcome</dt>", "<dt>n=</dt>",
		"PASS 3/3", "FAIL 2/3",
		// charts
		"Response time percentile spectrum per population",
		"Response time percentiles over time",
		"Honest drops by reason over time (stacked)",
		"Hostile drops by reason over time (stacked; the server&#39;s reasons and the client&#39;s, without not-sent messages)",
		"Accepted and dropped share of sent messages, per population",
		"players (honest): response time by variant",
		// axes with units
		"percentile (log scale of 1/(1−p))", "response time (log scale)", "time since start (s)",
		"drops per second", "share of sent messages (%)", ">99.9%<", " ms<",
		// comparison and tables
		"deltas are against the first variant", "Populations", "Message kinds", "drops by reason",
		// environment and run
		r.Environment.CPU, r.Run.ScenarioSHA256, "raid-night", r.Environment.SluiceVersion,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, v := range r.Variants {
		for _, th := range v.Thresholds {
			if !strings.Contains(html, template.HTMLEscapeString(th.Expr)) {
				t.Errorf("page lacks threshold %q", th.Expr)
			}
		}
		for _, p := range v.Populations {
			if !strings.Contains(html, p.Name) {
				t.Errorf("page lacks population %q", p.Name)
			}
		}
	}
	// Two variants: 5 charts each; per population, the spectrum and the
	// percentiles over time by variant, and per hostile population its
	// admitted messages over time by variant.
	paths, segs := chartDataPaths(html)
	if want := 2*5 + 4*2 + 2; len(paths) != want {
		t.Fatalf("%d charts, want %d", len(paths), want)
	}
	for i := range paths {
		if paths[i] == 0 {
			t.Errorf("chart %d has no data path", i)
		}
		if segs[i] < 1 {
			t.Errorf("chart %d has no data path with segments", i)
		}
	}
	if refs := externalRefs(html); len(refs) > 0 {
		t.Errorf("page refers outside itself: %q", refs)
	}
	if n := len(html); n > 512<<10 {
		t.Errorf("page is %d KiB, want at most 512 KiB", n>>10)
	}
	t.Logf("page size %d KiB", len(html)>>10)
	if again := renderHTML(t, r); again != html {
		t.Error("rendering is not deterministic")
	}
}

// TestHTMLSizeLongRun bounds the page for a longer, wider run: ten minutes
// of one-second intervals and three variants.
func TestHTMLSizeLongRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a large synthetic result")
	}
	r := synthWith(t, 3, 600, 3)
	html := renderHTML(t, r)
	// The static page (what shows with scripts off) keeps its bound; the
	// chart library and the charts' data for the interactive charts are
	// bounded on their own.
	live := len(uplotJS) + len(reportJS) + len(uplotCSS)
	for _, m := range liveData.FindAllString(html, -1) {
		live += len(m)
	}
	static := len(html) - live
	t.Logf("page size %d KiB: static %d KiB, interactive %d KiB", len(html)>>10, static>>10, live>>10)
	if static > 600<<10 {
		t.Errorf("static page is %d KiB for a ten-minute, three-variant run; want at most 600 KiB", static>>10)
	}
	if live > 400<<10 {
		t.Errorf("interactive charts' library and data are %d KiB; want at most 400 KiB", live>>10)
	}
	if refs := externalRefs(html); len(refs) > 0 {
		t.Errorf("page refers outside itself: %q", refs)
	}
}

func TestHTMLEscapesNames(t *testing.T) {
	r := New(Run{Scenario: `<script>alert("s")</script>`, Driver: DriverSim, Duration: time.Second, Complete: true}, Environment{CPU: "<b>cpu</b>"})
	v, err := r.AddVariant(`v<img src=x onerror=alert(1)>`, map[string]string{"k": "</pre><script>x</script>"})
	if err != nil {
		t.Fatal(err)
	}
	p := v.AddPopulation(`p"><script>`, "honest", Honest, 1)
	k := p.Kind(`<k>`)
	k.Sent, k.Accepted = 10, 9
	k.Drop("ChannelLimit", 1)
	h := newHist()
	for i := int64(1); i < 1000; i++ {
		_ = h.RecordValue(i * 1000)
	}
	if err := k.AddHistogram(ResponseTime, h); err != nil {
		t.Fatal(err)
	}
	html := renderHTML(t, r)
	// The page has scripts of its own (inline: see externalRefs); none of
	// the names' may appear as markup.
	for _, bad := range []string{"<script>alert", "<script>x", `p"><script`, "<img", "<b>cpu", `p"><`, "<k>"} {
		if i := strings.Index(html, bad); i >= 0 {
			t.Errorf("page contains unescaped %q: …%s…", bad, html[max(0, i-60):min(len(html), i+40)])
		}
	}
	if refs := externalRefs(html); len(refs) > 0 {
		t.Errorf("page refers outside itself: %q", refs)
	}
}

func TestHTMLSparseResults(t *testing.T) {
	// No histograms, no series, no thresholds, one variant, interrupted.
	r := New(Run{Scenario: "bare", Driver: DriverSim, Duration: 2 * time.Second}, Environment{})
	v, err := r.AddVariant("only", nil)
	if err != nil {
		t.Fatal(err)
	}
	v.AddPopulation("ghosts", "honest", Honest, 0)
	html := renderHTML(t, r)
	for _, want := range []string{"This run was interrupted", "INCOMPLETE", "No thresholds were evaluated", "nothing to chart", `id="environment"`} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := len(chartSVG.FindAllString(html, -1)); n != 0 {
		t.Errorf("%d charts drawn from no data", n)
	}
	// Only counts: the outcome chart and tables, still no external refs.
	p := v.Population("ghosts")
	k := p.Kind("move")
	k.Sent, k.Accepted = 100, 90
	k.Drop("Timeout", 10)
	html = renderHTML(t, r)
	if n := len(chartSVG.FindAllString(html, -1)); n != 1 {
		t.Errorf("%d charts for counts only, want the outcome chart", n)
	}
	if refs := externalRefs(html); len(refs) > 0 {
		t.Errorf("page refers outside itself: %q", refs)
	}
}

func TestHTMLRejectsInvalid(t *testing.T) {
	r := synthCopy(t, 1)
	r.Run.Driver = "carrier pigeon"
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err == nil || b.Len() != 0 {
		t.Fatalf("invalid results rendered: %v, %d bytes", err, b.Len())
	}
}

func TestFormatting(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{formatNs(0), "0"},
		{formatNs(999), "999 ns"},
		{formatNs(1500), "1.5 µs"},
		{formatNs(2.5e6), "2.5 ms"},
		{formatNs(12.34e9), "12.3 s"},
		{FormatPercent(0), "0%"},
		{FormatPercent(1), "100%"},
		{FormatPercent(0.5), "50%"},
		{FormatPercent(0.000401), "0.0401%"},
		{FormatPercent(2e-8), "2.00e-06%"}, // a tiny share is never shown as 0
		{FormatThresholdValue(Threshold{Value: 0.00123, Unit: UnitFraction}, nil), "0.00123 (0.123%)"},
		{FormatThresholdValue(Threshold{Value: 2500, Unit: "ns"}, nil), "2.5 µs"},
		{FormatPercent(0.9995), "99.950%"},
		{FormatPercent(0.99999), "99.99900%"},
		{formatCount(1500), "1.5k"},
		{formatCount(2_500_000), "2.5M"},
		{formatCount(12), "12"},
		{fmtInt(1234567), "1,234,567"},
		{fmtInt(-1234), "-1,234"},
		{nines(1), "90%"},
		{nines(3), "99.9%"},
		{nines(5), "99.999%"},
		{fmtBytesRate(2048), "2 KiB/s"},
		{formatDelta(mRate, 0.01, 0.015), "+0.5 pp"},
		{formatDelta(mNs, 100, 150), "+50.0%"},
		{formatDelta(mCount, 3, 1), "-2"},
		{formatDelta(mNs, 0, 5), "new"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// tickLabels joins the labels of the labelled ticks.
func tickLabels(ts []plot.Tick) string {
	var labels []string
	for _, tk := range ts {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	return strings.Join(labels, " ")
}

func TestTicks(t *testing.T) {
	for _, c := range []struct {
		what string
		got  []plot.Tick
		want string
	}{
		// A percentile axis up to 99.99% labels the nines.
		{"percentile", (percentileTicks{}).Ticks(1, 1e4), "0% 50% 90% 99% 99.9% 99.99%"},
		// A narrow latency axis labels 1-2-5, a wide one powers of ten.
		{"latency", (latencyTicks{}).Ticks(1e6, 1e8), "1 ms 2 ms 5 ms 10 ms 20 ms 50 ms 100 ms"},
		{"wide latency", (latencyTicks{}).Ticks(1e3, 1e9), "1 µs 10 µs 100 µs 1 ms 10 ms 100 ms 1 s"},
		{"time", (timeTicks{}).Ticks(0, 60), "0 10 20 30 40 50 60"},
		{"sub-second time", (timeTicks{}).Ticks(0, 1), "0.0 0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8 0.9 1.0"},
	} {
		if got := tickLabels(c.got); got != c.want {
			t.Errorf("%s labels %q, want %q", c.what, got, c.want)
		}
	}
	// Axis ends land on labelled ticks.
	for _, c := range [][2]float64{{1.7e6, 8.8e8}, {2.2e3, 3.1e9}, {5e4, 6e4}} {
		lo, hi := logRange(c[0], c[1])
		if lo > c[0] || hi < c[1] {
			t.Errorf("logRange(%g, %g) = %g, %g does not cover", c[0], c[1], lo, hi)
		}
		ts := (latencyTicks{}).Ticks(lo, hi)
		if ts[0].Label == "" || ts[len(ts)-1].Label == "" {
			t.Errorf("logRange(%g, %g) = %g, %g ends on unlabelled ticks", c[0], c[1], lo, hi)
		}
	}
}

func TestGroupLongSeries(t *testing.T) {
	var s []Interval
	for i := range 1000 {
		s = append(s, Interval{Start: time.Duration(i) * time.Second, Length: time.Second, Sent: 2, Accepted: 1,
			Drops: map[string]int64{"Timeout": 1}, Responses: 1, P50: int64(i), P99: int64(2 * i)})
	}
	g, err := group(s, maxPoints, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(g) > maxPoints {
		t.Fatalf("%d points after grouping", len(g))
	}
	var sent, drops int64
	for _, iv := range g {
		sent += iv.Sent
		drops += iv.Drops["Timeout"]
	}
	if sent != 2000 || drops != 1000 || g[len(g)-1].P99 != 1998 {
		t.Fatalf("grouping lost counts: sent %d, drops %d, last p99 %d", sent, drops, g[len(g)-1].P99)
	}
	if end := g[len(g)-1].Start + g[len(g)-1].Length; end != 1000*time.Second {
		t.Fatalf("grouped series ends at %v", end)
	}
}

// A long series' chart points are the percentiles of each group of
// intervals, from their histograms merged: not the mean of the intervals'
// p50s (8.3 ms for an interval of zeros beside one of 16.7 ms, a latency
// nobody saw) nor the highest of their p99s (100 ms, where 2 values in 200
// were that slow).
func TestGroupPercentilesFromHistograms(t *testing.T) {
	const tick, slow = 16_666_666, 100_000_000
	interval := func(i int, vals map[int64]int64) Interval {
		p := &Population{Name: "p"}
		if err := p.AddInterval(time.Duration(i)*time.Second, time.Second, 0, 0, nil, newHistOf(t, vals)); err != nil {
			t.Fatal(err)
		}
		return p.Series[0]
	}
	var s []Interval
	for i := 0; i < 2*maxPoints; i += 2 {
		s = append(s,
			interval(i, map[int64]int64{0: 100}),
			interval(i+1, map[int64]int64{tick: 98, slow: 2}))
	}
	if s[0].P50 != 0 || s[0].P99 != 0 || s[1].P50 != 16_670_719 || s[1].P99 != 100_007_935 {
		t.Fatalf("the intervals' own percentiles: %d %d, %d %d", s[0].P50, s[0].P99, s[1].P50, s[1].P99)
	}
	g, err := group(s, maxPoints, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(g) != maxPoints {
		t.Fatalf("%d points, want %d groups of two", len(g), maxPoints)
	}
	// Each group holds 100 zeros, 98 values of 16.67 ms and 2 of 100 ms.
	want := Percentiles(newHistOf(t, map[int64]int64{0: 100, tick: 98, slow: 2}))
	if want.P50 != 0 || want.P99 != 16_670_719 {
		t.Fatalf("the merged values' percentiles: p50 %d, p99 %d", want.P50, want.P99)
	}
	for _, iv := range g {
		if iv.Responses != 200 || iv.P50 != want.P50 || iv.P99 != want.P99 {
			t.Fatalf("group at %v: %d responses, p50 %d, p99 %d; want 200, %d, %d", iv.Start, iv.Responses, iv.P50, iv.P99, want.P50, want.P99)
		}
	}

	// Without the histograms the values are estimates.
	for i := range s {
		s[i].HDR = ""
	}
	if g, err = group(s, maxPoints, true); err != nil {
		t.Fatal(err)
	}
	if g[0].P50 != 16_670_719/2 || g[0].P99 != 100_007_935 {
		t.Fatalf("estimates: p50 %d, p99 %d", g[0].P50, g[0].P99)
	}
}

func newHistOf(t *testing.T, vals map[int64]int64) *hdrhistogram.Histogram {
	t.Helper()
	h := newHist()
	for v, n := range vals {
		if err := h.RecordValues(v, n); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// TestHTMLDegenerateData renders data at the edges: zero latencies (the sim
// driver's virtual time can give them), a single value, one interval,
// drops with nothing counted as sent, a population in one variant only.
func TestHTMLDegenerateData(t *testing.T) {
	r := New(Run{Scenario: "edges", Driver: DriverSim, Duration: time.Second, Interval: time.Second, Complete: true}, Environment{})
	a, _ := r.AddVariant("a", nil)
	b, _ := r.AddVariant("b", nil)
	zeros := newHist()
	for range 100 {
		_ = zeros.RecordValue(0)
	}
	one := newHist()
	_ = one.RecordValue(12345)
	for i, v := range []*Variant{a, b} {
		p := v.AddPopulation("zeros", "honest", Honest, 1)
		k := p.Kind("move")
		k.Sent, k.Accepted = 100, 100
		if err := k.AddHistogram(ResponseTime, zeros); err != nil {
			t.Fatal(err)
		}
		if err := p.AddInterval(0, time.Second, 100, 100, nil, zeros); err != nil {
			t.Fatal(err)
		}
		q := v.AddPopulation("single", "flood", Hostile, 1)
		k = q.Kind("chat")
		k.Drop("Oversize", 3)
		if err := k.AddHistogram(ResponseTime, one); err != nil {
			t.Fatal(err)
		}
		if err := q.AddInterval(0, time.Second, 0, 0, map[string]int64{"Oversize": 3}, one); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			v.AddPopulation("late", "honest", Honest, 2).Kind("move").Sent = 5
		}
	}
	if err := r.Finalize(); err != nil {
		t.Fatal(err)
	}
	html := renderHTML(t, r)
	if refs := externalRefs(html); len(refs) > 0 {
		t.Errorf("page refers outside itself: %q", refs)
	}
	paths, _ := chartDataPaths(html)
	if len(paths) == 0 {
		t.Fatal("no chart drawn")
	}
	for i, n := range paths {
		if n == 0 {
			t.Errorf("chart %d has no data path", i)
		}
	}
}

func TestWriteHTMLFile(t *testing.T) {
	path := t.TempDir() + "/report.html"
	if err := WriteHTMLFile(path, synthCopy(t, 1)); err != nil {
		t.Fatal(err)
	}
	r := synthCopy(t, 1)
	r.Run.Scenario = ""
	if err := WriteHTMLFile(path, r); !errors.Is(err, ErrInvalid) {
		t.Fatalf("invalid results: %v", err)
	}
}

// A results file with no variant (a run that stopped before its first)
// renders a page instead of panicking on a comparison of nothing.
func TestWriteHTMLWithoutVariants(t *testing.T) {
	r := New(Run{Scenario: "s", Driver: "sim", Duration: time.Second}, Environment{})
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	if b.Len() == 0 {
		t.Fatal("empty page")
	}
}

// The kinds table shows what has no recorded outcome (sent less accepted
// and dropped), except for raw, whose sent counts writes, and the session
// row, whose counts are session ends, which no total includes.
func TestHTMLShowsNoOutcome(t *testing.T) {
	r, v := simVariant(t, "s")
	p := v.AddPopulation("flood", "tiny-flood", Hostile, 2)
	k := p.Kind("move")
	k.Sent, k.Accepted = 1000, 10
	k.Drop("Lockout", 983)
	raw := p.Kind("raw")
	raw.Sent = 12 // writes, at least the frames decided (see fillKind)
	raw.Drop("Malformed", 9)
	ends := p.Kind(SessionKind) // sessions the server ended, not messages
	ends.Sent = 31
	ends.Drop("Lockout", 31)
	if got := k.NoOutcome(); got != 7 {
		t.Errorf("NoOutcome %d, want 7", got)
	}
	// The session ends count in no total.
	if err := r.Finalize(); err != nil {
		t.Fatal(err)
	}
	if s := p.Summary; s.Sent != 1012 || s.Dropped != 992 {
		t.Errorf("summary sent %d dropped %d, want 1012 and 992 (without the 31 session ends)", s.Sent, s.Dropped)
	}
	html := renderHTML(t, r)
	for _, want := range []string{
		`<th class="num">no outcome</th>`,
		`<td class="num">983</td><td class="num">98.3%</td><td class="num">7</td>`,
		// Raw: 9 frames dropped of 12 writes is no rate (it was 75%).
		`<td>raw</td><td class="num">12</td><td class="num">0</td><td class="num">12</td><td class="num">0</td><td class="num">9</td><td class="num">–</td><td class="num">–</td>`,
		`<td>session</td><td class="num">–</td><td class="num">–</td><td class="num">31</td><td class="num">–</td><td class="num">–</td><td class="num">–</td><td class="num">–</td><td><span class="nw">Lockout 31</span>`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// The share-of-sent chart is over messages: the session row's reasons
// (here its only Lockouts) are no bar and no legend entry.
func TestOutcomeChartLeavesOutSessions(t *testing.T) {
	p := &Population{Name: "flood"}
	m := p.Kind("move")
	m.Sent, m.Accepted = 100, 50
	m.Drop("ChannelLimit", 50)
	s := p.Kind(SessionKind)
	s.Sent = 60
	s.Drop("Lockout", 60)
	c, err := outcomeChart("t", []*Population{p}, nil)
	if err != nil || c == nil {
		t.Fatalf("chart %v, err %v", c, err)
	}
	var names []string
	for _, l := range c.Legend {
		names = append(names, l.Name)
	}
	if want := []string{"accepted", "ChannelLimit"}; !slices.Equal(names, want) {
		t.Errorf("legend %v, want %v", names, want)
	}
}

// A variant kept as a bad example and expected to fail is shown as failing
// as expected, with why, not as a plain failure; its description and its
// expectation come from the results alone.
func TestHTMLShowsExpectedFailures(t *testing.T) {
	r := synthCopy(t, 1)
	good, bad := r.Variants[0], r.Variants[1]
	good.Description = "the policy as it ships"
	bad.Expect = ExpectFail
	bad.Thresholds = nil
	bad.AddThreshold("players.drop_rate < 0.3%", 0.004, UnitFraction, false)
	bad.AddThreshold("players.p99 < 150ms", 1e6, UnitNs, true)
	b, err := Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Variants[1].Expect != ExpectFail || got.Variants[0].Description != "the policy as it ships" {
		t.Fatalf("expect and description do not survive a round trip: %+v", got.Variants[:2])
	}
	page := renderHTML(t, got)
	for _, want := range []string{
		`<span class="badge expected">FAIL 1/2, expected</span>`,
		`Expected to fail: a bad policy kept for comparison`,
		`✘ fail (expected)`,
		`the policy as it ships`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, `<span class="badge fail">FAIL 1/2`) {
		t.Error("the expected failure is shown as a plain failure")
	}
	// Expected to fail, but every threshold held: that is the surprise.
	bad.Thresholds = nil
	bad.AddThreshold("players.drop_rate < 0.3%", 0.001, UnitFraction, true)
	if page := renderHTML(t, r); !strings.Contains(page, `<span class="badge fail">PASS 1/1, expected to fail</span>`) {
		t.Error("a variant expected to fail that passed is not shown as unexpected")
	}
}

// The headline gives each honest population its own loss and p99, and
// each hostile one what it got through: an all-honest p99 merged honest
// players at 28 ms with laggy ones at 732 ms.
func TestHTMLHeadlinePerPopulation(t *testing.T) {
	page := renderHTML(t, synthCopy(t, 1))
	for _, want := range []string{"<th>honest</th><th class=\"num\">loss</th><th class=\"num\">p99</th>", "<th>hostile</th><th class=\"num\">admitted game messages</th><th class=\"num\">admitted game bytes</th>"} {
		if !strings.Contains(page, want) {
			t.Errorf("headline lacks %q", want)
		}
	}
	for _, gone := range []string{"<th>all honest p99 response time</th>", "<th>all honest drop rate</th>"} {
		if strings.Contains(page, gone) {
			t.Errorf("headline still has %q", gone)
		}
	}
}
