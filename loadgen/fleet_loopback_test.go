package loadgen

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicedev/sluice/internal/redisproc"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/stretchr/testify/require"
)

// needRedisServer skips a test that needs redis-server where it is not
// installed, except in CI (CI=true), where its absence fails the test.
func needRedisServer(t *testing.T) {
	redisproc.Need(t, "a loopback fleet test")
}

// Four reference servers on loopback ports, their account layers on one
// real redis-server that the run starts (RedisStart): server-hop spread
// over them is held to the fleet bound over every second, and the same
// servers with per-process limits admit about four times as much.
func TestFleetLoopbackServerHopOnRedis(t *testing.T) {
	needRedisServer(t)
	ctx := context.Background()
	spec := func(redis string) RunSpec {
		s := hopSpec(4)
		s.Plan.Duration, s.Warmup = 6*time.Second, time.Second
		s.Redis = redis
		return s
	}
	fleetRes, err := RunLoopback(ctx, spec(RedisStart), hopPolicy(true))
	require.NoError(t, err)
	require.True(t, fleetRes.Complete)
	localRes, err := RunLoopback(ctx, spec(""), hopPolicy(false))
	require.NoError(t, err)
	require.Len(t, fleetRes.Servers, 4)

	bound := int64(hopBurst + hopRate*1 + 2*4*hopLease)
	fw, lw := fleetWide(fleetRes, 0), fleetWide(localRes, 0)
	t.Logf("fleet-wide admitted per second: fleet %v, per-process %v (bound %d)", fw, lw, bound)
	var fleetSum, localSum int64
	for i := 1; i < len(fw); i++ {
		require.LessOrEqual(t, fw[i], bound, "fleet-wide admitted in second %d", i)
		fleetSum += fw[i]
		localSum += lw[i]
	}
	require.Greater(t, float64(localSum), 2.5*float64(fleetSum), "per-process limits admit several times the fleet's")
	var adm int64
	for _, sc := range fleetRes.Servers {
		adm += sc.Admitted[0]
	}
	require.LessOrEqual(t, adm, int64(hopBurst+hopRate*5+2*4*hopLease+4*hopLease), "the measured window, 5 s")
}

// A fleet run whose Redis is not there fails to start, saying why.
func TestFleetLoopbackWithoutRedisFails(t *testing.T) {
	s := hopSpec(2)
	s.Redis = "127.0.0.1:1" // nothing listens there
	_, err := RunLoopback(context.Background(), s, hopPolicy(true))
	require.Error(t, err)
	var pe *behave.ParamError
	require.False(t, errors.As(err, &pe))
}
