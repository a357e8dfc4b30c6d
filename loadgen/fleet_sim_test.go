package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/stretchr/testify/require"
)

// The account budget of the fleet tests: 50 requests a second, burst 50,
// leased 6 at a time (the default: burst ÷ 8).
const (
	hopRate  = 50.0
	hopBurst = 50.0
	hopLease = 6
)

// hopPolicy is the default policy with a chat channel and strikes that
// never hold the flood back, so that the account layer alone decides it;
// with fleet, the account layer is fleet-wide.
func hopPolicy(fleet bool) core.Policy {
	p := behave.DefaultPolicy()
	for i := range p.Channels {
		if p.Channels[i].Name == "chat" {
			p.Channels[i].Rate, p.Channels[i].Burst = new(1e5), new(1e5)
		}
	}
	p.Account = core.Budget{Rate: new(hopRate), Burst: new(hopBurst)}
	p.Match = core.Budget{Disabled: true}
	p.Strikes = core.Strikes{Weights: map[core.Reason]float64{core.AccountLimit: 0}}
	if fleet {
		p.Fleet = core.Fleet{Redis: []string{"127.0.0.1:6379"}} // not dialled by the sim
	}
	return p
}

// hopSpec is 8 server-hop clients of one account over servers servers.
func hopSpec(servers int) RunSpec {
	return RunSpec{
		Plan: behave.Plan{Seed: 7, Duration: 12 * time.Second, Populations: []behave.Population{
			{Name: "hop", Clients: 8, PerAccount: 8, Behaviour: &behave.ServerHop{Persist: behave.Persist{ConnectSpread: 200 * time.Millisecond}}},
		}},
		Warmup:  2 * time.Second,
		Servers: servers,
	}
}

// fleetWide sums the servers' series of population pop.
func fleetWide(res *Result, pop int) []int64 {
	var out []int64
	for _, sc := range res.Servers {
		if out == nil {
			out = make([]int64, len(sc.Series[pop]))
		}
		for i, n := range sc.Series[pop] {
			out[i] += n
		}
	}
	return out
}

func TestFleetSimServerHopHeldToTheFleetBound(t *testing.T) {
	ctx := context.Background()
	fleetRes, err := RunSim(ctx, hopSpec(4), hopPolicy(true))
	require.NoError(t, err)
	localRes, err := RunSim(ctx, hopSpec(4), hopPolicy(false))
	require.NoError(t, err)
	require.Len(t, fleetRes.Servers, 4)

	// The bound of package fleet, over a 1 s window (shorter than the
	// idle period): burst + rate·T + 2·servers·lease.
	bound := int64(hopBurst + hopRate*1 + 2*4*hopLease)
	fw, lw := fleetWide(fleetRes, 0), fleetWide(localRes, 0)
	var fleetSum, localSum int64
	for i := 2; i < len(fw); i++ { // after the warm-up
		require.LessOrEqual(t, fw[i], bound, "fleet-wide admitted in second %d", i)
		fleetSum += fw[i]
		localSum += lw[i]
	}
	secs := float64(len(fw) - 2)
	fleetRate, localRate := float64(fleetSum)/secs, float64(localSum)/secs
	t.Logf("admitted per second: fleet %.1f, per-process %.1f (account rate %v)", fleetRate, localRate, hopRate)
	require.InDelta(t, hopRate, fleetRate, 0.2*hopRate, "the fleet holds the account near its rate")
	require.InDelta(t, 4, localRate/fleetRate, 0.6, "per-process limits admit about 4× as much")
	for i, sc := range fleetRes.Servers {
		require.Positive(t, sc.Admitted[0], "server %d admitted none: the account was not spread", i)
	}

	// Exact and reproducible: the same spec gives the same counts.
	again, err := RunSim(ctx, hopSpec(4), hopPolicy(true))
	require.NoError(t, err)
	require.Equal(t, fleetRes.Servers, again.Servers)
}
