package reports

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func fleetResults(t *testing.T) *Results {
	r := New(Run{Scenario: "fleet", Seed: 1, Driver: DriverSim, Duration: 12 * time.Second, Warmup: 2 * time.Second, Interval: time.Second, Complete: true}, CaptureEnvironment("test"))
	v, err := r.AddVariant("fleet", nil)
	require.NoError(t, err)
	p := v.AddPopulation("hop", "server-hop", Hostile, 8)
	chat := p.Kind("chat")
	chat.Sent, chat.Accepted = 2000, 500
	chat.Drop("AccountLimit", 1500)
	v.Servers = []GameServer{
		{Name: "server-0", Admitted: map[string]int64{"hop": 470}},
		{Name: "server-1", Admitted: map[string]int64{"hop": 30}},
	}
	require.NoError(t, r.Finalize())
	return r
}

// A variant's game servers survive the file, add up to the fleet-wide
// count, show in the report as rates over the measured time, and are
// checked against the variant's populations.
func TestGameServersRoundTripAndRender(t *testing.T) {
	r := fleetResults(t)
	data, err := Marshal(r)
	require.NoError(t, err)
	back, err := Unmarshal(data)
	require.NoError(t, err)
	v := back.Variants[0]
	require.Equal(t, r.Variants[0].Servers, v.Servers)
	require.Equal(t, map[string]int64{"hop": 500}, v.FleetAdmitted())
	require.Equal(t, 10*time.Second, v.Measured(&back.Run))

	var b bytes.Buffer
	require.NoError(t, WriteHTML(&b, back))
	html := b.String()
	i := strings.Index(html, "<h3>Game servers</h3>")
	require.GreaterOrEqual(t, i, 0)
	table := html[i:]
	for _, want := range []string{">server-0<", ">server-1<", ">fleet-wide<", ">47.0/s<", ">3.0/s<", ">50.0/s<"} {
		require.Contains(t, table[:strings.Index(table, "</table>")], want)
	}

	r.Variants[0].Servers[1].Admitted["nobody"] = 1
	_, err = Marshal(r)
	require.ErrorContains(t, err, `server "server-1": admitted counts population "nobody", which the variant lacks`)
	delete(r.Variants[0].Servers[1].Admitted, "nobody")
	r.Variants[0].Servers[1].Name = "server-0"
	_, err = Marshal(r)
	require.ErrorContains(t, err, `server "server-0" appears twice`)
}

// A run of one server writes no servers field: its files are what they
// were.
func TestOneServerWritesNoServers(t *testing.T) {
	r := fleetResults(t)
	r.Variants[0].Servers = nil
	data, err := Marshal(r)
	require.NoError(t, err)
	require.NotContains(t, string(data), `"servers"`)
}

// Segments of a run of several servers each drove their own: merged, a
// server's counts add up by name.
func TestMergeServersAddsByName(t *testing.T) {
	v := &Variant{}
	mergeServers(v, &Variant{Servers: []GameServer{{Name: "server-0", Admitted: map[string]int64{"hop": 3}}, {Name: "server-1", Admitted: map[string]int64{"hop": 1}}}})
	mergeServers(v, &Variant{Servers: []GameServer{{Name: "server-1", Admitted: map[string]int64{"hop": 2, "honest": 5}}}})
	require.Equal(t, []GameServer{
		{Name: "server-0", Admitted: map[string]int64{"hop": 3}},
		{Name: "server-1", Admitted: map[string]int64{"hop": 3, "honest": 5}},
	}, v.Servers)
}
