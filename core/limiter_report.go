package core

import (
	"fmt"
	"strings"

	"github.com/sluicedev/sluice/shardmap"
)

// LimiterReport is a snapshot of a Limiter's state, for diagnostics: a plain
// value whose String is a text report and whose JSON encoding (field tags
// below) is the structured one. Counters are cumulative since NewLimiter.
type LimiterReport struct {
	At               int64   `json:"at"`                 // the caller's time of the snapshot
	Capacity         int     `json:"capacity"`           // MaxKeys as configured
	Bound            int     `json:"bound"`              // the most keys tracked at once: MaxKeys
	Rate             float64 `json:"rate"`               // configured tokens per second
	RefillFactor     float64 `json:"refill_factor"`      // current adaptive factor
	EffectiveRate    float64 `json:"effective_rate"`     // Rate·RefillFactor as the fixed-point clock runs it
	Burst            float64 `json:"burst"`              // tokens
	Shards           int     `json:"shards"`             //
	Tracked          int     `json:"tracked"`            // keys tracked now
	PeakTracked      int     `json:"peak_tracked"`       // sum of the shards' peaks (an upper bound of the peak)
	ActiveLockouts   int     `json:"active_lockouts"`    // keys locked out at At
	WarnedKeys       int     `json:"warned_keys"`        // keys inside a soft-violation window at At
	SoftWarnings     uint64  `json:"soft_warnings"`      // soft violations recorded
	LockoutsStarted  uint64  `json:"lockouts_started"`   // lockouts started
	Evicted          uint64  `json:"evicted"`            // idle keys evicted to make room
	Swept            uint64  `json:"swept"`              // idle keys removed by sweeps
	Deleted          uint64  `json:"deleted"`            // keys removed by Delete
	TableFullDenials uint64  `json:"table_full_denials"` // takes denied with TableFull
	TableFullPasses  uint64  `json:"table_full_passes"`  // untracked passes (FailOpen)
	Oversized        uint64  `json:"oversized"`          // takes that could never pass
	Closed           bool    `json:"closed"`             //
}

// ReportAt returns the limiter's state at now. Counters are read without
// locks; ActiveLockouts and WarnedKeys come from a lock-free scan of every
// slot (a cost proportional to MaxKeys: call it for diagnostics, not per
// message).
func (l *Limiter) ReportAt(now int64) LimiterReport {
	c := l.m.Counters()
	r := LimiterReport{
		At:            now,
		Capacity:      l.cfg.MaxKeys,
		Bound:         l.m.MaxKeys(),
		Rate:          l.cfg.Rate,
		RefillFactor:  l.RefillFactor(),
		EffectiveRate: l.lim.EffectiveRate(),
		Burst:         l.lim.Burst(),
		Shards:        l.m.Shards(),
		Tracked:       c.Tracked,
		PeakTracked:   c.PeakTracked,
		Evicted:       c.Evicted,
		Swept:         c.Swept,
		Deleted:       c.Deleted,
		Closed:        l.closed.Load(),
	}
	for i := range l.stripes {
		s := &l.stripes[i]
		r.SoftWarnings += s.soft.Load()
		r.LockoutsStarted += s.lockouts.Load()
		r.TableFullDenials += s.fullDeny.Load()
		r.TableFullPasses += s.fullPass.Load()
		r.Oversized += s.oversized.Load()
	}
	l.m.Range(func(_ uint64, mk shardmap.Mark) bool {
		if _, held := l.m.HeldAt(mk, now); held {
			r.ActiveLockouts++
		} else if l.m.Active(mk, now) {
			r.WarnedKeys++
		}
		return true
	})
	return r
}

// Report is ReportAt on the limiter's clock.
func (l *Limiter) Report() LimiterReport { return l.ReportAt(l.cfg.Clock()) }

// String returns the report as text, one "name: value" line per field.
func (r LimiterReport) String() string {
	var b strings.Builder
	line := func(name string, v any) { fmt.Fprintf(&b, "%-19s %v\n", name+":", v) }
	line("capacity", r.Capacity)
	line("bound", r.Bound)
	line("rate", r.Rate)
	line("refill factor", r.RefillFactor)
	line("effective rate", r.EffectiveRate)
	line("burst", r.Burst)
	line("shards", r.Shards)
	line("tracked", r.Tracked)
	line("peak tracked", r.PeakTracked)
	line("active lockouts", r.ActiveLockouts)
	line("warned keys", r.WarnedKeys)
	line("soft warnings", r.SoftWarnings)
	line("lockouts started", r.LockoutsStarted)
	line("evicted", r.Evicted)
	line("swept", r.Swept)
	line("deleted", r.Deleted)
	line("table-full denials", r.TableFullDenials)
	line("table-full passes", r.TableFullPasses)
	line("oversized", r.Oversized)
	line("closed", r.Closed)
	return b.String()
}
