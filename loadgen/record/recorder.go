package record

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/sluicedev/sluice/loadgen/behave"
)

// Metric is one of the latencies recorded per population × kind, in ns.
type Metric uint8

// The metrics.
const (
	// Response: from the INTENDED send time to the reply. An action carried
	// out late, or held by a freeze, still counts from when it was meant to
	// go: this is the coordinated-omission-free latency.
	Response Metric = iota
	// Service: from the actual write to the reply.
	Service
	// SendLag: from the intended time to when the worker carried the
	// action out. Large values mean the harness, not the server, was
	// behind: the run is not valid (see Recorder.CheckSendLag).
	SendLag
	NumMetrics
)

var metricNames = [NumMetrics]string{"response", "service", "send_lag"}

// String returns the metric's stable name.
func (m Metric) String() string {
	if m < NumMetrics {
		return metricNames[m]
	}
	return fmt.Sprintf("Metric(%d)", uint8(m))
}

// HistConfig is the geometry of every histogram of a recorder. The zero
// value takes the defaults.
type HistConfig struct {
	// Lowest discernible value, ns. Default 1.
	Lowest int64
	// Highest trackable value, ns; larger values are clamped to it (and
	// counted, see Recorder.Clamped). Default one minute.
	Highest int64
	// Significant decimal digits, 1 to 5. Default 3.
	Digits int
}

func (c HistConfig) withDefaults() HistConfig {
	if c.Lowest == 0 {
		c.Lowest = 1
	}
	if c.Highest == 0 {
		c.Highest = int64(time.Minute)
	}
	if c.Digits == 0 {
		c.Digits = 3
	}
	return c
}

func (c HistConfig) validate() error {
	switch {
	case c.Lowest < 1:
		return &behave.ParamError{Owner: "recorder", Field: "Lowest", Value: c.Lowest, Reason: "must be at least 1"}
	case c.Highest < 2*c.Lowest:
		return &behave.ParamError{Owner: "recorder", Field: "Highest", Value: c.Highest, Reason: "must be at least twice Lowest"}
	case c.Digits < 1 || c.Digits > 5:
		return &behave.ParamError{Owner: "recorder", Field: "Digits", Value: c.Digits, Reason: "must be in [1, 5]"}
	}
	return nil
}

// Stats are a worker's counters.
type Stats struct {
	Actions   int64 // actions carried out
	Skipped   int64 // OpRetry actions skipped because the client was not down
	Events    int64 // events received from the driver
	Unmatched int64 // replies and pongs that matched nothing in flight (late after a timeout, stale, or unsolicited)
	Stopped   int64 // workers that stopped on their action count rather than at the end of the run
	Overdue   int64 // actions due before the end of the run that a worker behind its schedule had not carried out when it ended (see Outcome HeldAtEnd)
}

func (s *Stats) add(o Stats) {
	s.Actions += o.Actions
	s.Skipped += o.Skipped
	s.Events += o.Events
	s.Unmatched += o.Unmatched
	s.Stopped += o.Stopped
	s.Overdue += o.Overdue
}

type popRecord struct {
	Hist     [behave.NumKinds][NumMetrics]*hdrhistogram.Histogram
	run      [behave.NumKinds][NumMetrics]valueRun
	Clamped  [behave.NumKinds][NumMetrics]int64
	Dropped  [behave.NumKinds][NumMetrics]int64
	Outcomes [behave.NumKinds][NumOutcomes]int64
	Bytes    [behave.NumKinds]int64 // bytes written
	Written  [behave.NumKinds]int64 // frames written
	// kdec are the server's decisions, by kind, on every frame the
	// population sent (Accepted, or the reason it refused it): outcomes
	// below ServerReasons only. Their sum over the kinds is Decisions.
	kdec [behave.NumKinds][NumOutcomes]int64
}

// Decisions sums the population's decisions over every kind.
func (p *popRecord) Decisions() (out [NumOutcomes]int64) {
	for k := range p.kdec {
		for o, n := range p.kdec[k] {
			out[o] += n
		}
	}
	return out
}

// valueRun is a run of records of one value not yet added to a histogram:
// a sim records the same value again and again (a send lag of zero, the
// service time of every request), and adding n of them at once
// (RecordValues) leaves the histogram as n records would.
type valueRun struct {
	v, n int64
}

// Recorder holds a run's (or one worker's) measurements: per population ×
// kind, an HDR histogram of each Metric (values in ns, created on first
// use) and counts of every Outcome the client saw and of bytes written; per
// population, the server's decisions on what it sent (see AddDecision);
// and the workers' Stats. Each worker records into its own Recorder; Merge adds them up,
// checking and keeping the count of values every histogram merge dropped.
// Make one with NewRecorder; it is not safe for concurrent use.
type Recorder struct {
	labels []string
	Cfg    HistConfig
	Pops   []popRecord
	// Stats are the workers' counters, summed by Merge.
	Stats Stats
}

// NewRecorder returns an empty recorder for the given population labels
// (Plan.Labels) and histogram geometry.
func NewRecorder(labels []string, cfg HistConfig) (*Recorder, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Recorder{labels: slices.Clone(labels), Cfg: cfg, Pops: make([]popRecord, len(labels))}, nil
}

// Labels returns the population labels, indexed like Client.Population.
func (r *Recorder) Labels() []string { return slices.Clone(r.labels) }

// Config returns the histogram geometry.
func (r *Recorder) Config() HistConfig { return r.Cfg }

func (r *Recorder) newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(r.Cfg.Lowest, r.Cfg.Highest, r.Cfg.Digits)
}

// Record records a value of metric m, in ns. Values below 0 are recorded
// as 0 and values above the highest trackable as the highest, and both are
// counted as clamped.
//
// A record of the value recorded just before it, for the same population,
// kind and metric, is only counted: the histogram gets the run of them at
// once (RecordValues, which leaves it as that many records would) when
// another value comes, or before the recorder is read (flush). The
// histogram itself is made at the first record, as it is what says that
// something was recorded.
func (r *Recorder) Record(pop int, k behave.Kind, m Metric, ns int64) {
	p := &r.Pops[pop]
	if ns < 0 || ns > r.Cfg.Highest {
		p.Clamped[k][m]++
		ns = min(max(ns, 0), r.Cfg.Highest)
	}
	run := &p.run[k][m]
	if run.n > 0 && run.v == ns {
		run.n++
		return
	}
	if p.Hist[k][m] == nil {
		p.Hist[k][m] = r.newHist()
	} else if run.n > 0 {
		p.flushRun(k, m)
	}
	run.v, run.n = ns, 1
}

// flushRun adds the run of (k, m) to its histogram.
func (p *popRecord) flushRun(k behave.Kind, m Metric) {
	run := &p.run[k][m]
	if p.Hist[k][m].RecordValues(run.v, run.n) != nil {
		// Unreachable after the clamp (the total count cannot overflow in
		// practice); counted rather than lost silently.
		p.Dropped[k][m] += run.n
	}
	run.n = 0
}

// Flush adds every pending run to its histogram. Everything that reads
// the histograms or the dropped counts calls it first; a Worker calls it
// when its Run returns.
func (r *Recorder) Flush() {
	for i := range r.Pops {
		p := &r.Pops[i]
		for k := range behave.NumKinds {
			for m := range NumMetrics {
				if p.run[k][m].n > 0 {
					p.flushRun(k, m)
				}
			}
		}
	}
}

// Add counts n messages of kind k with outcome o.
func (r *Recorder) Add(pop int, k behave.Kind, o Outcome, n int64) {
	r.Pops[pop].Outcomes[k][o] += n
}

// AddDecision counts n frames of kind k of the population that the server
// accepted (o = Accepted) or refused for reason o (o < ServerReasons;
// other outcomes are ignored). Unlike the outcomes, which are what the
// client saw (an input is only ever Sent), decisions cover every frame,
// inputs included. The sim driver counts each frame (and Hello) as it
// decides it, under the kind the server decoded it as (a frame that does
// not decode, and an oversize one, under KindRaw). The loopback driver
// reads the server's counters, which are per population only: see
// RunLoopback for how it splits them by kind.
func (r *Recorder) AddDecision(pop int, k behave.Kind, o Outcome, n int64) {
	if o < ServerReasons {
		r.Pops[pop].kdec[k][o] += n
	}
}

// Decisions returns the server's decisions on the population's frames, by
// outcome (Accepted and server reasons only), all kinds together.
func (r *Recorder) Decisions(pop int) [NumOutcomes]int64 { return r.Pops[pop].Decisions() }

// KindDecisions returns the server's decisions on the population's frames
// of kind k.
func (r *Recorder) KindDecisions(pop int, k behave.Kind) [NumOutcomes]int64 {
	return r.Pops[pop].kdec[k]
}

// AddWritten counts frames of kind k written together, bytes in all (for
// KindRaw, one write: see OpRaw).
func (r *Recorder) AddWritten(pop int, k behave.Kind, frames, bytes int64) {
	r.Pops[pop].Written[k] += frames
	r.Pops[pop].Bytes[k] += bytes
}

// Histogram returns the histogram of metric m, or nil when nothing was
// recorded. It is the recorder's own: do not change it.
func (r *Recorder) Histogram(pop int, k behave.Kind, m Metric) *hdrhistogram.Histogram {
	r.Flush()
	return r.Pops[pop].Hist[k][m]
}

// Count returns how many messages of kind k had outcome o.
func (r *Recorder) Count(pop int, k behave.Kind, o Outcome) int64 { return r.Pops[pop].Outcomes[k][o] }

// Outcomes returns the counts of every outcome of kind k.
func (r *Recorder) Outcomes(pop int, k behave.Kind) [NumOutcomes]int64 {
	return r.Pops[pop].Outcomes[k]
}

// Bytes returns the bytes written for kind k.
func (r *Recorder) Bytes(pop int, k behave.Kind) int64 { return r.Pops[pop].Bytes[k] }

// Written returns the frames written for kind k (for KindRaw, the
// writes): those Bytes counts. A frame the client never wrote (NotSent,
// Refused, HeldAtEnd but for a request awaiting its reply when a run was
// cancelled) is in neither.
func (r *Recorder) Written(pop int, k behave.Kind) int64 { return r.Pops[pop].Written[k] }

// Clamped returns how many values of metric m were out of the histogram's
// range and clamped into it.
func (r *Recorder) Clamped(pop int, k behave.Kind, m Metric) int64 { return r.Pops[pop].Clamped[k][m] }

// Dropped returns how many values of metric m were lost: refused by a
// merge, or by a record.
func (r *Recorder) Dropped(pop int, k behave.Kind, m Metric) int64 {
	r.Flush()
	return r.Pops[pop].Dropped[k][m]
}

// TotalClamped returns the values recorded out of range, and clamped into
// it, over every histogram.
func (r *Recorder) TotalClamped() int64 {
	return r.total(func(p *popRecord) *[behave.NumKinds][NumMetrics]int64 { return &p.Clamped })
}

// TotalDropped returns the values lost over every histogram.
func (r *Recorder) TotalDropped() int64 {
	r.Flush()
	return r.total(func(p *popRecord) *[behave.NumKinds][NumMetrics]int64 { return &p.Dropped })
}

// total sums one per-histogram count over every population, kind and
// metric.
func (r *Recorder) total(counts func(*popRecord) *[behave.NumKinds][NumMetrics]int64) int64 {
	var n int64
	for i := range r.Pops {
		for _, row := range counts(&r.Pops[i]) {
			for _, c := range row {
				n += c
			}
		}
	}
	return n
}

// ErrMismatch is returned by Merge for recorders of different labels or
// geometry.
var ErrMismatch = errors.New("loadgen: recorders do not match")

// Merge adds from's measurements into r. Histograms are merged value by
// value; any value the merge drops is counted in r's Dropped (as are those
// from had dropped), never lost silently.
func (r *Recorder) Merge(from *Recorder) error {
	if !slices.Equal(r.labels, from.labels) || r.Cfg != from.Cfg {
		return fmt.Errorf("%w: labels %v / %v, geometry %+v / %+v", ErrMismatch, r.labels, from.labels, r.Cfg, from.Cfg)
	}
	r.Flush()
	from.Flush()
	for i := range r.Pops {
		p, q := &r.Pops[i], &from.Pops[i]
		for k := range behave.NumKinds {
			for m := range NumMetrics {
				if h := q.Hist[k][m]; h != nil {
					if p.Hist[k][m] == nil {
						p.Hist[k][m] = r.newHist()
					}
					p.Dropped[k][m] += p.Hist[k][m].Merge(h)
				}
				p.Dropped[k][m] += q.Dropped[k][m]
				p.Clamped[k][m] += q.Clamped[k][m]
			}
			for o := range NumOutcomes {
				p.Outcomes[k][o] += q.Outcomes[k][o]
				p.kdec[k][o] += q.kdec[k][o]
			}
			p.Bytes[k] += q.Bytes[k]
			p.Written[k] += q.Written[k]
		}
	}
	r.Stats.add(from.Stats)
	return nil
}

// MergeAll returns a new recorder holding the sum of recs (at least one).
func MergeAll(recs ...*Recorder) (*Recorder, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: nothing to merge", ErrMismatch)
	}
	out, err := NewRecorder(recs[0].labels, recs[0].Cfg)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if err := out.Merge(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ErrSendLag is wrapped by CheckSendLag's error.
var ErrSendLag = errors.New("loadgen: send lag too large: the harness fell behind its schedule and the run is not valid")

// CheckSendLag returns an error wrapping ErrSendLag, naming the population
// and kind, if the q-quantile (0 < q ≤ 1) of any send-lag histogram
// exceeds limit.
func (r *Recorder) CheckSendLag(q float64, limit time.Duration) error {
	r.Flush()
	for i := range r.Pops {
		for k := range behave.NumKinds {
			h := r.Pops[i].Hist[k][SendLag]
			if h == nil || h.TotalCount() == 0 {
				continue
			}
			// Values within the histogram's precision of the limit pass.
			if v := h.ValueAtPercentile(q * 100); v > int64(limit) && !h.ValuesAreEquivalent(v, int64(limit)) {
				return fmt.Errorf("%w: %s %v p%g = %v > %v", ErrSendLag, r.labels[i], behave.Kind(k), q*100, time.Duration(v), limit)
			}
		}
	}
	return nil
}
