package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Clients start on their assignment (index mod servers); ServerNext moves
// a client on, ServerIndex names one, a server the run lacks is an error.
func TestServerRoute(t *testing.T) {
	r := newServerRoute(3, []Client{{Index: 0}, {Index: 4}})
	pick := func(c int32, choice uint8) int {
		i, err := r.pick(c, choice)
		require.NoError(t, err)
		return i
	}
	assert.Equal(t, 0, pick(0, ServerAssigned))
	assert.Equal(t, 1, pick(1, ServerAssigned))
	assert.Equal(t, 2, pick(1, ServerNext))
	assert.Equal(t, 0, pick(1, ServerNext))
	assert.Equal(t, 0, pick(1, ServerAssigned), "assigned is where the client is now")
	assert.Equal(t, 2, pick(0, ServerIndex(2)))
	_, err := r.pick(0, ServerIndex(3))
	require.ErrorContains(t, err, "server 3 named, and the run has 3")
}

func TestServerHopValidateAndRunSpecServers(t *testing.T) {
	require.NoError(t, ServerHop{}.Validate())
	require.ErrorContains(t, ServerHop{Kind: KindMove}.Validate(), "Kind")
	require.ErrorContains(t, ServerHop{PerSecond: -1}.Validate(), "PerSecond")

	spec := hopSpec(MaxServers + 1)
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
	acc := res.Recorder.KindDecisions(0, KindChat)[Accepted]
	assert.InDelta(t, hopRate*2, float64(acc), hopRate*0.2, "2 measured seconds at the account rate")
}
