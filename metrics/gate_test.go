package metrics

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/core"
)

const policyYAML = `
channels:
  - {name: move, class: input, rate: 20, burst: 20, maxSize: 64}
  - {name: chat, class: request, rate: 1, burst: 2}
transport:
  frames: {rate: 100, burst: 50}
queue: {commands: 1, replayWindow: 1}
tables: {sessions: %d, accounts: %d, addresses: %d, matches: 16}
address: {rate: 1000, burst: 1000}
`

func testGate(t testing.TB, sessions int) *core.Gate {
	t.Helper()
	n := max(sessions, 16)
	p, err := core.DecodePolicyYAML([]byte(fmt.Sprintf(policyYAML, n, n, n)))
	require.NoError(t, err)
	g, err := core.NewGate(p, 0)
	require.NoError(t, err)
	return g
}

// addr returns the i-th distinct IPv4 source.
func addr(i int) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 1000)
}

// traffic opens n sessions, each from its own address and account, and
// sends each a mix that reaches every kind of counter: accepts, a channel
// limit, oversize frames, a frame flood, chat requests; then Steps.
func traffic(t testing.TB, g *core.Gate, n int, now int64) {
	t.Helper()
	for i := range n {
		h, v := g.Open(addr(i), now)
		require.True(t, v.OK(), "open %d: %v", i, v)
		require.True(t, g.Authenticate(h, uint64(i+1), now).OK())
		g.Check(core.Message{Session: h, Kind: 0, Size: 10}, now)
		if i%2 == 0 {
			g.Check(core.Message{Session: h, Kind: 0, Size: 1000}, now) // Oversize
		}
		if i%5 == 0 {
			for range 60 { // past the frame burst: FrameLimit, and strikes
				g.Check(core.Message{Session: h, Kind: 0, Size: 10}, now)
			}
		}
		g.Check(core.Message{Session: h, Kind: 1, Request: 1, Size: 10}, now)
	}
	g.Check(core.Message{Session: 12345, Kind: 0, Size: 10}, now) // NoSession
	g.Step(now)
}

func gather(t testing.TB, c prometheus.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	fams, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// value returns the value of the series of fam with exactly the labels
// given as name, value pairs.
func value(t testing.TB, fams map[string]*dto.MetricFamily, fam string, labels ...string) float64 {
	t.Helper()
	f := fams[fam]
	require.NotNil(t, f, "no family %s", fam)
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, lp := range m.GetLabel() {
			got[lp.GetName()] = lp.GetValue()
		}
		want := map[string]string{}
		for i := 0; i+1 < len(labels); i += 2 {
			want[labels[i]] = labels[i+1]
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			continue
		}
		if c := m.GetCounter(); c != nil {
			return c.GetValue()
		}
		return m.GetGauge().GetValue()
	}
	t.Fatalf("no series %s%v", fam, labels)
	return 0
}

// Every series equals the gate's own counters: each decision row and
// reason, the actions, the stage entries and lockouts, the tables; and the
// transport floods by reason sum to the gate's totals after a Step.
func TestGateCollectorEqualsGateStats(t *testing.T) {
	g := testGate(t, 64)
	c := NewGateCollector(g, GateCollectorOptions{Now: func() int64 { return 0 }})
	defer c.Close()
	traffic(t, g, 40, 0)
	fams := gather(t, c)
	st := g.Stats()
	require.Positive(t, st.TransportFloods)
	require.Positive(t, st.Lockouts+st.StageRises[core.StageWarn])
	for _, k := range st.Kinds {
		for _, r := range core.Reasons() {
			assert.Equal(t, float64(k.Counts[r]), value(t, fams, "sluice_gate_messages_total", "kind", k.Name, "reason", r.String()), "%s %s", k.Name, r)
		}
	}
	for _, a := range actions {
		assert.Equal(t, float64(st.Actions[a]), value(t, fams, "sluice_gate_actions_total", "action", a.String()))
	}
	for _, s := range stages {
		assert.Equal(t, float64(st.StageRises[s]), value(t, fams, "sluice_gate_strike_stage_entries_total", "stage", s.String()))
	}
	assert.Equal(t, float64(st.Lockouts), value(t, fams, "sluice_gate_lockouts_total"))
	assert.Equal(t, float64(st.Shadowed), value(t, fams, "sluice_gate_shadowed_total"))
	assert.Equal(t, float64(st.ObserverPanics), value(t, fams, "sluice_gate_observer_panics_total"))
	var floods, bytes float64
	for _, r := range floodReasons {
		floods += value(t, fams, "sluice_gate_transport_floods_total", "reason", r.String())
		bytes += value(t, fams, "sluice_gate_transport_flood_bytes_total", "reason", r.String())
	}
	assert.Equal(t, float64(st.TransportFloods), floods)
	assert.Equal(t, float64(st.TransportFloodBytes), bytes)
	assert.Equal(t, 20.0, value(t, fams, "sluice_gate_transport_floods_total", "reason", "Oversize"), "every other session sent one")
	assert.Equal(t, 20.0*1000, value(t, fams, "sluice_gate_transport_flood_bytes_total", "reason", "Oversize"))
	for _, tb := range g.Tables(0) {
		assert.Equal(t, float64(tb.Tracked), value(t, fams, "sluice_gate_table_tracked_entries", "table", tb.Name), tb.Name)
		assert.Equal(t, float64(tb.Capacity), value(t, fams, "sluice_gate_table_capacity_entries", "table", tb.Name), tb.Name)
		assert.Equal(t, float64(tb.ActiveLockouts), value(t, fams, "sluice_gate_table_active_lockouts", "table", tb.Name), tb.Name)
	}
	assert.Equal(t, 40.0, value(t, fams, "sluice_gate_table_tracked_entries", "table", "sessions"))
	assert.Equal(t, 64.0, value(t, fams, "sluice_gate_table_capacity_entries", "table", "sessions"))
}

// The exposition passes client_golang's lint (promtool's rules).
func TestGateCollectorLint(t *testing.T) {
	g := testGate(t, 16)
	c := NewGateCollector(g, GateCollectorOptions{})
	defer c.Close()
	traffic(t, g, 4, 0)
	problems, err := testutil.CollectAndLint(c)
	require.NoError(t, err)
	assert.Empty(t, problems)
	l, err := core.NewLimiter(core.LimiterConfig{Rate: 10, MaxKeys: 100})
	require.NoError(t, err)
	problems, err = testutil.CollectAndLint(NewLimiterCollector(l, LimiterCollectorOptions{}))
	require.NoError(t, err)
	assert.Empty(t, problems)
}

// seriesOf returns the number of series the collector exposes and fails
// on any label value that names a session, account or address.
func seriesOf(t *testing.T, c prometheus.Collector) int {
	t.Helper()
	n := 0
	for _, f := range gather(t, c) {
		for _, m := range f.GetMetric() {
			n++
			for _, lp := range m.GetLabel() {
				v := lp.GetValue()
				require.False(t, strings.HasPrefix(v, "10."), "%s has an address label %q", f.GetName(), v)
				_, err := fmt.Sscan(v, new(uint64))
				require.Error(t, err, "%s has a numeric label %q", f.GetName(), v)
			}
		}
	}
	return n
}

// A gate that has seen 100,000 sessions (each its own address and account)
// exposes exactly the series of one that has seen 10.
func TestGateCollectorCardinality(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("opens 100,000 sessions (run without -short and -race)")
	}
	count := func(n int) int {
		g := testGate(t, n)
		c := NewGateCollector(g, GateCollectorOptions{Now: func() int64 { return 0 }})
		defer c.Close()
		traffic(t, g, n, 0)
		st := g.Stats()
		require.GreaterOrEqual(t, st.Count("move", core.None), uint64(n), "every session's first move was accepted")
		return seriesOf(t, c)
	}
	small := count(10)
	assert.Equal(t, small, count(100_000))
	assert.Positive(t, small)
}

// The limiter collector sends each field of the limiter's report.
func TestLimiterCollectorEqualsReport(t *testing.T) {
	var now int64
	l, err := core.NewLimiter(core.LimiterConfig{Rate: 1, Burst: 2, MaxKeys: 4, Clock: func() int64 { return now }})
	require.NoError(t, err)
	for k := range uint64(6) {
		for range 3 {
			l.TakeAt(k, 0, 1)
		}
	}
	l.TakeAt(1, 0, 5) // oversized
	l.Delete(2)
	fams := gather(t, NewLimiterCollector(l, LimiterCollectorOptions{}))
	r := l.ReportAt(0)
	require.Positive(t, r.TableFullDenials)
	for name, want := range map[string]float64{
		"capacity_keys": float64(r.Capacity), "bound_keys": float64(r.Bound), "rate_tokens_per_second": r.Rate,
		"refill_factor_ratio": r.RefillFactor, "effective_rate_tokens_per_second": r.EffectiveRate, "burst_tokens": r.Burst,
		"shards": float64(r.Shards), "tracked_keys": float64(r.Tracked), "peak_tracked_keys": float64(r.PeakTracked),
		"active_lockouts": float64(r.ActiveLockouts), "warned_keys": float64(r.WarnedKeys),
		"soft_violations_total": float64(r.SoftWarnings), "lockouts_total": float64(r.LockoutsStarted),
		"evicted_keys_total": float64(r.Evicted), "swept_keys_total": float64(r.Swept), "deleted_keys_total": float64(r.Deleted),
		"table_full_denials_total": float64(r.TableFullDenials), "table_full_passes_total": float64(r.TableFullPasses),
		"oversized_takes_total": float64(r.Oversized), "closed": 0,
	} {
		assert.Equal(t, want, value(t, fams, "sluice_limiter_"+name), name)
	}
	assert.Len(t, fams, 20)
	require.NoError(t, l.Close())
	assert.Equal(t, 1.0, value(t, gather(t, NewLimiterCollector(l, LimiterCollectorOptions{})), "sluice_limiter_closed"))
}

// An attached collector and security log add nothing to an accepted
// Check: it still allocates nothing.
func TestCheckAllocatesNothingWithCollectorAttached(t *testing.T) {
	g := testGate(t, 16)
	c := NewGateCollector(g, GateCollectorOptions{})
	defer c.Close()
	l := NewSecurityLog(g, slog.NewTextHandler(io.Discard, nil), SecurityLogOptions{})
	defer l.Close(context.Background())
	gather(t, c)
	h, v := g.Open(addr(1), 0)
	require.True(t, v.OK())
	require.True(t, g.Authenticate(h, 1, 0).OK())
	now := int64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		now += int64(1e8)
		if v := g.Check(core.Message{Session: h, Kind: 0, Size: 10}, now); !v.OK() {
			t.Fatalf("check: %v", v)
		}
	})
	assert.Zero(t, allocs)
}
