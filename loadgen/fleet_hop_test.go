package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServerHopValidateAndRunSpecServers(t *testing.T) {
	require.NoError(t, behave.ServerHop{}.Validate())
	require.ErrorContains(t, behave.ServerHop{Kind: behave.KindMove}.Validate(), "Kind")
	require.ErrorContains(t, behave.ServerHop{PerSecond: -1}.Validate(), "PerSecond")

	spec := hopSpec(behave.MaxServers + 1)
	_, err := RunSim(context.Background(), spec, hopPolicy(false))
	require.ErrorContains(t, err, "Servers")
	spec = hopSpec(1)
	spec.Redis = RedisStart
	_, err = RunSim(context.Background(), spec, hopPolicy(true))
	require.ErrorContains(t, err, "Redis")
}

// With one server, server-hop is a request flood that reconnects after
// each rejection: the account's limit holds it, and the run is what it
// was (every Action.Server dials the one server).
func TestServerHopOnOneServer(t *testing.T) {
	spec := hopSpec(1)
	spec.Plan.Duration = 4 * time.Second
	res, err := RunSim(context.Background(), spec, hopPolicy(false))
	require.NoError(t, err)
	require.Nil(t, res.Servers)
	acc := res.Recorder.KindDecisions(0, behave.KindChat)[record.Accepted]
	assert.InDelta(t, hopRate*2, float64(acc), hopRate*0.2, "2 measured seconds at the account rate")
}
