package reports

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

func twoVariants(t *testing.T) *Results {
	t.Helper()
	r := New(Run{Scenario: "s", Driver: DriverSim, Duration: 10 * time.Second, Complete: true}, Environment{})
	for _, name := range []string{"base", "other"} {
		v, err := r.AddVariant(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		v.AddPopulation("honest", "honest", Honest, 10)
		v.AddPopulation("flood", "tiny-flood", Hostile, 3)
	}
	return r
}

func findRow(t *testing.T, rows []cmpRow, group, measure string) cmpRow {
	t.Helper()
	for _, row := range rows {
		if row.Group == group && row.Measure == measure {
			return row
		}
	}
	t.Fatalf("no row %s / %s", group, measure)
	return cmpRow{}
}

func comparisonOf(t *testing.T, r *Results) comparison {
	t.Helper()
	if err := r.Finalize(); err != nil {
		t.Fatal(err)
	}
	pg, err := buildPage(r)
	if err != nil {
		t.Fatal(err)
	}
	return pg.Comparison
}

// A variant that measured nothing, stopped before its warm-up ended, has
// no rates to compare: none of its cells is coloured, whether it counted
// nothing or counts that fall in no measured window.
func TestVariantThatMeasuredNothingIsNotBetter(t *testing.T) {
	for _, counted := range []bool{false, true} {
		r := twoVariants(t)
		r.Run.Warmup = 2 * time.Second
		for i, v := range r.Variants {
			if i == 1 && !counted {
				break
			}
			k := v.Population("honest").Kind("move")
			k.Sent, k.Accepted = 1000, 990
			k.Drop("ChannelLimit", 10)
			f := v.Population("flood").Kind("move")
			f.Sent, f.Accepted, f.AcceptedBytes = 1000, 50, 5000
			f.Drop("ChannelLimit", 950)
		}
		r.Variants[1].Stopped = time.Second // interrupted during the warm-up
		r.Variants[1].Invalid = []string{"stopped"}
		c := comparisonOf(t, r)
		for _, m := range [][2]string{{"all honest", "loss"}, {"all hostile", "admitted game messages"}, {"all hostile", "admitted game bytes"}, {"flood (hostile)", "admitted game messages"}} {
			cell := findRow(t, c.Rows, m[0], m[1]).Cells[1]
			assert.Empty(t, cell.Class, "%s %s (counted %v): %q %q", m[0], m[1], counted, cell.Value, cell.Delta)
		}
	}
}

// The comparison's "time to cut off" must not turn green when fewer
// clients were cut off; the thresholds (cutoff_max) call that "never".
func TestPartialCutOffIsNotBetter(t *testing.T) {
	r := twoVariants(t)
	for i, v := range r.Variants {
		f := v.Population("flood").Kind("move")
		f.Sent, f.Accepted = 1000, 50
		f.Drop("ChannelLimit", 950)
		if i == 0 {
			v.Population("flood").Summary.CutOff = CutOffTimes([]time.Duration{8 * time.Millisecond, 9 * time.Millisecond, 10 * time.Millisecond}, 3)
		} else {
			v.Population("flood").Summary.CutOff = CutOffTimes([]time.Duration{5 * time.Millisecond}, 3) // two never cut off
		}
	}
	c := comparisonOf(t, r)
	for _, m := range []string{"time to cut off, p50", "time to cut off, max"} {
		cell := findRow(t, c.Rows, "flood (hostile)", m).Cells[1]
		if cell.Class == "better" {
			t.Errorf("%s: 1 of 3 clients cut off shows %q (%s) as better than 3 of 3", m, cell.Value, cell.Delta)
		}
	}
}

// A variant name is written into the .hlog comment; the log reader scans
// every comment line for "#[StartTime: " and "#[BaseTime: ".
func TestHlogNamesCannotSetTheTimeBase(t *testing.T) {
	r := New(Run{Scenario: "s", Driver: DriverSim, Duration: 3 * time.Second, Complete: true}, Environment{})
	v, _ := r.AddVariant("x #[StartTime: 99999999999]", nil)
	p := v.AddPopulation("honest", "honest", Honest, 1)
	for i := 0; i < 3; i++ {
		h := hdrhistogram.New(1, int64(time.Minute), 2)
		_ = h.RecordValue(int64(1e6))
		if err := p.AddInterval(time.Duration(i)*time.Second, time.Second, 1, 1, nil, h); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	if err := WriteHlog(&b, v, p); err != nil {
		t.Fatal(err)
	}
	// The comment still names the variant: its quoted name reads back.
	m := regexp.MustCompile(`variant ("(?:[^"\\]|\\.)*")`).FindStringSubmatch(b.String())
	require.NotNil(t, m, b.String())
	name, err := strconv.Unquote(m[1])
	require.NoError(t, err)
	assert.Equal(t, v.Name, name)
	rd := hdrhistogram.NewHistogramLogReader(&b)
	for i := 0; ; i++ {
		h, err := rd.NextIntervalHistogram()
		if err != nil {
			t.Fatal(err)
		}
		if h == nil {
			break
		}
		if h.StartTimeMs() != p.Series[i].Start.Milliseconds() {
			t.Fatalf("interval %d reads back starting at %d ms, want %d", i, h.StartTimeMs(), p.Series[i].Start.Milliseconds())
		}
	}
}

// A hostile population's drop rate is not coloured better or worse by
// itself: dropped/sent leaves out messages neither accepted nor dropped,
// so a higher one can go with more admitted. The fixture's numbers are
// those of one run of policy-compare at --duration 2s (flood, balanced
// against loose): loose admits 1.9 times as much with a drop rate that
// barely moved (121 messages in balanced had no outcome). That must not
// read as neutral: the cell is marked worse and says why.
func TestHostileDropRateIsNotColoured(t *testing.T) {
	r := twoVariants(t)
	set := func(v *Variant, sent, acc, drop int64) {
		k := v.Population("flood").Kind("move")
		k.Sent, k.Accepted = sent, acc
		k.Drop("ChannelLimit", drop)
	}
	set(r.Variants[0], 18376, 94, 18161)
	set(r.Variants[1], 18371, 176, 18195)
	c := comparisonOf(t, r)
	dr := findRow(t, c.Rows, "flood (hostile)", "drop rate (of sent)").Cells[1]
	ad := findRow(t, c.Rows, "flood (hostile)", "admitted game messages").Cells[1]
	assert.Equal(t, "worse", ad.Class)
	assert.Empty(t, dr.Class, "a hostile drop rate %s (%s) is coloured, while admitted %s (%s) is %s", dr.Value, dr.Delta, ad.Value, ad.Delta, ad.Class)
	// 13 times as much admitted, drop rate within a point: flagged.
	set(r.Variants[1], 18371-94, 94*13, 0) // its drops stay 18195
	c = comparisonOf(t, r)
	dr = findRow(t, c.Rows, "flood (hostile)", "drop rate (of sent)").Cells[1]
	assert.Equal(t, "worse", dr.Class, "drop rate %s (%s) while admitted rose 13x", dr.Value, dr.Delta)
	assert.Contains(t, dr.Note, "barely moved while admitted game messages rose 13")
}

// A latency delta on a population that lost players or messages is not
// judged better: policy-compare's tight disconnected 14 of 16 laggy
// players, and their p99 fell 7.4% (the survivors'). The cell is not
// green and says why beside it.
func TestSurvivorLatencyIsNotBetter(t *testing.T) {
	r := twoVariants(t)
	for i, v := range r.Variants {
		k := v.Population("honest").Kind("move")
		k.Sent, k.Accepted = 1000, 1000
		h := hdrhistogram.New(1, int64(time.Minute), 3)
		lat := int64(981_000_000)
		if i == 1 {
			k.Sent, k.Accepted, k.NotSent = 400, 300, 600
			k.Drop("ChannelLimit", 100)
			v.Population("honest").Summary.FalseDisconnects = 14
			lat = 909_000_000
		}
		require.NoError(t, h.RecordValue(lat))
		require.NoError(t, k.AddHistogram(ResponseTime, h))
	}
	c := comparisonOf(t, r)
	p99 := findRow(t, c.Rows, "honest (honest)", "p99 response").Cells[1]
	assert.NotEqual(t, "better", p99.Class, "p99 %s (%s) of the survivors is coloured better", p99.Value, p99.Delta)
	assert.Contains(t, p99.Note, "14 more players disconnected")
	loss := findRow(t, c.Rows, "honest (honest)", "loss").Cells[1]
	assert.Equal(t, "worse", loss.Class)
	page := renderHTML(t, r)
	assert.Contains(t, page, `<span class="note">not better: 14 more players disconnected`)
}

// RenderFiles replaces an earlier run's histogram files (a variant this
// run did not run leaves none behind), but not a directory holding files
// it did not write.
func TestRenderFilesReplacesOnlyItsOwnHistograms(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, HDRDir, "gone", "honest.response.hgrm")
	require.NoError(t, os.MkdirAll(filepath.Dir(stale), 0o755))
	require.NoError(t, os.WriteFile(stale, []byte("old"), 0o644))
	r := New(Run{Scenario: "s", Driver: DriverSim, Duration: time.Second, Complete: true}, Environment{})
	_, err := r.AddVariant("v", nil)
	require.NoError(t, err)
	require.NoError(t, RenderFiles(dir, r))
	assert.NoFileExists(t, stale)

	mine := filepath.Join(dir, HDRDir, "notes.txt")
	require.NoError(t, os.MkdirAll(filepath.Dir(mine), 0o755))
	require.NoError(t, os.WriteFile(mine, []byte("mine"), 0o644))
	err = RenderFiles(dir, r)
	require.Error(t, err)
	assert.FileExists(t, mine)
}

// A variant stopped part-way (interrupted) is marked wherever the
// variants are compared, its deltas are not coloured better or worse, and
// the Run table says what it measured rather than the full window.
func TestIncompleteVariantIsMarkedInTheComparison(t *testing.T) {
	r := twoVariants(t)
	r.Run.Duration, r.Run.Warmup, r.Run.Complete = 20*time.Second, 2*time.Second, false
	for i, v := range r.Variants {
		f := v.Population("flood").Kind("move")
		f.Sent, f.Accepted, f.AcceptedBytes = 1000, int64(50+50*i), int64(5000+5000*i)
		f.Drop("ChannelLimit", int64(950-50*i))
		k := v.Population("honest").Kind("move")
		k.Sent, k.Accepted = 1000, int64(990-10*i)
		k.Drop("ChannelLimit", int64(10+10*i))
	}
	other := r.Variants[1]
	other.Stopped = 3 * time.Second
	other.Invalid = []string{"stopped"}
	c := comparisonOf(t, r)
	assert.False(t, c.Variants[0].Incomplete)
	assert.True(t, c.Variants[1].Incomplete)
	for _, row := range c.Rows {
		cell := row.Cells[1]
		assert.True(t, cell.Partial, "%s %s", row.Group, row.Measure)
		assert.Empty(t, cell.Class, "%s %s: %q %q", row.Group, row.Measure, cell.Value, cell.Delta)
		assert.False(t, row.Cells[0].Partial)
	}
	rows, err := Compare(r)
	require.NoError(t, err)
	for _, row := range rows {
		assert.True(t, row.Cells[1].Incomplete)
		assert.False(t, row.Cells[0].Incomplete)
	}
	var b bytes.Buffer
	require.NoError(t, WriteHTML(&b, r))
	page := b.String()
	assert.Contains(t, page, `other<br><span class="badge partial">INCOMPLETE</span>`)
	assert.Contains(t, page, "other stopped 3s into its 20s and measured 1s after the warm-up")
	assert.NotContains(t, page, `td class="num better`)
	assert.NotContains(t, page, `td class="num worse`)
	assert.Contains(t, page, "measured 18s in a variant that ran to the end")
}

// In sim the server's time per frame is sampled wall time, which varies
// between identical runs: it is shown without a delta or a colour, and
// says it is not comparable. Over loopback it is compared.
func TestSimServerTimeIsNotCompared(t *testing.T) {
	for _, driver := range []string{DriverSim, DriverLoopback} {
		r := twoVariants(t)
		r.Run.Driver = driver
		r.Variants[0].SetServerCPU(170*time.Millisecond, 1_000_000)
		r.Variants[1].SetServerCPU(131*time.Millisecond, 1_000_000)
		c := comparisonOf(t, r)
		var row *cmpRow
		for i := range c.Rows {
			if c.Rows[i].Group == "server" {
				row = &c.Rows[i]
			}
		}
		require.NotNil(t, row, driver)
		cell := row.Cells[1]
		if driver == DriverSim {
			assert.Contains(t, row.Measure, "not comparable")
			assert.Empty(t, cell.Delta)
			assert.Empty(t, cell.Class)
		} else {
			assert.Equal(t, "service time per frame", row.Measure)
			assert.Equal(t, "-22.9%", cell.Delta)
			assert.Equal(t, "better", cell.Class)
		}
	}
}

// Variants with identical response times draw one line over the other, so
// the chart says which lines coincide rather than seeming to miss one.
func TestCoincidingLinesAreNamed(t *testing.T) {
	r := twoVariants(t)
	r.Variants = append(r.Variants, &Variant{Name: "third"})
	r.Variants[2].AddPopulation("honest", "honest", Honest, 10)
	r.Variants[2].AddPopulation("flood", "tiny-flood", Hostile, 3)
	for i, v := range r.Variants {
		k := v.Population("honest").Kind("move")
		k.Sent, k.Accepted = 100, 100
		h := hdrhistogram.New(1, int64(time.Minute), 3)
		for n := range int64(100) {
			require.NoError(t, h.RecordValue(1000+n*int64(1+i/2)))
		}
		require.NoError(t, k.AddHistogram(ResponseTime, h))
	}
	require.NoError(t, r.Finalize())
	pg, err := buildPage(r)
	require.NoError(t, err)
	require.NotEmpty(t, pg.Compare)
	assert.Contains(t, pg.Compare[0].Note, "Lines coincide (identical data), the last drawn on top: base, other.")
	assert.NotContains(t, pg.Compare[0].Note, "third")
}
