package reports

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

//go:embed report.html.tmpl
var reportTemplate string

var pageTmpl = template.Must(template.New("report").Parse(reportTemplate))

// WriteHTML writes r as one self-contained HTML page: inline CSS, SVG
// charts that show with scripts off and an inline script (the vendored
// uPlot and the page's own) that makes them interactive; nothing is
// fetched at view time. It opens with a verdict in plain sentences, then
// shows a headline per variant with each population's measures and its
// thresholds, the policy comparison side by side with deltas against the
// first variant (and the same measures over time across variants), the
// definition of every count and reason, and per variant the response-time
// percentile spectrum per population, percentiles over time, drops by
// reason over time (honest and hostile populations apart), accepted and
// dropped shares per population, per-kind tables, and the environment.
// The page is deterministic: the same results give the same bytes.
func WriteHTML(w io.Writer, r *Results) error {
	if err := r.Validate(); err != nil {
		return err
	}
	return writeHTML(w, r)
}

// writeHTML is WriteHTML for results already validated: Validate decodes
// every kind's histogram, so callers that validated once skip it here.
func writeHTML(w io.Writer, r *Results) error {
	pg, err := buildPage(r)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := pageTmpl.Execute(&b, pg); err != nil {
		return fmt.Errorf("reports: render html: %w", err)
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("reports: write html: %w", err)
	}
	return nil
}

// popStats are a population's measures computed from its kinds: Finalize
// stores them in the summary, and the page computes them again so it is
// right even when Finalize was not called.
type popStats struct {
	pop                    *Population
	sent, accepted, drop   int64
	notSent                int64   // scheduled but never written: not in sent, not a drop
	dropRate               float64 // drop ÷ sent
	lossRate               float64 // (drop + notSent) ÷ (sent + notSent): what the clients lost
	noRate                 string  // why there is no drop rate (Population.NoDropRate); dropRate is 0 then
	admittedPS, admittedBS float64
	resp                   *hdrhistogram.Histogram // all kinds merged; nil if none
	q                      Quantiles
	// admittedPS and admittedBS are the accepted game messages (see
	// KindStats.IsGame) and their bytes per second: what the report calls
	// admitted. handshakesPS is the accepted hellos per second, shown apart
	// from the game messages. allPS and allBS count every message kind,
	// hellos and pings too: Summary.AdmittedPerSec and AdmittedBytesPerSec.
	handshakesPS float64
	allPS, allBS float64
}

func computePop(p *Population, measured time.Duration) (*popStats, error) {
	s := &popStats{pop: p}
	var acceptedBytes, game, gameBytes, hellos int64
	var rts []*Histogram
	for k := range p.MessageKinds() {
		s.sent += k.Sent
		s.notSent += k.NotSent
		s.accepted += k.Accepted
		s.drop += k.Dropped()
		acceptedBytes += k.AcceptedBytes
		if k.IsGame() {
			game += k.Accepted
			gameBytes += k.AcceptedBytes
		}
		if k.Kind == HelloKind {
			hellos += k.Accepted
		}
		rts = append(rts, k.ResponseTime)
	}
	s.noRate = p.NoDropRate()
	if s.sent > 0 && s.noRate == "" {
		s.dropRate = float64(s.drop) / float64(s.sent)
	}
	if sched := s.sent + s.notSent; sched > 0 && s.noRate == "" {
		s.lossRate = float64(s.drop+s.notSent) / float64(sched)
	}
	if sec := measured.Seconds(); sec > 0 {
		s.allPS = float64(s.accepted) / sec
		s.allBS = float64(acceptedBytes) / sec
		s.admittedPS, s.admittedBS = float64(game)/sec, float64(gameBytes)/sec
		s.handshakesPS = float64(hellos) / sec
	} else {
		// No window to divide by: the summary's own rates, of every kind,
		// each kind taking its share of the accepted messages (bytes).
		s.allPS, s.allBS = p.Summary.AdmittedPerSec, p.Summary.AdmittedBytesPerSec
		s.admittedPS, s.handshakesPS, s.admittedBS = share(s.allPS, game, s.accepted), share(s.allPS, hellos, s.accepted), share(s.allBS, gameBytes, acceptedBytes)
	}
	h, err := MergeHistograms(rts...)
	if err != nil {
		return nil, fmt.Errorf("reports: population %q: %w", p.Name, err)
	}
	s.resp, s.q = h, Percentiles(h)
	return s, nil
}

// share returns the part of rate that n of total stand for: 0 when total
// is.
func share(rate float64, n, total int64) float64 {
	if total == 0 {
		return 0
	}
	return rate * float64(n) / float64(total)
}

// variantStats aggregates one variant's populations by role.
type variantStats struct {
	v                      *Variant
	pops                   []*popStats
	honestSent, honestDrop int64
	honestNotSent          int64
	honestNoRate           []*Population // honest populations with no drop rate: then the honest total has none
	honestResp             *hdrhistogram.Histogram
	hostileAdmittedPS      float64 // game messages (see popStats)
	hostileAdmittedBS      float64
	hostileHandshakesPS    float64
	falseDisc, falseLock   int64
	hasHonest, hasHostile  bool
	measured               time.Duration // the window its rates are over: 0 if it measured nothing
	hostileSent            int64
}

func computeVariant(v *Variant, measured time.Duration) (*variantStats, error) {
	vs := &variantStats{v: v, measured: measured}
	var honest []*hdrhistogram.Histogram
	for _, p := range v.Populations {
		ps, err := computePop(p, measured)
		if err != nil {
			return nil, fmt.Errorf("reports: variant %q: %w", v.Name, err)
		}
		vs.pops = append(vs.pops, ps)
		if p.Role == Hostile {
			vs.hasHostile = true
			vs.hostileSent += ps.sent
			vs.hostileAdmittedPS += ps.admittedPS
			vs.hostileAdmittedBS += ps.admittedBS
			vs.hostileHandshakesPS += ps.handshakesPS
			continue
		}
		vs.hasHonest = true
		vs.honestSent += ps.sent
		vs.honestDrop += ps.drop
		vs.honestNotSent += ps.notSent
		if ps.noRate != "" {
			vs.honestNoRate = append(vs.honestNoRate, p)
		}
		vs.falseDisc += p.Summary.FalseDisconnects
		vs.falseLock += p.Summary.FalseLockouts
		if ps.resp != nil {
			honest = append(honest, ps.resp)
		}
	}
	vs.honestResp = mergeDecoded(honest)
	return vs, nil
}

// honestLossRate is the honest populations' loss together: dropped and
// not sent over scheduled.
func (vs *variantStats) honestLossRate() float64 {
	if sched := vs.honestSent + vs.honestNotSent; sched > 0 {
		return float64(vs.honestDrop+vs.honestNotSent) / float64(sched)
	}
	return 0
}

func (vs *variantStats) honestDropRate() float64 {
	if vs.honestSent == 0 {
		return 0
	}
	return float64(vs.honestDrop) / float64(vs.honestSent)
}

// honestHasRate reports whether the honest populations together have a
// drop rate: they sent something, and none of them counts writes (see
// RawKind).
func (vs *variantStats) honestHasRate() bool {
	return vs.hasHonest && vs.honestSent > 0 && len(vs.honestNoRate) == 0
}

// The page's view model.
type page struct {
	Title        string
	Run          []kv
	Description  string
	Incomplete   bool
	Verdict      []string // plain sentences: which variant is best, and at what
	NotRun       []string // variants the run planned that never ran
	CountDefs    []kv     // what every count and rate means
	ReasonDefs   []kv     // what every drop reason on the page means
	Headlines    []headline
	Comparison   comparison
	Compare      []*chart
	CompareNotes []string // why a population has no chart by variant
	UplotCSS     template.CSS
	UplotJS      template.JS
	ReportJS     template.JS
	Variants     []variantView
	Environment  []kv
	SchemaVer    int
	SluiceVer    string
}

type kv struct{ K, V string }

type headline struct {
	Anchor, Name, Color     string
	Honest, Hostile         []popHeadline
	NoHonest, NoHostile     bool
	Verdict                 string // Variant.Verdict
	Badge                   string // the verdict's style: "pass", "fail", "expected" or "" (no thresholds)
	Description, ExpectNote string
	Thresholds              []thresholdView
	NotApplicable           []string // thresholds the run could not measure (Variant.NotApplicable)
	Invalid                 []string
}

// popHeadline is one population's headline in a variant's card: for an
// honest one its loss, p99 and players lost; for a hostile one what it got
// through, and how many of its clients were cut off.
type popHeadline struct {
	Name, Color          string
	Loss, P99, Lost      string
	Admitted, Bytes, Cut string
	Note                 string // why a measure is not what it seems
}

type thresholdView struct {
	Expr, Value string
	Pass        bool
	Expected    bool // failed in a variant expected to fail
}

type comparison struct {
	Variants   []cmpHead
	Rows       []cmpRow
	Incomplete []string // notes on the variants whose runs were stopped
}

type cmpHead struct {
	Name       string
	Incomplete bool // stopped before its end: not comparable, deltas not coloured
}

type cmpRow struct {
	Group, Measure string
	Headline       bool // one of the measures the CLI's summary prints
	Cells          []cmpCell
	First          bool // first row of its group: the group cell spans Span rows
	Span           int
}

type cmpCell struct {
	Value, Delta string
	Note         string // why the delta is not judged as its direction says
	Class        string // "better", "worse" or ""
	Partial      bool   // the value of an incomplete variant
}

type variantView struct {
	Anchor, Name    string
	Description     string
	ExpectNote      string
	Policy          string
	ServerCPU       string
	Invalid         []string
	Warnings        []string
	Charts          []*chart
	PopRows         []popRow
	KindRows        []kindRow
	NoDataNote      string
	ChartNotes      []string // why a population has no chart
	NoRateNote      string   // why some populations show no drop rate
	ThresholdsTotal int
	Server          template.HTML // the server's view (serverview.go)
}

type popRow struct {
	Name, Color, Behaviour, Role, Clients string
	Sent, Accepted, Dropped, DropRate     string
	Scheduled, NotSent, Loss              string
	P50, P99, Max                         string
	False, Admitted, AdmittedB            string
	CutOff, CutOffTimes                   string
	Hostile                               bool
}

type kindRow struct {
	Population, Kind, Sent, Accepted, Dropped, DropRate string
	Scheduled, NotSent                                  string
	NoOutcome                                           string
	Reasons                                             []string
	P50, P90, P99, P999, Max                            string
	ServiceP99, SendLagP99                              string
	First                                               bool
	Span                                                int
}

func buildPage(r *Results) (*page, error) {
	pg := &page{
		Title:       "sluice report: " + r.Run.Scenario,
		Description: r.Run.Description,
		Incomplete:  !r.Run.Complete,
		SchemaVer:   r.SchemaVersion,
		SluiceVer:   r.Environment.SluiceVersion,
	}
	pg.Run = runFacts(r)
	pg.NotRun = r.NotRun()
	pg.UplotCSS, pg.UplotJS, pg.ReportJS = template.CSS(uplotCSS), template.JS(uplotJS), template.JS(reportJS) //nolint:gosec // vendored, embedded files
	pg.Environment = envFacts(r.Environment)

	var stats []*variantStats
	for _, v := range r.Variants {
		vs, err := computeVariant(v, r.MeasuredOf(v))
		if err != nil {
			return nil, err
		}
		stats = append(stats, vs)
	}
	colorOf := populationColorMap(stats)
	for i, vs := range stats {
		pg.Headlines = append(pg.Headlines, makeHeadline(i, vs, stats[0], colorOf))
	}
	pg.Verdict = verdict(stats, r)
	pg.CountDefs = countDefs()
	pg.ReasonDefs = reasonDefs(stats)
	pg.Comparison = makeComparison(stats, r)
	if len(stats) > 1 {
		cs, notes, err := compareCharts(stats, r)
		if err != nil {
			return nil, err
		}
		pg.Compare, pg.CompareNotes = cs, notes
	}
	others := map[string]string{}
	for i, vs := range stats {
		vv, err := makeVariantView(i, vs, r, others, colorOf)
		if err != nil {
			return nil, err
		}
		if vv.Server, err = serverViewHTML(r.Variants[i]); err != nil {
			return nil, err
		}
		sv, err := serversHTML(&r.Run, r.Variants[i])
		if err != nil {
			return nil, err
		}
		vv.Server = sv + vv.Server
		pg.Variants = append(pg.Variants, vv)
	}
	return pg, nil
}

func runFacts(r *Results) []kv {
	run := r.Run
	f := []kv{
		{"scenario", run.Scenario},
		{"driver", run.Driver},
	}
	if run.Target != "" {
		f = append(f, kv{"target", run.Target + ", a server sluice did not start: " + TargetNote})
	}
	if run.Transport != "" {
		f = append(f, kv{"transport", run.Transport})
	}
	f = append(f, []kv{
		{"seed", strconv.FormatUint(run.Seed, 10)},
		{"duration per variant", fmtDuration(run.Duration) + " (warmup " + fmtDuration(run.Warmup) + ", measured " + fmtDuration(run.Measured()) + ")"},
	}...)
	if slices.ContainsFunc(r.Variants, (*Variant).Incomplete) {
		f[len(f)-1].V = fmtDuration(run.Duration) + " (warmup " + fmtDuration(run.Warmup) + ", measured " + fmtDuration(run.Measured()) + " in a variant that ran to the end)"
	}
	for _, v := range r.Variants {
		if v.Incomplete() {
			f = append(f, kv{"variant " + v.Name, "INCOMPLETE: " + r.IncompleteNote(v)})
		}
	}
	if run.Interval > 0 {
		f = append(f, kv{"time-series interval", fmtDuration(run.Interval)})
	}
	if !run.Started.IsZero() {
		f = append(f, kv{"started", run.Started.UTC().Format(time.RFC3339)})
	}
	if !run.Finished.IsZero() {
		f = append(f, kv{"finished", run.Finished.UTC().Format(time.RFC3339)})
	}
	status := "complete"
	if !run.Complete {
		status = "INCOMPLETE (interrupted: results cover only what was measured)"
	}
	f = append(f, kv{"status", status})
	if run.ScenarioSHA256 != "" {
		f = append(f, kv{"scenario file SHA-256", run.ScenarioSHA256})
	}
	f = append(f, kv{"variants", strconv.Itoa(len(r.Variants))})
	return f
}

func envFacts(e Environment) []kv {
	or := func(s string) string {
		if s == "" {
			return "unknown"
		}
		return s
	}
	orN := func(n int, unit string) string {
		if n == 0 {
			return "unknown"
		}
		return strconv.Itoa(n) + unit
	}
	return []kv{
		{"CPU", or(e.CPU)},
		{"cores", orN(e.PhysicalCores, " physical") + ", " + orN(e.LogicalCores, " logical")},
		{"cache line", orN(e.CacheLineBytes, " bytes")},
		{"GOMAXPROCS", orN(e.GOMAXPROCS, "")},
		{"OS / arch", or(e.OS) + " / " + or(e.Arch)},
		{"Go", or(e.GoVersion)},
		{"sluice version", or(e.SluiceVersion)},
	}
}

func fmtDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	return d.String()
}

// FormatPercent formats a fraction as a percentage with three significant
// digits, never rounding a non-zero share to 0% or a partial one to 100%.
func FormatPercent(f float64) string {
	switch {
	case f == 0:
		return "0%"
	case f == 1:
		return "100%"
	case f*100 < 0.0001:
		return strconv.FormatFloat(f*100, 'e', 2, 64) + "%"
	case f > 0.99 && f < 1:
		// Show enough decimals that the gap to 100% stays visible.
		c := (1 - f) * 100
		dec := max(1, int(math.Ceil(-math.Log10(c)))+1)
		return strconv.FormatFloat(f*100, 'f', dec, 64) + "%"
	default:
		return strconv.FormatFloat(f*100, 'g', 3, 64) + "%"
	}
}

func fmtInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func fmtRate(v float64, unit string) string { return formatCount(v) + " " + unit }

func fmtBytesRate(v float64) string {
	switch {
	case v >= 1<<30:
		return sig3(v/(1<<30)) + " GiB/s"
	case v >= 1<<20:
		return sig3(v/(1<<20)) + " MiB/s"
	case v >= 1<<10:
		return sig3(v/(1<<10)) + " KiB/s"
	default:
		return sig3(v) + " B/s"
	}
}

func fmtLatency(ns int64, have bool) string {
	if !have {
		return "–"
	}
	return formatNs(float64(ns))
}

func makeHeadline(i int, vs, base *variantStats, colorOf map[string]string) headline {
	v := vs.v
	h := headline{
		Anchor:      fmt.Sprintf("variant-%d", i+1),
		Name:        v.Name,
		Color:       pick(variantColors, i),
		NoHonest:    !vs.hasHonest,
		NoHostile:   !vs.hasHostile,
		Invalid:     v.Invalid,
		Verdict:     v.Verdict(),
		Description: v.Description,
		ExpectNote:  v.ExpectNote(),
	}
	switch {
	case len(v.Invalid) == 0 && len(v.Thresholds) == 0 && !v.ExpectsFail():
		// no thresholds, nothing expected of them: a neutral badge
	case v.AsExpected() && v.ExpectsFail():
		h.Badge = "expected"
	case v.AsExpected():
		h.Badge = "pass"
	default:
		h.Badge = "fail"
	}
	for _, p := range honestPops(vs) {
		ph := popHeadline{Name: p.name, Color: colorOf[p.name], Loss: "–", P99: "–"}
		switch {
		case p.hasLoss:
			ph.Loss = FormatPercent(p.loss) + " (" + fmtInt(p.lost) + " of " + fmtInt(p.scheduled) + ")"
		case p.scheduled == 0:
			ph.Loss = "– (nothing scheduled)"
		default:
			ph.Loss = "– (" + p.noRate + ")"
		}
		if p.hasP99 {
			ph.P99 = formatNs(float64(p.p99))
		}
		ph.Lost = fmt.Sprintf("%d / %d of %d", p.disc, p.lock, p.total)
		if vs != base {
			ph.Note = lostPlayersOrMessages(base, vs, p.name)
		}
		h.Honest = append(h.Honest, ph)
	}
	for _, p := range hostilePops(vs) {
		ph := popHeadline{Name: p.name, Color: colorOf[p.name], Admitted: "–", Bytes: "–", Cut: "–"}
		if p.has {
			ph.Admitted, ph.Bytes = fmtRate(p.admittedPS, "msg/s"), fmtBytesRate(p.admittedBS)
		}
		if p.hasCut {
			ph.Cut = fmt.Sprintf("%d of %d", p.cut, p.of)
		}
		h.Hostile = append(h.Hostile, ph)
	}
	h.NotApplicable = v.NotApplicable
	for _, t := range v.Thresholds {
		h.Thresholds = append(h.Thresholds, thresholdView{Expr: t.Expr, Value: FormatThresholdValue(t, nil), Pass: t.Pass, Expected: !t.Pass && v.ExpectsFail()})
	}
	return h
}

// populationColorMap gives every population, by name, one colour across
// the variants, in the order they first appear.
func populationColorMap(stats []*variantStats) map[string]string {
	m := map[string]string{}
	for j, name := range populationNames(stats) {
		m[name] = pick(populationColors, j)
	}
	return m
}

// measure is one row of the comparison table.
type measure struct {
	group, name string
	pop         string // the population it is measured on ("" for a group)
	survivor    bool   // a latency: of what got through, no verdict if the population lost more
	hostileDrop bool   // a hostile drop rate: neutral unless admitted traffic rose under it
	headline    bool   // printed by the CLI's summary
	kind        int    // mRate, mNs, mCount, mPerSec, mBytes
	better      int    // -1 lower is better, +1 higher is better, 0 neutral
	get         func(vs *variantStats) (float64, bool)
}

const (
	mRate = iota
	mNs
	mCount
	mPerSec
	mBytes
)

// cutOffValue is a cut-off time as a measure: Never is +Inf.
func cutOffValue(d time.Duration) float64 {
	if d == Never {
		return math.Inf(1)
	}
	return float64(d)
}

func formatMeasure(kind int, v float64) string {
	if math.IsInf(v, 1) {
		return "never"
	}
	switch kind {
	case mRate:
		return FormatPercent(v)
	case mNs:
		return formatNs(v)
	case mCount:
		return fmtInt(int64(v))
	case mPerSec:
		return formatCount(v) + "/s"
	case mBytes:
		return fmtBytesRate(v)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func formatDelta(kind int, base, v float64) string {
	switch {
	case math.IsInf(base, 1) && math.IsInf(v, 1):
		return "±0"
	case math.IsInf(base, 1) || math.IsInf(v, 1):
		return "" // to or from never: the values say it
	}
	if kind == mRate {
		d := (v - base) * 100
		if d == 0 {
			return "±0 pp"
		}
		return fmt.Sprintf("%+.3g pp", d)
	}
	if kind == mCount {
		d := v - base
		if d == 0 {
			return "±0"
		}
		return fmt.Sprintf("%+d", int64(d))
	}
	if v == base {
		return "±0%"
	}
	if base == 0 {
		return "new"
	}
	return fmt.Sprintf("%+.1f%%", (v-base)/math.Abs(base)*100)
}

func makeComparison(stats []*variantStats, r *Results) comparison {
	var c comparison
	if len(stats) == 0 { // nothing to compare (a run that stopped before its first variant)
		return c
	}
	for _, vs := range stats {
		v := vs.v
		c.Variants = append(c.Variants, cmpHead{Name: v.Name, Incomplete: v.Incomplete()})
		if v.Incomplete() {
			c.Incomplete = append(c.Incomplete, r.IncompleteNote(v))
		}
	}
	serverTime := measure{group: "server", name: "service time per frame", kind: mNs, better: -1, headline: true, get: func(vs *variantStats) (float64, bool) {
		if vs.v.ServerCPU == nil || vs.v.ServerCPU.Frames == 0 {
			return 0, false
		}
		return vs.v.ServerCPU.NsPerFrame, true
	}}
	noDelta := false // the server time's values do not compare between variants
	if r.Run.Driver == DriverSim {
		// The sim's server time is sampled wall time, not virtual time:
		// it varies from run to run and with the order variants ran in.
		serverTime.name, serverTime.better, noDelta = "service time per frame (sim: wall time, not comparable)", 0, true
	}
	var ms []measure
	ms = append(ms,
		// A variant that sent (or measured) nothing has no rate: shown as
		// "–", not as a 0 coloured better.
		measure{group: "all honest", name: "loss", kind: mRate, better: -1, headline: true, get: func(vs *variantStats) (float64, bool) {
			return vs.honestLossRate(), vs.honestHasRate()
		}},
		measure{group: "all honest", name: "false disconnects", kind: mCount, better: -1, headline: true, get: func(vs *variantStats) (float64, bool) {
			return float64(vs.falseDisc), vs.hasHonest
		}},
		measure{group: "all honest", name: "false lockouts", kind: mCount, better: -1, headline: true, get: func(vs *variantStats) (float64, bool) {
			return float64(vs.falseLock), vs.hasHonest
		}},
		measure{group: "all hostile", name: "admitted game messages", kind: mPerSec, better: -1, headline: true, get: func(vs *variantStats) (float64, bool) {
			return vs.hostileAdmittedPS, vs.hostileSent > 0 && vs.measured > 0
		}},
		measure{group: "all hostile", name: "admitted game bytes", kind: mBytes, better: -1, headline: true, get: func(vs *variantStats) (float64, bool) {
			return vs.hostileAdmittedBS, vs.hostileSent > 0 && vs.measured > 0
		}},
		// Not a verdict: a session is no play, and a client that is cut
		// off more reconnects more; shown so that nothing is hidden.
		measure{group: "all hostile", name: "admitted handshakes", kind: mPerSec, headline: true, get: func(vs *variantStats) (float64, bool) {
			return vs.hostileHandshakesPS, vs.hostileSent > 0 && vs.measured > 0
		}},
		serverTime,
	)
	// Per population, by name, in the order they first appear.
	names := populationNames(stats)
	find := func(vs *variantStats, name string) *popStats {
		for _, p := range vs.pops {
			if p.pop.Name == name {
				return p
			}
		}
		return nil
	}
	for _, name := range names {
		var hostile bool
		for _, vs := range stats {
			if p := find(vs, name); p != nil {
				hostile = p.pop.Role == Hostile
				break
			}
		}
		if hostile {
			g := name + " (" + string(Hostile) + ")"
			ms = append(ms,
				measure{group: g, pop: name, name: "admitted game messages", kind: mPerSec, better: -1, headline: true, get: func(vs *variantStats) (float64, bool) {
					p := find(vs, name)
					return pf(p, func(p *popStats) float64 { return p.admittedPS }), p != nil && p.sent > 0 && vs.measured > 0
				}},
				measure{group: g, pop: name, name: "admitted game bytes", kind: mBytes, better: -1, headline: true, get: func(vs *variantStats) (float64, bool) {
					p := find(vs, name)
					return pf(p, func(p *popStats) float64 { return p.admittedBS }), p != nil && p.sent > 0 && vs.measured > 0
				}},
				measure{group: g, pop: name, name: "admitted handshakes", kind: mPerSec, get: func(vs *variantStats) (float64, bool) {
					p := find(vs, name)
					return pf(p, func(p *popStats) float64 { return p.handshakesPS }), p != nil && p.sent > 0 && vs.measured > 0
				}},
				// Not a verdict: dropped ÷ sent can stay put while far more
				// gets through; it is flagged when it does.
				measure{group: g, pop: name, name: "drop rate (of sent)", kind: mRate, hostileDrop: true, get: func(vs *variantStats) (float64, bool) {
					p := find(vs, name)
					return pf(p, func(p *popStats) float64 { return p.dropRate }), p != nil && p.sent > 0 && p.noRate == ""
				}},
				measure{group: g, pop: name, name: "clients cut off", kind: mCount, better: +1, get: func(vs *variantStats) (float64, bool) {
					p := find(vs, name)
					if p == nil || p.pop.Summary.CutOff == nil {
						return 0, false
					}
					return float64(p.pop.Summary.CutOff.Clients), true
				}},
				// Over every client, as the thresholds count them: one
				// never cut off counts as never (+Inf), so catching 1 of 3
				// quickly is not better than catching all 3.
				measure{group: g, pop: name, name: "time to cut off, p50", kind: mNs, better: -1, get: func(vs *variantStats) (float64, bool) {
					p := find(vs, name)
					if p == nil || p.pop.Summary.CutOff == nil || p.pop.Summary.CutOff.Of == 0 {
						return 0, false
					}
					return cutOffValue(p.pop.Summary.CutOff.AllP50), true
				}},
				measure{group: g, pop: name, name: "time to cut off, max", kind: mNs, better: -1, get: func(vs *variantStats) (float64, bool) {
					p := find(vs, name)
					if p == nil || p.pop.Summary.CutOff == nil || p.pop.Summary.CutOff.Of == 0 {
						return 0, false
					}
					return cutOffValue(p.pop.Summary.CutOff.MaxAll()), true
				}},
			)
			continue
		}
		g := name + " (" + string(Honest) + ")"
		ms = append(ms,
			measure{group: g, pop: name, name: "loss", kind: mRate, better: -1, headline: true, get: func(vs *variantStats) (float64, bool) {
				p := find(vs, name)
				return pf(p, func(p *popStats) float64 { return p.lossRate }), p != nil && p.sent+p.notSent > 0 && p.noRate == ""
			}},
			measure{group: g, pop: name, name: "drop rate (of sent)", kind: mRate, better: -1, get: func(vs *variantStats) (float64, bool) {
				p := find(vs, name)
				return pf(p, func(p *popStats) float64 { return p.dropRate }), p != nil && p.sent > 0 && p.noRate == ""
			}},
			measure{group: g, pop: name, name: "p50 response", kind: mNs, better: -1, survivor: true, get: func(vs *variantStats) (float64, bool) {
				p := find(vs, name)
				return pf(p, func(p *popStats) float64 { return float64(p.q.P50) }), p != nil && p.resp != nil
			}},
			measure{group: g, pop: name, name: "p99 response", kind: mNs, better: -1, survivor: true, headline: true, get: func(vs *variantStats) (float64, bool) {
				p := find(vs, name)
				return pf(p, func(p *popStats) float64 { return float64(p.q.P99) }), p != nil && p.resp != nil
			}},
			measure{group: g, pop: name, name: "false disconnects", kind: mCount, better: -1, get: func(vs *variantStats) (float64, bool) {
				p := find(vs, name)
				if p == nil {
					return 0, false
				}
				return float64(p.pop.Summary.FalseDisconnects), true
			}},
		)
	}
	for _, m := range ms {
		row := cmpRow{Group: m.group, Measure: m.name, Headline: m.headline}
		base, haveBase := m.get(stats[0])
		anyValue := false
		for i, vs := range stats {
			v, ok := m.get(vs)
			cell := cmpCell{Value: "–", Partial: vs.v.Incomplete()}
			if ok {
				anyValue = true
				cell.Value = formatMeasure(m.kind, v)
				partial := vs.v.Incomplete() || stats[0].v.Incomplete()
				if i > 0 && haveBase && !(noDelta && m.group == serverTime.group && m.name == serverTime.name) {
					cell.Delta = formatDelta(m.kind, base, v)
					// A run cut short is not better or worse than a
					// whole one: its numbers cover another window.
					if m.better != 0 && v != base && !partial {
						if (v < base) == (m.better < 0) {
							cell.Class = "better"
						} else {
							cell.Class = "worse"
						}
					}
					// A latency of the survivors is no improvement when
					// the population lost players or messages.
					if m.survivor && !partial {
						if n := lostPlayersOrMessages(stats[0], vs, m.pop); n != "" {
							if cell.Class == "better" {
								cell.Class = ""
							}
							cell.Note = n
						}
					}
					if m.hostileDrop && !partial {
						if n := hostileDropNote(stats[0], vs, m.pop, base, v); n != "" {
							cell.Class, cell.Note = "worse", n
						}
					}
				}
			}
			row.Cells = append(row.Cells, cell)
		}
		if anyValue {
			c.Rows = append(c.Rows, row)
		}
	}
	for i := range c.Rows {
		if i == 0 || c.Rows[i-1].Group != c.Rows[i].Group {
			c.Rows[i].First = true
			n := 1
			for i+n < len(c.Rows) && c.Rows[i+n].Group == c.Rows[i].Group {
				n++
			}
			c.Rows[i].Span = n
		}
	}
	return c
}

// ComparisonRow is one measure of the comparison of variants that
// report.html shows: its group ("all honest", "all hostile", "server", or
// a population) and, per variant in Results order, the value formatted as
// the report formats it ("–" where the variant has none) and its change
// against the first variant ("" for the first, or with no value).
type ComparisonRow struct {
	Group, Measure string
	// Headline marks the measures a short summary shows: honest loss and
	// p99 per honest population, admitted traffic per hostile one, and
	// the totals.
	Headline bool
	Cells    []ComparisonCell
}

// ComparisonCell is one variant's value of a ComparisonRow. Incomplete
// marks the value of a variant whose run was stopped before its end
// (Variant.Incomplete): it covers less than the others, so its delta
// says nothing about the policy.
type ComparisonCell struct {
	Value, Delta string
	Incomplete   bool
	// Note says why the delta is not judged as its direction suggests: a
	// latency of a population that lost players or messages, a hostile
	// drop rate that stayed put while more got through.
	Note string
}

// Compare returns the report's comparison of r's variants, for a caller
// that shows it elsewhere (the CLI prints its summary rows), so that both
// say the same thing.
func Compare(r *Results) ([]ComparisonRow, error) {
	if r == nil || len(r.Variants) == 0 {
		return nil, nil
	}
	stats := make([]*variantStats, 0, len(r.Variants))
	for _, v := range r.Variants {
		vs, err := computeVariant(v, r.MeasuredOf(v))
		if err != nil {
			return nil, err
		}
		stats = append(stats, vs)
	}
	c := makeComparison(stats, r)
	rows := make([]ComparisonRow, 0, len(c.Rows))
	for _, row := range c.Rows {
		out := ComparisonRow{Group: row.Group, Measure: row.Measure, Headline: row.Headline}
		for _, cell := range row.Cells {
			out.Cells = append(out.Cells, ComparisonCell{Value: cell.Value, Delta: cell.Delta, Incomplete: cell.Partial, Note: cell.Note})
		}
		rows = append(rows, out)
	}
	return rows, nil
}

// populationNames lists the populations of every variant by name, each
// once, in the order they first appear: a population may be missing from
// some variants.
func populationNames(stats []*variantStats) []string {
	var names []string
	seen := map[string]bool{}
	for _, vs := range stats {
		for _, p := range vs.pops {
			if !seen[p.pop.Name] {
				seen[p.pop.Name] = true
				names = append(names, p.pop.Name)
			}
		}
	}
	return names
}

func pf(p *popStats, f func(*popStats) float64) float64 {
	if p == nil {
		return 0
	}
	return f(p)
}

// compareCharts draws, per population, every variant on one chart per
// measure: the response-time spectrum and the percentiles over time (for a
// population with replies that are not all zero), and for a hostile one
// the messages admitted per second over time. Notes say which populations
// have no latency chart and why.
func compareCharts(stats []*variantStats, r *Results) ([]*chart, []string, error) {
	var out []*chart
	var notes []string
	add := func(c *chart, err error) error {
		if err != nil {
			return err
		}
		if c != nil {
			if c.Live, err = liveJSON(c.spec); err != nil {
				return err
			}
			c.LogNote = c.spec != nil && c.spec.YUnit == "ns"
			out = append(out, c)
		}
		return nil
	}
	for _, name := range populationNames(stats) {
		var lines []spectrumLine
		var series []seriesLine
		var admitted []timeRow
		var markers []liveMarker
		role := ""
		replies, nonZero := false, false
		for i, vs := range stats {
			for _, p := range vs.pops {
				if p.pop.Name != name {
					continue
				}
				role = string(p.pop.Role)
				col := pick(variantColors, i)
				if p.resp != nil {
					replies = true
					if !allZero(p.resp) {
						nonZero = true
						lines = append(lines, spectrumLine{Name: vs.v.Name, Color: col, Hist: p.resp})
						series = append(series, seriesLine{Name: vs.v.Name, Color: col, Series: p.pop.Series})
					}
				}
				for _, m := range popMarkers(p.pop, col) {
					m.Label = vs.v.Name + ": " + strings.TrimPrefix(m.Label, name+": ")
					markers = append(markers, m)
				}
				if p.pop.Role == Hostile {
					admitted = append(admitted, rateRow(vs.v.Name, col, p.pop.Series, func(iv Interval) int64 { return iv.Accepted }))
				}
			}
		}
		switch {
		case !replies:
			notes = append(notes, fmt.Sprintf("%s (%s) got no replies in any variant: no response-time chart.", name, role))
		case !nonZero:
			notes = append(notes, fmt.Sprintf("%s (%s) had only zero latencies in every variant: no response-time chart.", name, role))
		}
		if err := add(spectrumChart(fmt.Sprintf("%s (%s): response time by variant", name, role), lines)); err != nil {
			return nil, nil, err
		}
		if err := add(overTimeChart(fmt.Sprintf("%s (%s): response time over time by variant (p99 solid, p50 dashed)", name, role), series, r.Run.Warmup, r.Run.Duration, markers)); err != nil {
			return nil, nil, err
		}
		if role == string(Hostile) {
			if err := add(rateChart(fmt.Sprintf("%s (%s): messages admitted per second over time by variant", name, role), "admitted per second", admitted, r.Run.Warmup, r.Run.Duration, markers)); err != nil {
				return nil, nil, err
			}
		}
	}
	return out, notes, nil
}

func makeVariantView(i int, vs *variantStats, r *Results, others, colorOf map[string]string) (variantView, error) {
	v := vs.v
	vv := variantView{
		Anchor:          fmt.Sprintf("variant-%d", i+1),
		Name:            v.Name,
		Description:     v.Description,
		ExpectNote:      v.ExpectNote(),
		Invalid:         v.Invalid,
		ThresholdsTotal: len(v.Thresholds),
	}
	if len(v.Policy) > 0 {
		var b bytes.Buffer
		if err := json.Indent(&b, v.Policy, "", "  "); err == nil {
			vv.Policy = b.String()
		} else {
			vv.Policy = string(v.Policy)
		}
	}
	if c := v.ServerCPU; c != nil {
		vv.ServerCPU = fmt.Sprintf("%s per frame (%s over %s frames, warm-up included)", formatNs(c.NsPerFrame), fmtDuration(c.CPU), fmtInt(c.Frames))
	}
	// Charts.
	var spec []spectrumLine
	var lines, honestLines, hostileLines []seriesLine
	var pops []*Population
	var silent, zero []string // populations with no replies, or only zero latencies: no spectrum
	var markers, honestMarkers, hostileMarkers []liveMarker
	var notSentRows []timeRow
	for _, p := range vs.pops {
		pops = append(pops, p.pop)
		col := colorOf[p.pop.Name]
		switch {
		case p.resp == nil:
			silent = append(silent, p.pop.Name)
		case allZero(p.resp):
			zero = append(zero, p.pop.Name)
		default:
			spec = append(spec, spectrumLine{Name: p.pop.Name, Color: col, Hist: p.resp})
		}
		sl := seriesLine{Name: p.pop.Name, Color: col, Series: p.pop.Series}
		if p.resp != nil && !allZero(p.resp) {
			lines = append(lines, sl)
		}
		ms := popMarkers(p.pop, col)
		markers = append(markers, ms...)
		if p.pop.Role == Hostile {
			hostileLines = append(hostileLines, sl)
			hostileMarkers = append(hostileMarkers, ms...)
		} else {
			honestLines = append(honestLines, sl)
			honestMarkers = append(honestMarkers, ms...)
		}
		if p.notSent > 0 {
			notSentRows = append(notSentRows, rateRow(p.pop.Name, col, p.pop.Series, func(iv Interval) int64 { return iv.NotSent }))
		}
	}
	var noSpectrum []string
	if len(silent) > 0 {
		noSpectrum = append(noSpectrum, strings.Join(silent, ", ")+" got no replies (inputs and raw bytes are not answered)")
	}
	if len(zero) > 0 {
		noSpectrum = append(noSpectrum, strings.Join(zero, ", ")+" had only zero latencies (replies in the same virtual instant)")
	}
	if len(noSpectrum) > 0 {
		vv.ChartNotes = append(vv.ChartNotes, "No response-time chart for "+strings.Join(noSpectrum, "; ")+": there is no spectrum to draw.")
	}
	add := func(c *chart, err error) error {
		if err != nil {
			return err
		}
		if c != nil {
			if c.Live, err = liveJSON(c.spec); err != nil {
				return err
			}
			c.LogNote = c.spec != nil && c.spec.YUnit == "ns"
			vv.Charts = append(vv.Charts, c)
		}
		return nil
	}
	if err := add(spectrumChart("Response time percentile spectrum per population", spec)); err != nil {
		return vv, err
	}
	if err := add(overTimeChart("Response time percentiles over time (p99 solid, p50 dashed; no line where an interval had no reply)", lines, r.Run.Warmup, r.Run.Duration, markers)); err != nil {
		return vv, err
	}
	if len(honestLines) > 0 {
		c, err := dropsOverTimeChart("Honest drops by reason over time (stacked)", honestLines, r.Run.Warmup, r.Run.Duration, others, honestMarkers)
		if err != nil {
			return vv, err
		}
		if c == nil && hasSeries(honestLines) {
			vv.Warnings = append(vv.Warnings, "No honest message was dropped in any interval.")
		}
		if err := add(c, nil); err != nil {
			return vv, err
		}
	}
	if len(hostileLines) > 0 {
		if err := add(dropsOverTimeChart("Hostile drops by reason over time (stacked; the server's reasons and the client's, without not-sent messages)", hostileLines, r.Run.Warmup, r.Run.Duration, others, hostileMarkers)); err != nil {
			return vv, err
		}
	}
	end := r.Run.Duration
	if v.Stopped > 0 {
		end = v.Stopped
	}
	if err := add(rateChart("Messages not sent over time, per population (the client's connection was down)", "not sent per second", notSentRows, r.Run.Warmup, end, markers)); err != nil {
		return vv, err
	}
	if err := add(outcomeChart("Accepted and dropped share of sent messages, per population", pops, others)); err != nil {
		return vv, err
	}
	if len(vv.Charts) == 0 {
		vv.NoDataNote = "This variant recorded no latencies and no traffic: nothing to chart."
	}
	// Tables.
	var noRate []*Population
	for _, p := range vs.pops {
		pp := p.pop
		row := popRow{
			Name: pp.Name, Color: colorOf[pp.Name], Behaviour: pp.Behaviour + transportNote(pp.Transport), Role: string(pp.Role),
			Clients: fmtInt(int64(pp.Clients)), Sent: fmtInt(p.sent), Accepted: fmtInt(p.accepted),
			Dropped: fmtInt(p.drop), DropRate: FormatPercent(p.dropRate),
			Scheduled: fmtInt(p.sent + p.notSent), NotSent: fmtInt(p.notSent), Loss: FormatPercent(p.lossRate),
			P50: fmtLatency(p.q.P50, p.resp != nil), P99: fmtLatency(p.q.P99, p.resp != nil),
			Max:      fmtLatency(p.q.Max, p.resp != nil),
			Admitted: fmtRate(p.admittedPS, "msg/s"), AdmittedB: fmtBytesRate(p.admittedBS),
			Hostile: pp.Role == Hostile, False: "–", CutOff: "–",
		}
		switch {
		case p.noRate != "":
			row.DropRate, row.Loss = "–", "–"
			noRate = append(noRate, pp)
		case p.sent == 0:
			row.DropRate = "–" // nothing sent: no rate, as the thresholds say
		}
		if p.sent+p.notSent == 0 {
			row.Loss = "–"
		}
		if pp.Role != Hostile {
			row.False = fmtInt(pp.Summary.FalseDisconnects) + " / " + fmtInt(pp.Summary.FalseLockouts)
		}
		if c := pp.Summary.CutOff; c != nil {
			row.CutOff = fmt.Sprintf("%d of %d", c.Clients, c.Of)
			if c.Clients > 0 {
				row.CutOffTimes = fmt.Sprintf("p50 %s, max %s", formatNs(float64(c.P50)), formatNs(float64(c.Max)))
				if c.Clients < c.Of {
					row.CutOffTimes += " of those cut off"
				}
			}
		}
		vv.PopRows = append(vv.PopRows, row)
		for j, k := range pp.Kinds {
			kr := kindRow{
				Population: pp.Name, Kind: k.Kind, Sent: fmtInt(k.Sent), Accepted: fmtInt(k.Accepted),
				Scheduled: fmtInt(k.Sent + k.NotSent), NotSent: fmtInt(k.NotSent),
				Dropped: fmtInt(k.Dropped()), DropRate: "–", NoOutcome: "–", First: j == 0, Span: len(pp.Kinds),
				P50: "–", P90: "–", P99: "–", P999: "–", Max: "–", ServiceP99: "–", SendLagP99: "–",
			}
			if k.IsSessions() {
				// Sent is the sessions ended and the reasons say why; none
				// was accepted or dropped as a message, and no remainder
				// means anything.
				kr.Accepted, kr.Dropped, kr.Scheduled, kr.NotSent = "–", "–", "–", "–"
			} else {
				if rate, ok := k.DropRate(); ok {
					kr.DropRate = FormatPercent(rate)
				}
				// Raw counts writes (the server decides frames): no
				// rate or remainder means anything for it.
				if !k.IsRaw() {
					kr.NoOutcome = fmtInt(k.NoOutcome())
				}
			}
			for _, reason := range sortedReasons(k.Drops) {
				kr.Reasons = append(kr.Reasons, reason+" "+fmtInt(k.Drops[reason]))
			}
			if h := k.ResponseTime; h != nil && h.Count > 0 {
				kr.P50, kr.P90, kr.P99, kr.P999, kr.Max = formatNs(float64(h.P50)), formatNs(float64(h.P90)), formatNs(float64(h.P99)), formatNs(float64(h.P999)), formatNs(float64(h.Max))
			}
			if h := k.ServiceTime; h != nil && h.Count > 0 {
				kr.ServiceP99 = formatNs(float64(h.P99))
			}
			if h := k.SendLag; h != nil && h.Count > 0 {
				kr.SendLagP99 = formatNs(float64(h.P99))
			}
			for _, m := range []Metric{ResponseTime, ServiceTime, SendLag} {
				if h := k.Histogram(m); h != nil && h.MergeDropped > 0 {
					vv.Warnings = append(vv.Warnings, fmt.Sprintf("%s / %s: %s lost %s values out of the histogram's range while merging; its percentiles under-report.", pp.Name, k.Kind, m, fmtInt(h.MergeDropped)))
				}
			}
			vv.KindRows = append(vv.KindRows, kr)
		}
	}
	if len(noRate) > 0 {
		vv.NoRateNote = "Drop rate –: " + NoRateNote(noRate, func(why string) string {
			if why == NoRateRaw {
				return "; see the raw row below"
			}
			return ""
		}) + "."
	}
	return vv, nil
}

func hasSeries(ls []seriesLine) bool {
	for _, l := range ls {
		if len(l.Series) > 0 {
			return true
		}
	}
	return false
}

// transportNote is what a population's row adds to its behaviour for
// its own transport (Population.Transport): nothing when it has none.
func transportNote(t string) string {
	if t == "" {
		return ""
	}
	return ", over " + t
}
