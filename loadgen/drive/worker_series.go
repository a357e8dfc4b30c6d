package drive

import (
	"math"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/record"
)

// The worker's records. t is the driver's time of the record; the worker
// places each at max(t, the latest so far), so that events stamped a
// little out of order by reading goroutines never move its series back.

func (w *Worker) at(t int64) int64 {
	w.clock = max(w.clock, t)
	return w.clock
}

// point returns the worker's accumulation for population pop at time t,
// first handing the previous interval's to the series if t is past it.
func (w *Worker) point(t int64, pop int) *record.Interval {
	if t >= w.curEnd {
		w.nextPoint(t)
	}
	return &w.acc[pop]
}

// nextPoint moves the worker's accumulation to the interval of t, which is
// past w.cur's end (record times never decrease: see at).
func (w *Worker) nextPoint(t int64) {
	k := w.Series.Index(t)
	if k != w.cur {
		w.FlushSeries()
		w.cur = k
	}
	w.curEnd = math.MaxInt64 // the last interval takes every later time
	if k < len(w.Series.Pts[0])-1 {
		w.curEnd = int64(k+1) * w.Series.Width
	}
}

// SetSeries makes the worker feed s, one accumulation per population.
func (w *Worker) SetSeries(s *record.Series) {
	w.Series = s
	w.acc = make([]record.Interval, len(s.Pts))
	w.Resp = make([]*hdrhistogram.Histogram, len(s.Pts))
}

// FlushSeries hands the worker's accumulation to the series.
func (w *Worker) FlushSeries() {
	if w.Series == nil || w.cur < 0 {
		return
	}
	for pop := range w.acc {
		h := w.Resp[pop]
		w.Series.Add(pop, w.cur, &w.acc[pop], h)
		w.acc[pop] = record.Interval{}
		if h != nil && h.TotalCount() > 0 {
			h.Reset()
		}
	}
}

func (w *Worker) Record(t int64, pop int, k behave.Kind, m record.Metric, ns int64) {
	t = w.at(t)
	if t >= w.Warmup {
		w.rec.Record(pop, k, m, ns)
	}
	if m == record.Response && w.Series != nil {
		w.point(t, pop) // moves the accumulation to t's interval
		h := w.Resp[pop]
		if h == nil {
			h = record.NewSeriesHistogram()
			w.Resp[pop] = h
		}
		h.RecordValue(min(max(ns, 0), record.SeriesHist.Highest))
	}
}

func (w *Worker) Add(t int64, pop int, k behave.Kind, o record.Outcome, n int64) {
	t = w.at(t)
	if t >= w.Warmup {
		w.rec.Add(pop, k, o, n)
	}
	// The series counts messages: a session the server ended is not one.
	// The server's decisions come from its counters (the monitor), but in
	// a run that cannot read them (clientView) from the replies alone.
	if w.Series != nil && (o >= record.ServerReasons || w.ClientView) && k != behave.KindSession {
		pt := w.point(t, pop)
		pt.Outcomes[o] += n
		if o == record.Accepted {
			pt.Accepted += n
		}
	}
}

// wrote counts n messages of kind k (bytes in all) written at t.
func (w *Worker) wrote(t int64, cs *clientState, k behave.Kind, n, bytes int64) {
	t = w.at(t)
	if cs.FirstSend < 0 {
		cs.FirstSend = t
	}
	if t >= w.Warmup {
		w.rec.AddWritten(cs.pop, k, n, bytes)
	}
	if w.Series != nil {
		w.point(t, cs.pop).Sent += n
	}
}

// Decide counts n of the server's decisions on frames of kind k of
// population pop.
func (w *Worker) Decide(t int64, pop int, k behave.Kind, o record.Outcome, n int64) {
	if o >= record.ServerReasons {
		return
	}
	t = w.at(t)
	if t >= w.Warmup {
		w.rec.AddDecision(pop, k, o, n)
	}
	if w.Series != nil {
		a := w.point(t, pop)
		a.Outcomes[o] += n
		if o == record.Accepted {
			a.Accepted += n
		}
	}
}
