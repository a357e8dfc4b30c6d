package reports

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hopResults is a fleet run's shape: the same server-hopping attacker
// against a limit kept per process and one shared by the fleet. The fleet
// admits a quarter of the chats, and throttled, the attacker reconnects
// more: its accepted hellos outnumber its accepted chats, and all of its
// accepted messages together are about the same in both variants.
func hopResults(t *testing.T) *Results {
	t.Helper()
	r := New(Run{Scenario: "hop", Driver: DriverSim, Duration: 20 * time.Second, Warmup: 2 * time.Second, Complete: true}, Environment{})
	for _, c := range []struct {
		name          string
		chats, hellos int64
	}{{"per-process", 3598, 3568}, {"fleet", 900, 6233}} {
		v, err := r.AddVariant(c.name, nil)
		require.NoError(t, err)
		h := v.AddPopulation("honest", "honest", Honest, 10)
		k := h.Kind("move")
		k.Sent, k.Accepted = 1800, 1800
		hop := v.AddPopulation("hop", "server-hop", Hostile, 4)
		chat := hop.Kind("chat")
		chat.Sent, chat.Accepted, chat.AcceptedBytes = 8000, c.chats, 40*c.chats
		chat.Drop("ChannelLimit", chat.Sent-c.chats)
		hello := hop.Kind(HelloKind)
		hello.Sent, hello.Accepted, hello.AcceptedBytes = c.hellos, c.hellos, 20*c.hellos
	}
	require.NoError(t, r.Finalize())
	return r
}

// The comparison, the headline and the verdict judge a hostile population
// by the game messages it got through, not by the sessions it opened: the
// fleet variant admits a quarter of the chats, and wins, though it
// accepted more hellos.
func TestAdmittedCountsGameMessagesNotHandshakes(t *testing.T) {
	r := hopResults(t)
	c := comparisonOf(t, r)
	for _, g := range []string{"all hostile", "hop (hostile)"} {
		row := findRow(t, c.Rows, g, "admitted game messages")
		assert.Equal(t, "200/s", row.Cells[0].Value, g)
		assert.Equal(t, "50/s", row.Cells[1].Value, g)
		assert.Equal(t, "better", row.Cells[1].Class, g)
		// The handshakes stay visible, and judge nothing.
		hs := findRow(t, c.Rows, g, "admitted handshakes")
		assert.Equal(t, "198/s", hs.Cells[0].Value, g)
		assert.Equal(t, "346/s", hs.Cells[1].Value, g)
		assert.Empty(t, hs.Cells[1].Class, g)
	}
	lines, err := Verdict(r)
	require.NoError(t, err)
	text := strings.Join(lines, "\n")
	assert.Contains(t, text, "Least hostile traffic admitted: fleet, 50/s of hostile game messages, against per-process 200/s (4× more).")
	assert.NotContains(t, text, "Least hostile traffic admitted: per-process")
	assert.Contains(t, text, "fleet is best on both")
	// The summary keeps its own measure: every accepted message, hellos
	// too, as a threshold's admitted_per_s reads it.
	hop := r.Variant("fleet").Population("hop")
	assert.InDelta(t, float64(900+6233)/18, hop.Summary.AdmittedPerSec, 1e-9)
	n, b := hop.GameAccepted()
	assert.Equal(t, [2]int64{900, 40 * 900}, [2]int64{n, b})
}

// With no measured window the page falls back on the summary's rate and
// takes the game messages' share of it.
func TestAdmittedGameShareWithoutWindow(t *testing.T) {
	r := hopResults(t)
	p := r.Variant("fleet").Population("hop")
	p.Summary.AdmittedPerSec = 7133
	ps, err := computePop(p, 0)
	require.NoError(t, err)
	assert.InDelta(t, 900, ps.admittedPS, 1e-9)
	assert.InDelta(t, 6233, ps.handshakesPS, 1e-9)
}
