package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicedev/sluice/atomicbucket"
	"github.com/sluicedev/sluice/core"
)

// GateCollector is a prometheus.Collector over one core.Gate. A scrape
// reads the gate's striped counters (Gate.Stats) and its tables
// (Gate.Tables) at that moment; the only state the collector keeps itself
// is the per-reason split of the transport floods, summed from the flood
// reports the gate emits on Step and Close (see NewGateCollector).
//
// Every label takes values from a set fixed when the gate is built: kind
// (the policy's channels and the rows "(unknown)", "(transport)" and
// "(session)"), reason, action, stage and table. A gate with 100,000
// sessions exposes the same series as one with 10.
//
// Make one with NewGateCollector; the zero value is not usable. It is safe
// for concurrent use: scrapes may run at any time beside traffic, each a
// consistent read of every counter but not an atomic cut across them.
type GateCollector struct {
	g      *core.Gate
	now    func() int64
	remove func()

	floods     [core.NumReasons]atomic.Uint64
	floodBytes [core.NumReasons]atomic.Uint64

	messages, actions, shadowed, panics    *prometheus.Desc
	transportFloods, transportFloodBytes   *prometheus.Desc
	stageEntries, lockouts, shadowMode     *prometheus.Desc
	tracked, capacity, activeLockouts      *prometheus.Desc
	tableFull, tableEvictions, tableSweeps *prometheus.Desc
}

// GateCollectorOptions configure a GateCollector. The zero value is the
// default.
type GateCollectorOptions struct {
	// Now is the gate's clock (nanoseconds, the clock every Check is
	// given): the time at which a scrape asks which lockouts are active.
	// Default atomicbucket.Nanotime, the reference server's clock.
	Now func() int64
	// ConstLabels are added to every series, e.g. {"server": "eu-1"} when
	// several gates share one registry.
	ConstLabels prometheus.Labels
}

// floodReasons are the reasons the gate coalesces into FloodEvents.
var floodReasons = []core.Reason{core.ByteLimit, core.FrameLimit, core.Oversize, core.Malformed, core.Duplicate, core.Replay}

// stages are the strike stages a score can rise into.
var stages = []core.StrikeStage{core.StageWarn, core.StageShed, core.StageDrop, core.StageDisconnect, core.StageLockout}

var actions = []core.Action{core.Accept, core.Drop, core.Reject, core.Disconnect}

// NewGateCollector returns a collector over g. It registers a Flood
// observer on g, which sums each report's count and bytes by reason (an
// atomic add per report, on the Step that emits it, never on Check): the
// transport-flood series therefore count the drops reported since the
// collector was made, and a drop shows in them at the first Step after it.
// Make the collector beside the gate, before traffic, and Close it when
// done to remove the observer.
func NewGateCollector(g *core.Gate, opts GateCollectorOptions) *GateCollector {
	c := &GateCollector{g: g, now: opts.Now}
	if c.now == nil {
		c.now = atomicbucket.Nanotime
	}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("sluice_gate_"+name, help, labels, opts.ConstLabels)
	}
	c.messages = d("messages_total", "Decisions of the gate by channel (kind) and reason; reason None counts accepted messages. Kind (unknown) is frames naming no channel, (transport) the byte charges of whole reads, (session) opens and authentications.", "kind", "reason")
	c.actions = d("actions_total", "Decisions of the gate by the action decided (in shadow mode, the action that would have been taken); action Disconnect counts disconnects.", "action")
	c.shadowed = d("shadowed_total", "Messages accepted only because the gate runs in shadow mode.")
	c.panics = d("observer_panics_total", "Observer callbacks that panicked (recovered; the decision stood).")
	c.transportFloods = d("transport_floods_total", "Transport-level drops of sessions by reason, from the gate's coalesced flood reports since the collector was attached.", "reason")
	c.transportFloodBytes = d("transport_flood_bytes_total", "Bytes of the transport-level drops of sessions by reason, from the gate's coalesced flood reports since the collector was attached.", "reason")
	c.stageEntries = d("strike_stage_entries_total", "Rises of a strike score into each stage of the ladder.", "stage")
	c.lockouts = d("lockouts_total", "Lockouts imposed by the strike ladder.")
	c.shadowMode = d("shadow_mode", "1 when the gate runs in shadow mode (it decides and counts but accepts everything), else 0.")
	c.tracked = d("table_tracked_entries", "Entries held now in each of the gate's bounded tables.", "table")
	c.capacity = d("table_capacity_entries", "The most entries each of the gate's bounded tables holds.", "table")
	c.activeLockouts = d("table_active_lockouts", "Entries of each table locked out now.", "table")
	c.tableFull = d("table_full_total", "Takes of a keyed layer refused because its table was full and nothing could be evicted (refusals of the gate's own tables are sluice_gate_messages_total{kind=\"(session)\",reason=\"TableFull\"}).", "table")
	c.tableEvictions = d("table_evictions_total", "Idle keys a keyed layer evicted to make room.", "table")
	c.tableSweeps = d("table_swept_total", "Idle keys a keyed layer's sweeps removed.", "table")
	c.remove = g.Observe(core.GateObserver{Flood: c.flood})
	return c
}

func (c *GateCollector) flood(e core.FloodEvent) {
	if !e.Reason.Valid() {
		return
	}
	c.floods[e.Reason].Add(e.Count)
	c.floodBytes[e.Reason].Add(e.Bytes)
}

// Close removes the collector's observer from the gate; the collector
// still answers scrapes, its flood series frozen.
func (c *GateCollector) Close() { c.remove() }

// Describe sends every descriptor of the collector.
func (c *GateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		c.messages, c.actions, c.shadowed, c.panics, c.transportFloods, c.transportFloodBytes,
		c.stageEntries, c.lockouts, c.shadowMode, c.tracked, c.capacity, c.activeLockouts,
		c.tableFull, c.tableEvictions, c.tableSweeps,
	} {
		ch <- d
	}
}

// Collect reads the gate's counters and tables and sends one metric per
// series. Every label combination is sent, zeros included, so that a rate
// over a series that starts counting is never missing its first step.
func (c *GateCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.g.Stats()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for i := range st.Kinds {
		k := &st.Kinds[i]
		for r := range core.NumReasons {
			counter(c.messages, k.Counts[r], k.Name, core.Reason(r).String())
		}
	}
	for _, a := range actions {
		counter(c.actions, st.Actions[a], a.String())
	}
	counter(c.shadowed, st.Shadowed)
	counter(c.panics, st.ObserverPanics)
	for _, r := range floodReasons {
		counter(c.transportFloods, c.floods[r].Load(), r.String())
		counter(c.transportFloodBytes, c.floodBytes[r].Load(), r.String())
	}
	for _, s := range stages {
		counter(c.stageEntries, st.StageRises[s], s.String())
	}
	counter(c.lockouts, st.Lockouts)
	shadow := 0.0
	if st.Shadow {
		shadow = 1
	}
	gauge(c.shadowMode, shadow)
	for _, t := range c.g.Tables(c.now()) {
		gauge(c.tracked, float64(t.Tracked), t.Name)
		gauge(c.capacity, float64(t.Capacity), t.Name)
		gauge(c.activeLockouts, float64(t.ActiveLockouts), t.Name)
		if t.Name == "sessions" || t.Name == "accounts" || t.Name == "addresses" {
			continue // the gate's own tables: their refusals are messages_total rows
		}
		counter(c.tableFull, t.TableFull, t.Name)
		counter(c.tableEvictions, t.Evicted, t.Name)
		counter(c.tableSweeps, t.Swept, t.Name)
	}
}
