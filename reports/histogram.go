package reports

import (
	"errors"
	"fmt"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Quantiles are the standard percentiles of a latency distribution, in
// nanoseconds. Percentiles computes them; the zero value is "no values".
type Quantiles struct {
	P50  int64 `json:"p50_ns"`
	P90  int64 `json:"p90_ns"`
	P99  int64 `json:"p99_ns"`
	P999 int64 `json:"p999_ns"`
	Max  int64 `json:"max_ns"`
}

// Percentiles returns h's p50, p90, p99, p99.9 and max. Each is the
// highest value equivalent to the percentile's bucket, as HdrHistogram
// reports them (see "Latency resolution" in the package documentation):
// exact where h's buckets are 1 ns wide, which for a histogram with a
// lowest discernible value of 1 includes 0. A nil or empty histogram gives
// zeros.
func Percentiles(h *hdrhistogram.Histogram) Quantiles {
	if h == nil || h.TotalCount() == 0 {
		return Quantiles{}
	}
	v := h.ValueAtPercentilesSlice([]float64{50, 90, 99, 99.9})
	return Quantiles{P50: v[0], P90: v[1], P99: v[2], P999: v[3], Max: h.Max()}
}

// Histogram is one latency distribution in nanoseconds: the complete HDR
// histogram, compactly encoded, beside summary values a reader can use
// without decoding it. NewHistogram makes one; Decode gives the HDR
// histogram back. The zero value is an empty histogram with no encoding
// (Decode returns an error for it).
type Histogram struct {
	// Count is the number of recorded values.
	Count int64 `json:"count"`
	// Min and Mean are the smallest and the mean recorded value.
	Min  int64   `json:"min_ns"`
	Mean float64 `json:"mean_ns"`
	// Quantiles are the standard percentiles.
	Quantiles
	// MergeDropped counts values lost while merging per-worker histograms
	// into this one because they were outside its range. Non-zero means the
	// histogram under-reports.
	MergeDropped int64 `json:"merge_dropped,omitempty"`
	// HDR is base64 of HdrHistogram's V2 compressed encoding (the payload
	// of a .hlog line; hdrhistogram.Decode reads it).
	HDR string `json:"hdr"`
}

// NewHistogram encodes h with its summary values. It does not keep h.
func NewHistogram(h *hdrhistogram.Histogram) (*Histogram, error) {
	if h == nil {
		return nil, errors.New("reports: nil histogram")
	}
	enc, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return nil, fmt.Errorf("reports: encode histogram: %w", err)
	}
	out := &Histogram{
		Count:     h.TotalCount(),
		Quantiles: Percentiles(h),
		HDR:       string(enc),
	}
	if out.Count > 0 {
		out.Min = h.Min()
		out.Mean = h.Mean()
	}
	return out, nil
}

// Decode returns the HDR histogram h holds.
func (h *Histogram) Decode() (*hdrhistogram.Histogram, error) {
	if h == nil || h.HDR == "" {
		return nil, errors.New("reports: histogram has no hdr encoding")
	}
	d, err := hdrhistogram.Decode([]byte(h.HDR))
	if err != nil {
		return nil, fmt.Errorf("reports: decode histogram: %w", err)
	}
	return d, nil
}

// Metric selects one of a kind's latency histograms.
type Metric int

// The metrics.
const (
	// ResponseTime is measured from the intended send time to the reply.
	ResponseTime Metric = iota
	// ServiceTime is measured from the actual send to the reply.
	ServiceTime
	// SendLag is measured from the intended to the actual send.
	SendLag
)

// String returns the metric's name as used in file names and JSON.
func (m Metric) String() string {
	switch m {
	case ResponseTime:
		return "response_time"
	case ServiceTime:
		return "service_time"
	case SendLag:
		return "send_lag"
	}
	return fmt.Sprintf("Metric(%d)", int(m))
}

func (k *KindStats) slot(m Metric) (**Histogram, error) {
	switch m {
	case ResponseTime:
		return &k.ResponseTime, nil
	case ServiceTime:
		return &k.ServiceTime, nil
	case SendLag:
		return &k.SendLag, nil
	}
	return nil, fmt.Errorf("reports: unknown metric %d", int(m))
}

// Histogram returns k's histogram of metric m, or nil.
func (k *KindStats) Histogram(m Metric) *Histogram {
	s, err := k.slot(m)
	if err != nil {
		return nil
	}
	return *s
}

// AddHistogram merges h (values in ns) into k's histogram of metric m,
// creating it if k has none; h itself is not changed. Values that do not fit
// the existing histogram's range are counted in MergeDropped. Call it once
// per worker, or once with the harness's merged histogram.
func (k *KindStats) AddHistogram(m Metric, h *hdrhistogram.Histogram) error {
	s, err := k.slot(m)
	if err != nil {
		return err
	}
	if h == nil {
		return errors.New("reports: nil histogram")
	}
	if *s == nil {
		nh, err := NewHistogram(h)
		if err != nil {
			return err
		}
		*s = nh
		return nil
	}
	cur, err := (*s).Decode()
	if err != nil {
		return err
	}
	dropped := (*s).MergeDropped + cur.Merge(h)
	nh, err := NewHistogram(cur)
	if err != nil {
		return err
	}
	nh.MergeDropped = dropped
	*s = nh
	return nil
}

// MergeHistograms decodes and merges hs into one histogram whose range
// covers all of them, so no value is dropped. Nil entries are skipped; it returns nil when there is
// nothing to merge.
func MergeHistograms(hs ...*Histogram) (*hdrhistogram.Histogram, error) {
	var ds []*hdrhistogram.Histogram
	for _, h := range hs {
		if h == nil {
			continue
		}
		d, err := h.Decode()
		if err != nil {
			return nil, err
		}
		ds = append(ds, d)
	}
	return mergeDecoded(ds), nil
}

func mergeDecoded(ds []*hdrhistogram.Histogram) *hdrhistogram.Histogram {
	if len(ds) == 0 {
		return nil
	}
	lo, hi, sig := ds[0].LowestTrackableValue(), ds[0].HighestTrackableValue(), ds[0].SignificantFigures()
	for _, d := range ds[1:] {
		lo = min(lo, d.LowestTrackableValue())
		hi = max(hi, d.HighestTrackableValue())
		sig = max(sig, d.SignificantFigures())
	}
	sig = max(sig, 1)
	out := hdrhistogram.New(max(lo, 1), max(hi, 2*max(lo, 1)), int(sig))
	for _, d := range ds {
		out.Merge(d)
	}
	return out
}
