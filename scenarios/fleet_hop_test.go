package scenarios

import (
	"testing"
	"time"

	"github.com/sluicedev/sluice/internal/redisproc"
	"github.com/stretchr/testify/require"
)

// fleet-hop on the loopback driver: four reference servers on loopback
// ports, the fleet variant's account layers on a redis-server the run
// starts (redis: start). It meets the outcomes it meets in sim: the
// fleet holds the hopper to its thresholds, per-process limits fail them,
// and both agree with sim on what each server admitted within a share.
func TestFleetHopOnLoopbackAgreesWithSim(t *testing.T) {
	if testing.Short() {
		t.Skip("runs fleet-hop twice over loopback sockets and a real Redis")
	}
	redisproc.Need(t, "fleet-hop on loopback")
	s, err := Load("fleet-hop.yaml")
	require.NoError(t, err)
	opt := Options{Duration: 8 * time.Second}
	so, lo := runSimAndLoopback(t, s, opt)
	// What the variants show, whatever the machine's load: the fleet holds
	// the hopper to the bound the thresholds state (59.4 a second), per
	// process limits admit several times that.
	valid := true
	for _, out := range []*Outcome{lo, so} {
		drv := out.Results.Run.Driver
		fleet, local := out.Results.Variant("fleet"), out.Results.Variant("per-process")
		require.NotNil(t, fleet)
		require.NotNil(t, local)
		for _, v := range out.Results.Variants {
			require.Len(t, v.Servers, 4, "%s variant %s", drv, v.Name)
			for _, th := range v.Thresholds {
				t.Logf("%s %s: %v %s (%v)", drv, v.Name, th.Pass, th.Expr, th.Value)
			}
			if len(v.Invalid) > 0 {
				t.Logf("%s %s: invalid, outcomes not compared: %v", drv, v.Name, v.Invalid)
				valid = false
			}
		}
		secs := fleet.Measured(&out.Results.Run).Seconds()
		f, l := float64(fleet.FleetAdmitted()["hop"])/secs, float64(local.FleetAdmitted()["hop"])/secs
		t.Logf("%s: hop admitted fleet-wide per second: fleet %.1f, per-process %.1f", drv, f, l)
		require.LessOrEqual(t, f, 59.4, "%s: the fleet holds the hopper", drv)
		require.Greater(t, l, 3*f, "%s: per-process limits admit several times the fleet's", drv)
	}
	if !valid {
		return // a load generator behind its schedule: the runs do not compare
	}
	for _, out := range []*Outcome{lo, so} {
		require.True(t, out.Passed, "%s: unexpected outcome for %v", out.Results.Run.Driver, out.Unexpected)
	}
	for i, lv := range lo.Results.Variants {
		sv := so.Results.Variants[i]
		l, m := lv.FleetAdmitted()["hop"], sv.FleetAdmitted()["hop"]
		require.InEpsilon(t, m, l, 0.15, "variant %s: loopback and sim agree on the hopper's fleet-wide admitted", lv.Name)
	}
}
