package cli

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/reports"
)

func TestSummaryNumbers(t *testing.T) {
	// A drop rate too small for three decimals of a percent is still shown
	// as more than zero.
	assert.Equal(t, "0%", pct(0))
	assert.Equal(t, "2.00e-06%", pct(2e-8))
	assert.Equal(t, "0.0401%", pct(0.000401))
	assert.Equal(t, "-", pct(math.NaN()))

	// A share measured by a threshold is shown as written (a fraction) and
	// as a percentage.
	assert.Equal(t, "0.00123 (0.123%)", thresholdValue(reports.Threshold{Value: 0.00123, Unit: reports.UnitFraction}))
	assert.Equal(t, "2.5µs", thresholdValue(reports.Threshold{Value: 2500, Unit: "ns"}))
	assert.Equal(t, "never", thresholdValue(reports.Threshold{Value: math.Inf(1), Unit: "ns"}))
	assert.Equal(t, "not measured", thresholdValue(reports.Threshold{Value: math.NaN(), Unit: reports.UnitFraction}))
}

// Latencies keep three significant digits below 1 ms, as the report shows
// them, and 10 µs from 1 ms up (the README's sample lines).
func TestSummaryLatency(t *testing.T) {
	for ns, want := range map[int64]string{
		-1:          "-",
		0:           "0s",
		7:           "7ns",
		5432:        "5.43µs",
		54321:       "54.3µs",
		174591:      "175µs",
		999_499:     "999µs",
		8_317_790:   "8.32ms",
		28_330_001:  "28.33ms",
		731_914_000: "731.91ms",
	} {
		assert.Equal(t, want, latency(ns), "%d ns", ns)
	}
}

// The top drop reasons are of messages, not of the sessions the server
// ended.
func TestTopReasonsLeaveOutSessions(t *testing.T) {
	p := &reports.Population{Name: "flood"}
	m := p.Kind("move")
	m.Sent = 100
	m.Drop("NotSent", 50)
	m.Drop("Lockout", 5)
	s := p.Kind(reports.SessionKind)
	s.Sent = 60
	s.Drop("Lockout", 60)
	assert.Equal(t, "Lockout 5", topReasons(p, 3), "NotSent is no drop reason")
}

// A population that wrote raw bytes has no drop rate: the table shows "-"
// where 16 drops of 129 writes used to read 12.4%, and a line under it
// says why.
func TestSummaryShowsNoRawDropRate(t *testing.T) {
	r := reports.New(reports.Run{Scenario: "raw", Driver: reports.DriverSim, Duration: 10 * time.Second, Complete: true}, reports.Environment{})
	v, err := r.AddVariant("base", nil)
	require.NoError(t, err)
	h := v.AddPopulation("players", "honest", reports.Honest, 10)
	chat := h.Kind("chat")
	chat.Sent, chat.Accepted = 200, 190
	chat.Drop("ChannelLimit", 10)
	for _, name := range []string{"slow", "garbage"} {
		p := v.AddPopulation(name, "slowloris", reports.Hostile, 4)
		raw := p.Kind(reports.RawKind)
		raw.Sent = 129
		raw.Drop("NotSent", 5)
		raw.Drop("Oversize", 6)
		raw.Drop("Malformed", 5)
	}
	require.NoError(t, r.Finalize())
	var out strings.Builder
	printSummary(&out, r)
	lines := strings.Split(out.String(), "\n")
	row := func(name string) []string {
		for _, l := range lines {
			if f := strings.Fields(l); len(f) > 5 && f[0] == name {
				return f
			}
		}
		t.Fatalf("no row for %s in\n%s", name, out.String())
		return nil
	}
	// scheduled, sent, not sent, accepted, drop rate, loss
	assert.Equal(t, []string{"200", "200", "0", "190", "5%", "5%"}, row("players")[3:9])
	assert.Equal(t, []string{"134", "129", "5", "0", "-", "-"}, row("slow")[3:9])
	assert.Equal(t, []string{"134", "129", "5", "0", "-", "-"}, row("garbage")[3:9])
	assert.Contains(t, out.String(), "\n  no drop rate: slow, garbage (raw bytes: sent counts writes, the server's drops count the frames it read from them)\n")
	assert.NotContains(t, out.String(), "12.4")
}

// A population that sent nothing has no drop rate: "-", as its thresholds
// say "not measured", not "0%".
func TestSummaryNothingSentHasNoDropRate(t *testing.T) {
	r := reports.New(reports.Run{Scenario: "s", Driver: reports.DriverSim, Duration: 10 * time.Second, Complete: true}, reports.Environment{})
	v, err := r.AddVariant("base", nil)
	require.NoError(t, err)
	v.AddPopulation("players", "honest", reports.Honest, 10).Kind("move").Sent = 0
	busy := v.AddPopulation("busy", "honest", reports.Honest, 10).Kind("move")
	busy.Sent, busy.Accepted = 100, 100
	require.NoError(t, r.Finalize())
	var out strings.Builder
	printSummary(&out, r)
	var players, other []string
	for _, l := range strings.Split(out.String(), "\n") {
		switch f := strings.Fields(l); {
		case len(f) > 5 && f[0] == "players":
			players = f
		case len(f) > 5 && f[0] == "busy":
			other = f
		}
	}
	require.NotNil(t, players, out.String())
	assert.Equal(t, []string{"0", "0", "0", "0", "-", "-"}, players[3:9])
	assert.Equal(t, []string{"100", "100", "0", "100", "0%", "0%"}, other[3:9])
	assert.NotContains(t, out.String(), "no drop rate: players", "the raw-bytes note is not about it")
}

// A variant stopped part-way is marked in the comparison, with what it
// measured, so its numbers are not read against complete variants.
func TestSummaryMarksIncompleteVariants(t *testing.T) {
	r := reports.New(reports.Run{Scenario: "s", Driver: reports.DriverLoopback, Duration: 4 * time.Second, Warmup: 400 * time.Millisecond}, reports.Environment{})
	for _, name := range []string{"balanced", "tight"} {
		v, err := r.AddVariant(name, nil)
		require.NoError(t, err)
		k := v.AddPopulation("flood", "tiny-flood", reports.Hostile, 3).Kind("move")
		k.Sent, k.Accepted = 1000, 40
		k.Drop("ChannelLimit", 960)
	}
	r.Variants[1].Stopped = 2437 * time.Millisecond
	require.NoError(t, r.Finalize())
	var out strings.Builder
	printSummary(&out, r)
	assert.Contains(t, out.String(), "tight (INCOMPLETE)")
	assert.Contains(t, out.String(), "INCOMPLETE: tight stopped 2.437s into its 4s and measured 2.037s after the warm-up")
}
