package loadgen

import (
	"math"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Interval is one point of a population's time series: what happened in
// [Start, Start+width) of the run, by the driver's time of each record.
type Interval struct {
	Start time.Duration
	// Sent counts the messages the population wrote: frames (a write of
	// Count frames counts Count), hellos, and raw writes.
	Sent int64
	// Accepted counts the frames (and hellos) of the population that the
	// server accepted: Outcomes[Accepted].
	Accepted int64
	// Outcomes below ServerReasons are the server's decisions on the
	// population's frames (Accepted, or the reason it refused one; see
	// Recorder.AddDecision); the others are what only the client saw (Sent,
	// NotSent, Timeout, Disconnected, Refused, Failed, Overflow,
	// UnknownReason, HeldAtEnd), as the Recorder counts them for every kind
	// but KindSession: a session the server ended is not a message.
	Outcomes [NumOutcomes]int64
	// Response holds the response times (from the intended send time, in
	// ns) of every reply and pong the population received, all kinds
	// together, in SeriesHist's geometry; nil when there were none. It is
	// packed (it stores its populated buckets only, a few hundred bytes
	// where a dense histogram of that geometry is 30 KiB, so that a run of
	// MaxIntervals points keeps megabytes, not gigabytes): MergeInto a
	// dense histogram of SeriesHist's geometry (NewSeriesHistogram) gives
	// the same counts, percentiles and encoding as recording the values
	// into it would.
	Response *hdrhistogram.PackedHistogram
	// Dropped counts the response times Response could not hold (a merge
	// into it refused them). The workers record in its geometry and clamp
	// into its range, so it stays 0; a reader that finds it is not has
	// lost values and must say so.
	Dropped int64
}

// SeriesHist is the geometry of the series' response histograms: coarser
// than a Recorder's default (two significant digits where it keeps three),
// since a run holds one per population per interval (packed; a worker
// records into a dense one of 30 KiB per population, where a Recorder's
// take 216 KiB). Like a Recorder's they resolve 1 ns, from 0 to
// one minute: values below 256 ns are exact (0 is 0), larger ones are
// reported as the highest value of their bucket, less than 1% above the
// value. (A floor of 1µs would save 9 KiB a histogram but make the first
// bucket [0, 512) ns, whose highest value, 511, is what a percentile of
// zeros would then report.) Values out of range are clamped into it.
var SeriesHist = HistConfig{Lowest: 1, Highest: int64(time.Minute), Digits: 2}

// MaxIntervals bounds the points of a run's series (Plan.Duration /
// RunSpec.Interval, rounded up).
const MaxIntervals = 10_000

// series is a run's time series, shared by its workers: each adds its
// accumulation of one interval at a time under the mutex. A point's
// response histogram is packed from the first add (see Interval.Response);
// the dense histograms are the workers' own, one per population each,
// reused from one interval to the next.
type series struct {
	mu    sync.Mutex
	width int64
	pts   [][]Interval // [population][interval]
}

func newSeries(pops int, width, duration int64) *series {
	n := int((duration + width - 1) / width)
	s := &series{width: width, pts: make([][]Interval, pops)}
	for p := range s.pts {
		s.pts[p] = make([]Interval, n)
		for k := range s.pts[p] {
			s.pts[p][k].Start = time.Duration(int64(k) * width)
		}
	}
	return s
}

// index returns the interval of time t; times past the end of the run
// (replies awaited after it) go into the last one.
func (s *series) index(t int64) int {
	n := len(s.pts[0])
	return min(max(int(t/s.width), 0), n-1)
}

// truncate ends a stopped run's series at ran, how far it got: it keeps
// the points that start before ran (at least one) and adds what the
// points after them hold (the last reads of a loopback run's counters,
// taken just after it stopped) into the last point kept, so that no count
// is lost and no point covers time the run never reached.
func (s *series) truncate(ran int64) {
	keep := int(max((ran+s.width-1)/s.width, 1))
	dense := NewSeriesHistogram()
	for pop, pts := range s.pts {
		if keep >= len(pts) {
			continue
		}
		for k := keep; k < len(pts); k++ {
			tail := &pts[k]
			lost := tail.ResponseInto(dense)
			s.add(pop, keep-1, tail, dense)
			s.pts[pop][keep-1].Dropped += lost
		}
		s.pts[pop] = pts[:keep:keep]
	}
}

// NewSeriesHistogram returns an empty dense histogram in SeriesHist's
// geometry: what a series point's Response merges into (MergeInto) for
// its percentiles and encoding.
func NewSeriesHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(SeriesHist.Lowest, SeriesHist.Highest, SeriesHist.Digits)
}

// ResponseInto resets dst, a dense histogram of SeriesHist's geometry
// (NewSeriesHistogram), and adds iv's response times to it. It returns
// how many response times iv lost: those its point could not hold
// (Dropped) and any dst could not (none, in that geometry).
func (iv *Interval) ResponseInto(dst *hdrhistogram.Histogram) (lost int64) {
	dst.Reset()
	lost = iv.Dropped
	if iv.Response != nil {
		lost += iv.Response.MergeInto(dst)
	}
	return lost
}

func newSeriesPacked() *hdrhistogram.PackedHistogram {
	return hdrhistogram.NewPacked(SeriesHist.Lowest, SeriesHist.Highest, SeriesHist.Digits)
}

// add adds from's counts and resp's response times (nil: none) to point k
// of population pop; it keeps neither. resp has SeriesHist's geometry and
// its values are clamped into it, so the merge into the point's packed
// histogram drops nothing (what it would drop is counted in Dropped). The
// merge scans resp's counts once (30 KiB) and allocates only as the point's
// populated buckets grow.
func (s *series) add(pop, k int, from *Interval, resp *hdrhistogram.Histogram) {
	s.mu.Lock()
	defer s.mu.Unlock()
	to := &s.pts[pop][k]
	to.Sent += from.Sent
	to.Accepted += from.Accepted
	for o := range from.Outcomes {
		to.Outcomes[o] += from.Outcomes[o]
	}
	if resp != nil && resp.TotalCount() > 0 {
		if to.Response == nil {
			to.Response = newSeriesPacked()
		}
		to.Dropped += to.Response.MergeFrom(resp)
	}
}

// The worker's records. t is the driver's time of the record; the worker
// places each at max(t, the latest so far), so that events stamped a
// little out of order by reading goroutines never move its series back.

func (w *Worker) at(t int64) int64 {
	w.clock = max(w.clock, t)
	return w.clock
}

// point returns the worker's accumulation for population pop at time t,
// first handing the previous interval's to the series if t is past it.
func (w *Worker) point(t int64, pop int) *Interval {
	if t >= w.curEnd {
		w.nextPoint(t)
	}
	return &w.acc[pop]
}

// nextPoint moves the worker's accumulation to the interval of t, which is
// past w.cur's end (record times never decrease: see at).
func (w *Worker) nextPoint(t int64) {
	k := w.series.index(t)
	if k != w.cur {
		w.flushSeries()
		w.cur = k
	}
	w.curEnd = math.MaxInt64 // the last interval takes every later time
	if k < len(w.series.pts[0])-1 {
		w.curEnd = int64(k+1) * w.series.width
	}
}

// setSeries makes the worker feed s, one accumulation per population.
func (w *Worker) setSeries(s *series) {
	w.series = s
	w.acc = make([]Interval, len(s.pts))
	w.resp = make([]*hdrhistogram.Histogram, len(s.pts))
}

// flushSeries hands the worker's accumulation to the series.
func (w *Worker) flushSeries() {
	if w.series == nil || w.cur < 0 {
		return
	}
	for pop := range w.acc {
		h := w.resp[pop]
		w.series.add(pop, w.cur, &w.acc[pop], h)
		w.acc[pop] = Interval{}
		if h != nil && h.TotalCount() > 0 {
			h.Reset()
		}
	}
}

func (w *Worker) record(t int64, pop int, k Kind, m Metric, ns int64) {
	t = w.at(t)
	if t >= w.warmup {
		w.rec.Record(pop, k, m, ns)
	}
	if m == Response && w.series != nil {
		w.point(t, pop) // moves the accumulation to t's interval
		h := w.resp[pop]
		if h == nil {
			h = NewSeriesHistogram()
			w.resp[pop] = h
		}
		h.RecordValue(min(max(ns, 0), SeriesHist.Highest))
	}
}

func (w *Worker) add(t int64, pop int, k Kind, o Outcome, n int64) {
	t = w.at(t)
	if t >= w.warmup {
		w.rec.Add(pop, k, o, n)
	}
	// The series counts messages: a session the server ended is not one.
	// The server's decisions come from its counters (the monitor), but in
	// a run that cannot read them (clientView) from the replies alone.
	if w.series != nil && (o >= ServerReasons || w.clientView) && k != KindSession {
		pt := w.point(t, pop)
		pt.Outcomes[o] += n
		if o == Accepted {
			pt.Accepted += n
		}
	}
}

// wrote counts n messages of kind k (bytes in all) written at t.
func (w *Worker) wrote(t int64, cs *clientState, k Kind, n, bytes int64) {
	t = w.at(t)
	if cs.firstSend < 0 {
		cs.firstSend = t
	}
	if t >= w.warmup {
		w.rec.AddWritten(cs.pop, k, n, bytes)
	}
	if w.series != nil {
		w.point(t, cs.pop).Sent += n
	}
}

// decide counts n of the server's decisions on frames of kind k of
// population pop.
func (w *Worker) decide(t int64, pop int, k Kind, o Outcome, n int64) {
	if o >= ServerReasons {
		return
	}
	t = w.at(t)
	if t >= w.warmup {
		w.rec.AddDecision(pop, k, o, n)
	}
	if w.series != nil {
		a := w.point(t, pop)
		a.Outcomes[o] += n
		if o == Accepted {
			a.Accepted += n
		}
	}
}
