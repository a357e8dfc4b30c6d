package loadgen

import (
	"runtime"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The series' response histograms resolve what the recorder's do near
// zero: an interval whose replies all came at once (a sim's ping, answered
// in the same virtual instant) has a p50 and p99 of 0, not the top of a
// microsecond-wide first bucket (511 ns), and a sub-microsecond value is
// reported to the series' two significant digits, not as 1023 ns.
func TestSeriesResolveSubMicrosecond(t *testing.T) {
	rec, err := record.NewRecorder([]string{"p"}, record.HistConfig{})
	require.NoError(t, err)
	w, err := drive.NewWorker(&lateDriver{}, rec, nil, drive.RunConfig{})
	require.NoError(t, err)
	sec := int64(time.Second)
	w.SetSeries(record.NewSeries(1, sec, 3*sec))

	for range 10 {
		w.Record(0, 0, behave.KindPing, record.Response, 0)
	}
	for range 10 {
		w.Record(sec, 0, behave.KindPing, record.Response, 700)
	}
	for _, v := range []int64{0, 100, 100, 255} {
		w.Record(2*sec, 0, behave.KindPing, record.Response, v)
	}
	w.FlushSeries()
	pts := w.Series.Pts[0]

	zero := denseResponse(t, pts[0])
	assert.EqualValues(t, 10, zero.TotalCount())
	assert.Zero(t, zero.ValueAtQuantile(50), "p50 of zeros")
	assert.Zero(t, zero.ValueAtQuantile(99), "p99 of zeros")
	assert.Zero(t, zero.Max(), "max of zeros")

	sub := denseResponse(t, pts[1])
	for _, q := range []float64{50, 99} {
		v := sub.ValueAtQuantile(q)
		assert.GreaterOrEqual(t, v, int64(700), "p%g of 700 ns", q)
		assert.LessOrEqual(t, v, int64(707), "p%g of 700 ns: within two significant digits", q)
	}

	// Below 256 ns the series' buckets are 1 ns wide: values are exact.
	low := denseResponse(t, pts[2])
	assert.EqualValues(t, 100, low.ValueAtQuantile(50))
	assert.EqualValues(t, 255, low.ValueAtQuantile(99))
	assert.EqualValues(t, 0, low.Min())
}

// denseResponse returns pt's response times as the dense histogram the
// reports take their percentiles and encoding from.
func denseResponse(t *testing.T, pt record.Interval) *hdrhistogram.Histogram {
	t.Helper()
	require.NotNil(t, pt.Response)
	h := record.NewSeriesHistogram()
	require.Zero(t, pt.ResponseInto(h), "lost")
	return h
}

// retainedBy returns the heap that run's result keeps alive: the heap in
// use after a collection with the result held, less that before the run.
func retainedBy(t *testing.T, run func() *Result) (*Result, int64) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res := run()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(res)
	return res, int64(after.HeapAlloc) - int64(before.HeapAlloc)
}

// A run may ask for MaxIntervals points per population, each with its
// own response histogram: the series must keep them at a cost that grows
// with the values in them, not with the histogram's geometry (a dense
// counts array in SeriesHist's geometry is 30 KiB: 300 MB per population
// at MaxIntervals). Two sim runs of the same traffic differ only in their
// interval: one point, or 2,000 of 5ms with responses in nearly every one.
// What the second keeps beyond the first is its series' points.
func TestSeriesHeapPerPoint(t *testing.T) {
	const (
		d     = 10 * time.Second
		width = 5 * time.Millisecond
		n     = int(d / width)
		bound = 2048 // bytes per point, its Interval (counts) included
	)
	plan := behave.Plan{Seed: 3, Duration: d, Populations: []behave.Population{{
		Name: "pinger", Clients: 200,
		Behaviour: &behave.Honest{TickRate: -1, AbilityEvery: -1, ChatEvery: -1, PurchaseEvery: -1, PingEvery: 250 * time.Millisecond},
	}}}
	run := func(iv time.Duration) func() *Result {
		return func() *Result { return runSim(t, RunSpec{Plan: plan, Interval: iv}, behave.DefaultPolicy()) }
	}
	one, heapOne := retainedBy(t, run(d))
	many, heapMany := retainedBy(t, run(width))
	require.Len(t, one.Series[0], 1)
	require.Len(t, many.Series[0], n)

	var with, responses int64
	for _, pt := range many.Series[0] {
		if pt.Response != nil && pt.Response.TotalCount() > 0 {
			with++
			responses += pt.Response.TotalCount()
		}
	}
	require.Equal(t, one.Series[0][0].Response.TotalCount(), responses, "the same traffic")
	require.Greater(t, with, int64(n)*9/10, "responses in nearly every point")

	per := (heapMany - heapOne) / int64(n-1)
	t.Logf("%d points (%d with responses, %d responses): %d bytes retained, %d with one point: %d bytes per point", n, with, responses, heapMany, heapOne, per)
	assert.LessOrEqual(t, per, int64(bound), "heap per series point")
}

// Recording a response time into the series allocates nothing once the
// worker has its population's histogram: the dense one it records into is
// its own, reset and reused from one interval to the next, not handed to
// the series.
func TestSeriesRecordDoesNotAllocate(t *testing.T) {
	rec, err := record.NewRecorder([]string{"p"}, record.HistConfig{})
	require.NoError(t, err)
	w, err := drive.NewWorker(&lateDriver{}, rec, nil, drive.RunConfig{})
	require.NoError(t, err)
	ms := int64(time.Millisecond)
	w.SetSeries(record.NewSeries(1, ms, 1000*ms))
	w.Record(0, 0, behave.KindPing, record.Response, 1234)
	h := w.Resp[0]
	require.NotNil(t, h)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { w.Record(0, 0, behave.KindPing, record.Response, 5678) }))
	w.Record(5*ms, 0, behave.KindPing, record.Response, 1234) // the next interval
	assert.Same(t, h, w.Resp[0], "the worker keeps its histogram")
	assert.EqualValues(t, 1, h.TotalCount(), "reset when handed on")
	assert.EqualValues(t, 1002, w.Series.Pts[0][0].Response.TotalCount())
}

// Workers adding to the same point (a loopback run's) leave it what one
// dense histogram of all their values would hold.
func TestSeriesAddMergesWorkers(t *testing.T) {
	s := record.NewSeries(1, int64(time.Second), int64(time.Second))
	all := record.NewSeriesHistogram()
	for wk := range 3 {
		h := record.NewSeriesHistogram()
		for i := range 200 {
			v := int64(wk*1000+i*i*37) % record.SeriesHist.Highest
			require.NoError(t, h.RecordValue(v))
			require.NoError(t, all.RecordValue(v))
		}
		s.Add(0, 0, &record.Interval{Sent: 1}, h)
		s.Add(0, 0, &record.Interval{Sent: 1}, nil) // counts only, as the monitor adds
	}
	pt := s.Pts[0][0]
	assert.EqualValues(t, 6, pt.Sent)
	got := denseResponse(t, pt)
	assert.Equal(t, all.Export(), got.Export())
	assert.Equal(t, all.TotalCount(), got.TotalCount())
}

// A response time a series point cannot hold is counted in its Dropped,
// not lost without a trace, and Canonical refuses a result that lost any.
func TestSeriesAddCountsWhatThePointCannotHold(t *testing.T) {
	s := record.NewSeries(1, int64(time.Second), int64(time.Second))
	wide := hdrhistogram.New(1, 2*int64(time.Hour), record.SeriesHist.Digits)
	require.NoError(t, wide.RecordValue(int64(time.Millisecond)))
	require.NoError(t, wide.RecordValue(int64(time.Hour))) // beyond SeriesHist.Highest
	s.Add(0, 0, &record.Interval{}, wide)
	pt := s.Pts[0][0]
	assert.Equal(t, int64(1), pt.Response.TotalCount())
	assert.Equal(t, int64(1), pt.Dropped)

	rec, err := record.NewRecorder([]string{"p"}, record.HistConfig{})
	require.NoError(t, err)
	r := &Result{Labels: []string{"p"}, Recorder: rec, Series: s.Pts}
	_, err = r.Canonical()
	require.ErrorContains(t, err, "lost 1 response times")
}

// A stopped run's series keeps the points that start before the stop and
// moves what the later ones hold (a loopback run's last reads) into the
// last kept point: counts and response times alike, none lost.
func TestSeriesTruncateKeepsEveryCount(t *testing.T) {
	sec := int64(time.Second)
	s := record.NewSeries(1, sec, 3*sec)
	for k := range 3 {
		h := record.NewSeriesHistogram()
		require.NoError(t, h.RecordValue(int64(k+1)*int64(time.Millisecond)))
		s.Add(0, k, &record.Interval{Sent: int64(10 * (k + 1)), Accepted: int64(k + 1)}, h)
	}
	s.Truncate(sec + sec/2) // stopped 1.5s into 3s: points 0 and 1 stay
	require.Len(t, s.Pts[0], 2)
	last := s.Pts[0][1]
	assert.EqualValues(t, 20+30, last.Sent)
	assert.EqualValues(t, 2+3, last.Accepted)
	resp := denseResponse(t, last)
	assert.EqualValues(t, 2, resp.TotalCount(), "the response times of points 1 and 2")
	assert.InDelta(t, float64(3*time.Millisecond), float64(resp.Max()), float64(time.Millisecond)/10, "point 2's")
	assert.Zero(t, last.Dropped)
}
