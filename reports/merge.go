package reports

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// ErrMerge is wrapped by every error of MergeSegments.
var ErrMerge = errors.New("reports: cannot merge")

// MergeSegments merges the results of the N segments of one run (sluice
// run --segment I/N on N load generators) into the results of the whole
// run: counts and bytes summed, HDR histograms merged, time series summed
// interval by interval (each segment's series starts at its own run's
// start: with a common --start-at, or in virtual time, the same instant),
// cut-off times pooled, clients added up. Summaries are derived again
// (Finalize); thresholds are left for the caller to evaluate on the whole,
// since a segment's are over its share only.
//
// names[i] names rs[i] in errors (a file's path). The results must be of
// one scenario file, seed, driver, duration, warm-up, interval, target and
// sluice version, each a segment of the same N, together every segment
// from 0 to N-1 exactly once, with the same variants and populations; an
// error says which file breaks which rule.
func MergeSegments(rs []*Results, names []string) (*Results, error) {
	if len(rs) == 0 || len(rs) != len(names) {
		return nil, fmt.Errorf("%w: no results", ErrMerge)
	}
	bad := func(i int, format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrMerge, names[i], fmt.Sprintf(format, a...))
	}
	first := rs[0]
	n, err := segmentOf(first.Run.Segment)
	if err != nil {
		return nil, bad(0, "%v", err)
	}
	seen := make([]string, n.of)
	for i, r := range rs {
		sg, err := segmentOf(r.Run.Segment)
		if err != nil {
			return nil, bad(i, "%v", err)
		}
		a, b := first.Run, r.Run
		switch {
		case sg.of != n.of:
			return nil, bad(i, "is segment %s, of %d segments; %s is of %d", r.Run.Segment, sg.of, names[0], n.of)
		case seen[sg.index] != "":
			return nil, bad(i, "is segment %s, as %s is", r.Run.Segment, seen[sg.index])
		case b.Scenario != a.Scenario || b.ScenarioSHA256 != a.ScenarioSHA256:
			return nil, bad(i, "is of scenario %q (sha256 %.12s), not %q (sha256 %.12s) as %s", b.Scenario, b.ScenarioSHA256, a.Scenario, a.ScenarioSHA256, names[0])
		case b.Seed != a.Seed:
			return nil, bad(i, "has seed %d, %s has %d", b.Seed, names[0], a.Seed)
		case b.Transport != a.Transport:
			return nil, bad(i, "ran over transport %q, %s over %q", b.Transport, names[0], a.Transport)
		case b.Driver != a.Driver || b.Target != a.Target:
			return nil, bad(i, "ran driver %s against %q, %s driver %s against %q", b.Driver, b.Target, names[0], a.Driver, a.Target)
		case b.Duration != a.Duration || b.Warmup != a.Warmup || b.Interval != a.Interval:
			return nil, bad(i, "ran %v (warm-up %v, interval %v), %s %v (%v, %v)", b.Duration, b.Warmup, b.Interval, names[0], a.Duration, a.Warmup, a.Interval)
		case !b.StartAt.Equal(a.StartAt):
			return nil, bad(i, "started at %s, %s at %s: their time series would not line up (give every segment the same --start-at)", startAt(b.StartAt), names[0], startAt(a.StartAt))
		case r.Environment.SluiceVersion != first.Environment.SluiceVersion:
			return nil, bad(i, "was written by sluice %q, %s by %q", r.Environment.SluiceVersion, names[0], first.Environment.SluiceVersion)
		case a.Driver != "sim" && a.StartAt.IsZero() && n.of > 1:
			return nil, bad(i, "a %s segment needs --start-at, so that every segment's time series starts at the same instant", a.Driver)
		}
		seen[sg.index] = names[i]
		if err := sameShape(first, r); err != nil {
			return nil, bad(i, "%v, unlike %s", err, names[0])
		}
	}
	var missing []string
	for i, name := range seen {
		if name == "" {
			missing = append(missing, fmt.Sprintf("%d/%d", i, n.of))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: segment %s missing: %d of %d given", ErrMerge, strings.Join(missing, ", "), len(rs), n.of)
	}

	run := first.Run
	run.Segment, run.Segments = "", n.of
	for _, r := range rs {
		run.Complete = run.Complete && r.Run.Complete
		if r.Run.Started.Before(run.Started) {
			run.Started = r.Run.Started
		}
		if r.Run.Finished.After(run.Finished) {
			run.Finished = r.Run.Finished
		}
	}
	out := New(run, first.Environment)
	for vi, fv := range first.Variants {
		v, err := out.AddVariant(fv.Name, fv.Policy)
		if err != nil {
			return nil, err
		}
		v.Description, v.Expect = fv.Description, fv.Expect
		for i, r := range rs {
			if err := mergeVariant(v, r.Variants[vi], r.Run.Segment); err != nil {
				return nil, bad(i, "variant %q: %v", fv.Name, err)
			}
		}
	}
	if err := out.Finalize(); err != nil {
		return nil, err
	}
	return out, nil
}

type segment struct{ index, of int }

// segmentOf parses Run.Segment.
func segmentOf(s string) (segment, error) {
	i, n, ok := strings.Cut(s, "/")
	if s == "" || !ok {
		return segment{}, errors.New("is not a segment's results (sluice run --segment I/N writes those)")
	}
	a, err1 := strconv.Atoi(i)
	b, err2 := strconv.Atoi(n)
	if err1 != nil || err2 != nil || b < 1 || a < 0 || a >= b {
		return segment{}, fmt.Errorf("segment %q is not I/N with 0 ≤ I < N", s)
	}
	return segment{a, b}, nil
}

func startAt(t time.Time) string {
	if t.IsZero() {
		return "once it was ready (no --start-at)"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// sameShape checks that r has the variants and populations of first, in
// the same order.
func sameShape(first, r *Results) error {
	if len(r.Variants) != len(first.Variants) {
		return fmt.Errorf("has %d variants", len(r.Variants))
	}
	for vi, v := range r.Variants {
		fv := first.Variants[vi]
		if v.Name != fv.Name {
			return fmt.Errorf("has variant %q where %q is", v.Name, fv.Name)
		}
		if len(v.Populations) != len(fv.Populations) {
			return fmt.Errorf("variant %q has %d populations", v.Name, len(v.Populations))
		}
		for pi, p := range v.Populations {
			if fp := fv.Populations[pi]; p.Name != fp.Name || p.Behaviour != fp.Behaviour || p.Role != fp.Role || p.Transport != fp.Transport {
				return fmt.Errorf("variant %q has population %q (%s, %s) where %q (%s, %s) is", v.Name, p.Name, p.Behaviour, p.Role, fp.Name, fp.Behaviour, fp.Role)
			}
		}
	}
	return nil
}

// mergeVariant adds variant from (of segment seg) into v.
func mergeVariant(v, from *Variant, seg string) error {
	for _, why := range from.Invalid {
		v.Invalid = append(v.Invalid, "segment "+seg+": "+why)
	}
	v.Stopped = max(v.Stopped, from.Stopped)
	if c := from.ServerCPU; c != nil {
		if v.ServerCPU == nil {
			v.ServerCPU = &ServerCPU{}
		}
		v.ServerCPU.Frames += c.Frames
		v.ServerCPU.CPU += c.CPU
		if v.ServerCPU.Frames > 0 {
			v.ServerCPU.NsPerFrame = float64(v.ServerCPU.CPU) / float64(v.ServerCPU.Frames)
		}
	}
	mergeServers(v, from)
	for _, na := range from.NotApplicable {
		if !slices.Contains(v.NotApplicable, na) {
			v.NotApplicable = append(v.NotApplicable, na)
		}
	}
	for _, fp := range from.Populations {
		p := v.Population(fp.Name)
		if p == nil {
			p = v.AddPopulation(fp.Name, fp.Behaviour, fp.Role, 0)
			p.Transport = fp.Transport
		}
		if err := mergePopulation(p, fp); err != nil {
			return fmt.Errorf("population %q: %w", fp.Name, err)
		}
	}
	return nil
}

func mergePopulation(p, from *Population) error {
	p.Clients += from.Clients
	for _, fk := range from.Kinds {
		k := p.Kind(fk.Kind)
		k.Sent += fk.Sent
		k.NotSent += fk.NotSent
		k.Accepted += fk.Accepted
		k.SentBytes += fk.SentBytes
		k.AcceptedBytes += fk.AcceptedBytes
		k.Unknown += fk.Unknown
		for r, n := range fk.Drops {
			k.Drop(r, n)
		}
		for _, m := range []Metric{ResponseTime, ServiceTime, SendLag} {
			if err := mergeHistogram(k, m, fk.Histogram(m)); err != nil {
				return fmt.Errorf("kind %q: %s: %w", fk.Kind, m, err)
			}
		}
	}
	if err := mergeSeries(p, from.Series); err != nil {
		return err
	}
	s, fs := &p.Summary, from.Summary
	s.FalseDisconnects += fs.FalseDisconnects
	s.FalseLockouts += fs.FalseLockouts
	if fc := fs.CutOff; fc != nil {
		if len(fc.Times) != fc.Clients {
			return fmt.Errorf("its cut-off times were not recorded (%d of %d clients): written by an older sluice", len(fc.Times), fc.Clients)
		}
		var times []time.Duration
		of := fc.Of
		if c := s.CutOff; c != nil {
			times, of = append(times, c.Times...), of+c.Of
		}
		s.CutOff = CutOffTimes(append(times, fc.Times...), of)
	}
	return nil
}

// mergeHistogram merges h into k's histogram m.
func mergeHistogram(k *KindStats, m Metric, h *Histogram) error {
	if h == nil {
		return nil
	}
	slot, err := k.slot(m)
	if err != nil {
		return err
	}
	if *slot == nil {
		c := *h
		*slot = &c
		return nil
	}
	merged, dropped, err := mergeEncoded((*slot).HDR, h.HDR)
	if err != nil {
		return err
	}
	out, err := NewHistogram(merged)
	if err != nil {
		return err
	}
	out.MergeDropped = (*slot).MergeDropped + h.MergeDropped + dropped
	*slot = out
	return nil
}

// mergeEncoded decodes two encoded HDR histograms and returns the first
// with the second merged in, and how many values fell out of its range.
func mergeEncoded(a, b string) (*hdrhistogram.Histogram, int64, error) {
	ha, err := hdrhistogram.Decode([]byte(a))
	if err != nil {
		return nil, 0, fmt.Errorf("decode histogram: %w", err)
	}
	hb, err := hdrhistogram.Decode([]byte(b))
	if err != nil {
		return nil, 0, fmt.Errorf("decode histogram: %w", err)
	}
	return ha, ha.Merge(hb), nil
}

// mergeSeries adds from's intervals to p's, interval by interval: the same
// start and length (a segment stopped early has fewer).
func mergeSeries(p *Population, from []Interval) error {
	for i, fi := range from {
		if i == len(p.Series) {
			p.Series = append(p.Series, Interval{Start: fi.Start, Length: fi.Length})
		}
		iv := &p.Series[i]
		if iv.Start != fi.Start || iv.Length != fi.Length {
			return fmt.Errorf("series[%d] is [%v, +%v), the other segments' [%v, +%v)", i, fi.Start, fi.Length, iv.Start, iv.Length)
		}
		iv.Sent += fi.Sent
		iv.NotSent += fi.NotSent
		iv.Accepted += fi.Accepted
		for r, n := range fi.Drops {
			if iv.Drops == nil {
				iv.Drops = map[string]int64{}
			}
			iv.Drops[r] += n
		}
		switch {
		case fi.HDR == "":
		case iv.HDR == "":
			iv.Responses, iv.P50, iv.P99, iv.HDR = fi.Responses, fi.P50, fi.P99, fi.HDR
		default:
			h, _, err := mergeEncoded(iv.HDR, fi.HDR)
			if err != nil {
				return fmt.Errorf("series[%d]: %w", i, err)
			}
			enc, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
			if err != nil {
				return fmt.Errorf("series[%d]: encode histogram: %w", i, err)
			}
			q := Percentiles(h)
			iv.Responses, iv.P50, iv.P99, iv.HDR = h.TotalCount(), q.P50, q.P99, string(enc)
		}
	}
	return nil
}
