package record

import (
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

// Series is a run's time series, shared by its workers: each adds its
// accumulation of one interval at a time under the mutex. A point's
// response histogram is packed from the first add (see Interval.Response);
// the dense histograms are the workers' own, one per population each,
// reused from one interval to the next.
type Series struct {
	mu    sync.Mutex
	Width int64
	Pts   [][]Interval // [population][interval]
}

func NewSeries(pops int, width, duration int64) *Series {
	n := int((duration + width - 1) / width)
	s := &Series{Width: width, Pts: make([][]Interval, pops)}
	for p := range s.Pts {
		s.Pts[p] = make([]Interval, n)
		for k := range s.Pts[p] {
			s.Pts[p][k].Start = time.Duration(int64(k) * width)
		}
	}
	return s
}

// Index returns the interval of time t; times past the end of the run
// (replies awaited after it) go into the last one.
func (s *Series) Index(t int64) int {
	n := len(s.Pts[0])
	return min(max(int(t/s.Width), 0), n-1)
}

// Truncate ends a stopped run's series at ran, how far it got: it keeps
// the points that start before ran (at least one) and adds what the
// points after them hold (the last reads of a loopback run's counters,
// taken just after it stopped) into the last point kept, so that no count
// is lost and no point covers time the run never reached.
func (s *Series) Truncate(ran int64) {
	keep := int(max((ran+s.Width-1)/s.Width, 1))
	dense := NewSeriesHistogram()
	for pop, pts := range s.Pts {
		if keep >= len(pts) {
			continue
		}
		for k := keep; k < len(pts); k++ {
			tail := &pts[k]
			lost := tail.ResponseInto(dense)
			s.Add(pop, keep-1, tail, dense)
			s.Pts[pop][keep-1].Dropped += lost
		}
		s.Pts[pop] = pts[:keep:keep]
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

// Add adds from's counts and resp's response times (nil: none) to point k
// of population pop; it keeps neither. resp has SeriesHist's geometry and
// its values are clamped into it, so the merge into the point's packed
// histogram drops nothing (what it would drop is counted in Dropped). The
// merge scans resp's counts once (30 KiB) and allocates only as the point's
// populated buckets grow.
func (s *Series) Add(pop, k int, from *Interval, resp *hdrhistogram.Histogram) {
	s.mu.Lock()
	defer s.mu.Unlock()
	to := &s.Pts[pop][k]
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
