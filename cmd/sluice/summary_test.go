package main

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

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
	assert.Equal(t, "NotSent 50, Lockout 5", topReasons(p, 3))
}
