package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicedev/sluice/core"
)

// LimiterCollector is a prometheus.Collector over one core.Limiter: each
// scrape takes the limiter's report (core.Limiter.ReportAt, a lock-free
// scan of its table, proportional to its capacity) and sends one series per
// field. No series is labelled by key.
//
// Make one with NewLimiterCollector; the zero value is not usable. It is
// safe for concurrent use beside the limiter's takes.
type LimiterCollector struct {
	l     *core.Limiter
	now   func() int64
	descs []limiterField
}

// limiterField is one field of a LimiterReport as a series.
type limiterField struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(*core.LimiterReport) float64
}

// LimiterCollectorOptions configure a LimiterCollector. The zero value is
// the default.
type LimiterCollectorOptions struct {
	// Now is the limiter's clock, the time a scrape asks which keys are
	// locked out or warned; default the limiter's own (LimiterConfig.Clock).
	Now func() int64
	// ConstLabels are added to every series: give each limiter of a
	// registry its own, e.g. {"limiter": "login"}.
	ConstLabels prometheus.Labels
}

// NewLimiterCollector returns a collector over l.
func NewLimiterCollector(l *core.Limiter, opts LimiterCollectorOptions) *LimiterCollector {
	c := &LimiterCollector{l: l, now: opts.Now}
	if c.now == nil {
		c.now = l.Config().Clock
	}
	f := func(name, help string, kind prometheus.ValueType, v func(*core.LimiterReport) float64) {
		c.descs = append(c.descs, limiterField{prometheus.NewDesc("sluice_limiter_"+name, help, nil, opts.ConstLabels), kind, v})
	}
	g, k := prometheus.GaugeValue, prometheus.CounterValue
	f("capacity_keys", "Keys the limiter was configured to hold (MaxKeys).", g, func(r *core.LimiterReport) float64 { return float64(r.Capacity) })
	f("bound_keys", "The most keys the limiter tracks at once.", g, func(r *core.LimiterReport) float64 { return float64(r.Bound) })
	f("rate_tokens_per_second", "Configured refill rate of every key's bucket.", g, func(r *core.LimiterReport) float64 { return r.Rate })
	f("refill_factor_ratio", "Current adaptive refill factor.", g, func(r *core.LimiterReport) float64 { return r.RefillFactor })
	f("effective_rate_tokens_per_second", "Refill rate times the refill factor, as the fixed-point clock runs it.", g, func(r *core.LimiterReport) float64 { return r.EffectiveRate })
	f("burst_tokens", "Burst (capacity) of every key's bucket.", g, func(r *core.LimiterReport) float64 { return r.Burst })
	f("shards", "Shards of the limiter's table.", g, func(r *core.LimiterReport) float64 { return float64(r.Shards) })
	f("tracked_keys", "Keys tracked now.", g, func(r *core.LimiterReport) float64 { return float64(r.Tracked) })
	f("peak_tracked_keys", "Sum of the shards' peaks of tracked keys (an upper bound of the peak).", g, func(r *core.LimiterReport) float64 { return float64(r.PeakTracked) })
	f("active_lockouts", "Keys locked out now.", g, func(r *core.LimiterReport) float64 { return float64(r.ActiveLockouts) })
	f("warned_keys", "Keys inside a soft-violation window now.", g, func(r *core.LimiterReport) float64 { return float64(r.WarnedKeys) })
	f("soft_violations_total", "Soft violations (ordinary denials) recorded.", k, func(r *core.LimiterReport) float64 { return float64(r.SoftWarnings) })
	f("lockouts_total", "Lockouts started.", k, func(r *core.LimiterReport) float64 { return float64(r.LockoutsStarted) })
	f("evicted_keys_total", "Idle keys evicted to make room.", k, func(r *core.LimiterReport) float64 { return float64(r.Evicted) })
	f("swept_keys_total", "Idle keys removed by sweeps.", k, func(r *core.LimiterReport) float64 { return float64(r.Swept) })
	f("deleted_keys_total", "Keys removed by Delete.", k, func(r *core.LimiterReport) float64 { return float64(r.Deleted) })
	f("table_full_denials_total", "Takes denied with TableFull.", k, func(r *core.LimiterReport) float64 { return float64(r.TableFullDenials) })
	f("table_full_passes_total", "Takes of untracked keys let through by a fail-open table.", k, func(r *core.LimiterReport) float64 { return float64(r.TableFullPasses) })
	f("oversized_takes_total", "Takes that could never pass (more tokens than the burst).", k, func(r *core.LimiterReport) float64 { return float64(r.Oversized) })
	f("closed", "1 once the limiter is closed (every take fails closed), else 0.", g, func(r *core.LimiterReport) float64 {
		if r.Closed {
			return 1
		}
		return 0
	})
	return c
}

// Describe sends every descriptor of the collector.
func (c *LimiterCollector) Describe(ch chan<- *prometheus.Desc) {
	for i := range c.descs {
		ch <- c.descs[i].desc
	}
}

// Collect takes the limiter's report and sends one metric per field.
func (c *LimiterCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.l.ReportAt(c.now())
	for i := range c.descs {
		f := &c.descs[i]
		ch <- prometheus.MustNewConstMetric(f.desc, f.kind, f.value(&r))
	}
}
