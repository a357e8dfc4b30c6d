package reports

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/klauspost/cpuid/v2"
)

// New returns an empty Results of the current schema version for the given
// run and environment.
func New(run Run, env Environment) *Results {
	return &Results{SchemaVersion: SchemaVersion, Run: run, Environment: env}
}

// CaptureEnvironment describes this machine and process: CPU facts from
// cpuid, the Go runtime's version, OS, architecture and GOMAXPROCS, and the
// given sluice version string.
func CaptureEnvironment(sluiceVersion string) Environment {
	return Environment{
		CPU:            cpuid.CPU.BrandName,
		CacheLineBytes: cpuid.CPU.CacheLine,
		PhysicalCores:  cpuid.CPU.PhysicalCores,
		LogicalCores:   cpuid.CPU.LogicalCores,
		GoVersion:      runtime.Version(),
		OS:             runtime.GOOS,
		Arch:           runtime.GOARCH,
		GOMAXPROCS:     runtime.GOMAXPROCS(0),
		SluiceVersion:  sluiceVersion,
	}
}

// AddVariant appends a variant named name with the given policy summary.
// policy may be nil, a json.RawMessage or []byte holding a JSON object, or
// any value that encoding/json marshals to an object. Names must be unique.
func (r *Results) AddVariant(name string, policy any) (*Variant, error) {
	if name == "" {
		return nil, fmt.Errorf("reports: variant name is empty: %w", ErrInvalid)
	}
	if r.Variant(name) != nil {
		return nil, fmt.Errorf("reports: variant %q added twice: %w", name, ErrInvalid)
	}
	v := &Variant{Name: name}
	if policy != nil {
		var raw []byte
		switch p := policy.(type) {
		case json.RawMessage:
			raw = p
		case []byte:
			raw = p
		default:
			var err error
			if raw, err = json.Marshal(policy); err != nil {
				return nil, fmt.Errorf("reports: variant %q: policy: %w", name, err)
			}
		}
		if err := checkObject(raw); err != nil {
			return nil, fmt.Errorf("reports: variant %q: policy: %w", name, err)
		}
		v.Policy = compactJSON(raw)
	}
	r.Variants = append(r.Variants, v)
	return v, nil
}

func checkObject(raw []byte) error {
	t := bytes.TrimSpace(raw)
	if !json.Valid(t) {
		return fmt.Errorf("not valid JSON: %w", ErrInvalid)
	}
	if len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("not a JSON object: %w", ErrInvalid)
	}
	return nil
}

func compactJSON(raw []byte) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return append(json.RawMessage(nil), raw...)
	}
	return b.Bytes()
}

// Variant returns the variant named name, or nil.
func (r *Results) Variant(name string) *Variant {
	for _, v := range r.Variants {
		if v.Name == name {
			return v
		}
	}
	return nil
}

// AddPopulation returns v's population named name, appending it with the
// given behaviour, role and client count if v has none by that name.
func (v *Variant) AddPopulation(name, behaviour string, role Role, clients int) *Population {
	if p := v.Population(name); p != nil {
		return p
	}
	p := &Population{Name: name, Behaviour: behaviour, Role: role, Clients: clients}
	v.Populations = append(v.Populations, p)
	return p
}

// Population returns v's population named name, or nil.
func (v *Variant) Population(name string) *Population {
	for _, p := range v.Populations {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// AddThreshold appends an evaluated threshold.
func (v *Variant) AddThreshold(expr string, value float64, unit string, pass bool) {
	v.Thresholds = append(v.Thresholds, Threshold{Expr: expr, Value: value, Unit: unit, Pass: pass})
}

// SetServerCPU records the server's CPU time over frames inbound frames.
func (v *Variant) SetServerCPU(cpu time.Duration, frames int64) {
	s := &ServerCPU{Frames: frames, CPU: cpu}
	if frames > 0 {
		s.NsPerFrame = float64(cpu) / float64(frames)
	}
	v.ServerCPU = s
}

// Passed reports whether every threshold of v passed (true when there are
// none).
func (v *Variant) Passed() bool {
	for _, t := range v.Thresholds {
		if !t.Pass {
			return false
		}
	}
	return true
}

// AsExpected reports whether v's thresholds came out as v expected: all
// held, or (ExpectFail) at least one failed. A variant with invalid
// measurements is not as expected either way.
func (v *Variant) AsExpected() bool {
	return len(v.Invalid) == 0 && v.Passed() != v.ExpectsFail()
}

// Verdict is v's outcome as reports show it: "INVALID" when its
// measurements cannot be trusted, "no thresholds", or "PASS n/m" or
// "FAIL n/m" (n thresholds of m held), followed for a variant expected to
// fail by ", expected" when one failed or ", expected to fail" when every
// one held.
func (v *Variant) Verdict() string {
	passed := 0
	for _, t := range v.Thresholds {
		if t.Pass {
			passed++
		}
	}
	var s string
	switch {
	case len(v.Invalid) > 0:
		return "INVALID"
	case len(v.Thresholds) == 0:
		s = "no thresholds"
	case passed == len(v.Thresholds):
		s = fmt.Sprintf("PASS %d/%d", passed, len(v.Thresholds))
	default:
		s = fmt.Sprintf("FAIL %d/%d", passed, len(v.Thresholds))
	}
	if v.ExpectsFail() {
		if v.Passed() {
			return s + ", expected to fail"
		}
		return s + ", expected"
	}
	return s
}

// ExpectNote says why v was expected to fail ("" when it was not): its
// description, or "a bad policy kept for comparison" when it has none.
func (v *Variant) ExpectNote() string {
	switch {
	case !v.ExpectsFail():
		return ""
	case v.Description != "":
		return v.Description
	}
	return "a bad policy kept for comparison"
}

// Kind returns p's stats for message kind name, appending an empty record if
// p has none.
func (p *Population) Kind(name string) *KindStats {
	for _, k := range p.Kinds {
		if k.Kind == name {
			return k
		}
	}
	k := &KindStats{Kind: name}
	p.Kinds = append(p.Kinds, k)
	return k
}

// Drop adds n drops for reason (a stable reason name, see KnownReasons).
// NotSentReason is no drop: it adds n to NotSent.
func (k *KindStats) Drop(reason string, n int64) {
	if n == 0 {
		return
	}
	if reason == NotSentReason {
		k.NotSent += n
		return
	}
	if k.Drops == nil {
		k.Drops = make(map[string]int64)
	}
	k.Drops[reason] += n
}

// AddInterval appends one time-series point: sent, accepted and drops (by
// reason name; the map is copied) of every kind in [start, start+length),
// (a NotSentReason entry counts in NotSent, not as a drop: those messages
// were never written), and the interval's response times rt (nil when none
// were recorded), whose
// p50 and p99 are computed and whose encoding is kept for the .hlog export.
// Intervals must be appended in time order.
func (p *Population) AddInterval(start, length time.Duration, sent, accepted int64, drops map[string]int64, rt *hdrhistogram.Histogram) error {
	if length <= 0 {
		return fmt.Errorf("reports: population %q: interval at %v has length %v: %w", p.Name, start, length, ErrInvalid)
	}
	if n := len(p.Series); n > 0 && start < p.Series[n-1].Start+p.Series[n-1].Length {
		return fmt.Errorf("reports: population %q: interval at %v overlaps the previous one: %w", p.Name, start, ErrInvalid)
	}
	iv := Interval{Start: start, Length: length, Sent: sent, Accepted: accepted}
	for r, n := range drops {
		if r == NotSentReason {
			iv.NotSent += n
			continue
		}
		if n != 0 {
			if iv.Drops == nil {
				iv.Drops = make(map[string]int64, len(drops))
			}
			iv.Drops[r] = n
		}
	}
	if rt != nil && rt.TotalCount() > 0 {
		enc, err := rt.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
		if err != nil {
			return fmt.Errorf("reports: encode interval histogram: %w", err)
		}
		q := Percentiles(rt)
		iv.Responses, iv.P50, iv.P99, iv.HDR = rt.TotalCount(), q.P50, q.P99, string(enc)
	}
	p.Series = append(p.Series, iv)
	return nil
}

// CutOffTimes summarises the times it took to cut off each of clients
// hostile clients; times holds one entry per client that was cut off.
func CutOffTimes(times []time.Duration, clients int) *CutOff {
	c := &CutOff{Clients: len(times), Of: max(clients, len(times)), AllP50: Never}
	if len(times) == 0 {
		return c
	}
	s := slices.Clone(times)
	slices.Sort(s)
	c.Times = s
	c.P50 = s[(len(s)-1)/2]
	c.Max = s[len(s)-1]
	if m := (c.Of - 1) / 2; m < len(s) { // the clients never cut off sort last
		c.AllP50 = s[m]
	}
	return c
}

// Finalize computes every population's derived summary fields (totals, drop
// rate or the reason for none, response p50/p99, admitted per second over
// r.MeasuredOf(v)) from its kinds, keeping the fields the harness set. Call
// it after the last count is in and before writing; calling it again
// recomputes.
func (r *Results) Finalize() error {
	var errs []error
	for _, v := range r.Variants {
		measured := r.MeasuredOf(v)
		for _, p := range v.Populations {
			ps, err := computePop(p, measured)
			if err != nil {
				errs = append(errs, fmt.Errorf("variant %q: %w", v.Name, err))
				continue
			}
			for _, k := range p.Kinds {
				k.Scheduled = 0
				if !k.IsSessions() {
					k.Scheduled = k.Sent + k.NotSent
				}
			}
			s := &p.Summary
			s.Scheduled, s.Sent, s.NotSent, s.Accepted, s.Dropped = ps.sent+ps.notSent, ps.sent, ps.notSent, ps.accepted, ps.drop
			s.DropRate, s.LossRate, s.NoDropRate = nil, nil, ps.noRate
			if ps.noRate == "" {
				rate, loss := ps.dropRate, ps.lossRate
				s.DropRate, s.LossRate = &rate, &loss
			}
			// With no measured time computePop keeps the summary's own rates
			// (for the page); derived here, they are 0.
			s.AdmittedPerSec, s.AdmittedBytesPerSec = 0, 0
			if measured > 0 {
				s.AdmittedPerSec, s.AdmittedBytesPerSec = ps.allPS, ps.allBS
			}
			s.ResponseP50, s.ResponseP99 = ps.q.P50, ps.q.P99
		}
	}
	return errors.Join(errs...)
}

// sortedReasons returns the keys of the given drop maps in report order:
// known reasons first in KnownReasons order, then others by name.
func sortedReasons(ms ...map[string]int64) []string {
	set := map[string]bool{}
	for _, m := range ms {
		for r, n := range m {
			if n != 0 {
				set[r] = true
			}
		}
	}
	out := slices.Collect(maps.Keys(set))
	slices.SortFunc(out, func(a, b string) int {
		return cmp.Or(cmp.Compare(reasonRank(a), reasonRank(b)), strings.Compare(a, b))
	})
	return out
}
