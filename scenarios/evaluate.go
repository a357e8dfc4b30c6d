package scenarios

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/reports"
)

// Evaluate computes every threshold on variant v of results r (whose
// Finalize has run) and records them on v. It returns whether all held. A
// threshold that names a kind no population sent, or a latency nothing
// measured, fails with a NaN value rather than passing vacuously.
func (s *Scenario) Evaluate(r *reports.Results, v *reports.Variant) bool {
	v.Thresholds = v.Thresholds[:0]
	all := true
	v.NotApplicable = v.NotApplicable[:0]
	for _, th := range s.thresholds {
		_, kinds := selected(v, th.Population, th.Kind)
		if why := unmeasuredOnTarget(r, th.Metric, unknown(kinds)); why != "" {
			v.NotApplicable = append(v.NotApplicable, th.Text+": "+why)
			continue
		}
		val := MetricValue(r, v, th.Population, th.Kind, th.Metric)
		pass := !math.IsNaN(val) && th.Holds(val)
		v.AddThreshold(th.Text, val, th.Unit, pass)
		all = all && pass
	}
	return all
}

// MetricValue returns one metric (see Metrics) of population pop ("all" for
// every population) and kind ("" for every kind but the session row, which
// counts sessions the server ended, not messages) in variant v, or NaN when
// it cannot be computed: a share (drop_rate, limited_rate) over raw bytes
// written, which the raw row counts in writes and its drops in frames, has
// none.
func MetricValue(r *reports.Results, v *reports.Variant, pop, kind, metric string) float64 {
	pops, kinds := selected(v, pop, kind)
	if len(pops) == 0 || kind != "" && populationMetrics[metric] || kind == reports.SessionKind && !sessionMetric(metric) {
		return math.NaN()
	}
	if kind == reports.SessionKind && len(kinds) == 0 {
		// No session row: no population named ended a session, which
		// is 0 of every count, not a kind nobody sent.
		kinds = []*reports.KindStats{{Kind: reports.SessionKind}}
	}
	if kind != "" && len(kinds) == 0 {
		// A kind nobody sent (or a misspelt one) has no counts: 0 would
		// let "hostile.chta.admitted_per_s <= 5" pass vacuously.
		return math.NaN()
	}
	if fractionMetrics[metric] && (kind == reports.RawKind ||
		kind == "" && slices.ContainsFunc(pops, func(p *reports.Population) bool { return p.NoDropRate() != "" })) {
		// A share over raw bytes, which a population with raw writes has
		// none of and the raw row never has (see reports.RawKind); a
		// scenario refuses such a threshold before it runs.
		return math.NaN()
	}
	if unknown(kinds) != 0 && fateMetrics[metric] {
		// What became of inputs sent to a server the run did not read is
		// not known (reports.KindStats.Unknown).
		return math.NaN()
	}
	// A threshold counts as results of schema version 5 did, so that no
	// threshold reads differently: sent is what was scheduled, and a
	// message never sent (its connection was down) is among the dropped.
	// drop_rate is then the report's loss rate.
	var sent, accepted, dropped, acceptedBytes int64
	for _, k := range kinds {
		sent += k.Sent + k.NotSent
		accepted += k.Accepted
		dropped += k.Dropped() + k.NotSent
		acceptedBytes += k.AcceptedBytes
	}
	secs := r.MeasuredOf(v).Seconds()
	switch metric {
	case "sent":
		return float64(sent)
	case "accepted":
		return float64(accepted)
	case "dropped":
		return float64(dropped)
	case "drop_rate":
		if sent == 0 {
			return math.NaN()
		}
		return float64(dropped) / float64(sent)
	case "limited_rate":
		if sent == 0 {
			return math.NaN()
		}
		var limited int64
		for _, k := range kinds {
			for reason, n := range k.Drops {
				if r, err := core.ParseReason(reason); err == nil && r != core.None {
					limited += n
				}
			}
		}
		return float64(limited) / float64(sent)
	case "admitted_per_s":
		return float64(accepted) / secs
	case "accepted_per_client":
		clients := 0
		for _, p := range pops {
			clients += p.Clients
		}
		if clients == 0 {
			return math.NaN()
		}
		return float64(accepted) / float64(clients)
	case "admitted_bytes_per_s":
		return float64(acceptedBytes) / secs
	case "p50", "p90", "p99", "p999", "max":
		return quantile(merged(kinds, reports.ResponseTime), metric)
	case "send_lag_p99":
		return quantile(merged(kinds, reports.SendLag), "p99")
	case "false_disconnects", "lockouts":
		var n int64
		measured := false
		for _, p := range pops {
			// Counted for honest clients only (for hostile ones, being
			// cut off is the point: see cutoff_*). A named hostile
			// population has no value rather than a 0 that would pass.
			if p.Role != reports.Honest {
				continue
			}
			measured = true
			if metric == "false_disconnects" {
				n += p.Summary.FalseDisconnects
			} else {
				n += p.Summary.FalseLockouts
			}
		}
		if !measured {
			return math.NaN()
		}
		return float64(n)
	case "cutoff_p50", "cutoff_max":
		// Over every client of the populations: one never cut off counts
		// as never (+Inf), so a policy that catches one flooder of ten
		// does not pass "cutoff_max < 2s".
		var worst time.Duration
		found := false
		for _, p := range pops {
			c := p.Summary.CutOff
			if c == nil || c.Of == 0 {
				continue
			}
			d := c.AllP50
			if metric == "cutoff_max" {
				d = c.MaxAll()
			}
			worst = max(worst, d)
			found = true
		}
		if !found {
			// No hostile population named: cutting an honest client off
			// is false_disconnects' business, and a value here would let
			// "laggy.cutoff_max > 19s" pass on nothing measured.
			return math.NaN()
		}
		if worst == reports.Never {
			return math.Inf(1) // a client never cut off
		}
		return float64(worst)
	}
	if reason, ok := strings.CutPrefix(metric, "drops."); ok {
		var n int64
		for _, k := range kinds {
			n += k.Drops[reason]
			if reason == reports.NotSentReason {
				n += k.NotSent
			}
		}
		return float64(n)
	}
	return math.NaN()
}

// merged merges metric m of kinds as the report does
// (reports.MergeHistograms: a range wide enough for every input), or
// returns nil (and the threshold fails with NaN) if one cannot be decoded:
// a percentile of part of the data would pass for the whole.
func merged(kinds []*reports.KindStats, m reports.Metric) *hdrhistogram.Histogram {
	var hs []*reports.Histogram
	for _, k := range kinds {
		if h := k.Histogram(m); h != nil && h.Count != 0 {
			hs = append(hs, h)
		}
	}
	out, err := reports.MergeHistograms(hs...)
	if err != nil {
		return nil
	}
	return out
}

// quantile picks one of reports.Percentiles, so a threshold measures the
// same p99 the results and the report show.
func quantile(h *hdrhistogram.Histogram, metric string) float64 {
	if h == nil || h.TotalCount() == 0 {
		return math.NaN()
	}
	q := reports.Percentiles(h)
	switch metric {
	case "p50":
		return float64(q.P50)
	case "p90":
		return float64(q.P90)
	case "p99":
		return float64(q.P99)
	case "p999":
		return float64(q.P999)
	case "max":
		return float64(q.Max)
	}
	panic(fmt.Sprintf("scenarios: no quantile %q", metric))
}

// selected returns the populations of v a threshold names (pop, or "all")
// and their kinds named (kind, or "" for every kind but the session row).
func selected(v *reports.Variant, pop, kind string) (pops []*reports.Population, kinds []*reports.KindStats) {
	for _, p := range v.Populations {
		if pop == "all" || p.Name == pop {
			pops = append(pops, p)
		}
	}
	for _, p := range pops {
		if kind == "" { // every kind of message
			kinds = slices.AppendSeq(kinds, p.MessageKinds())
			continue
		}
		for _, k := range p.Kinds { // the one named, the session row included
			if k.Kind == kind {
				kinds = append(kinds, k)
			}
		}
	}
	return pops, kinds
}

// unknown is the number of messages of kinds whose fate is unknown.
func unknown(kinds []*reports.KindStats) (n int64) {
	for _, k := range kinds {
		n += k.Unknown
	}
	return n
}
