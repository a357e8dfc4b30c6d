package fleet

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicedev/sluice/atomicbucket"
	"github.com/sluicedev/sluice/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func redisStore(t testing.TB, c redis.UniversalClient) *RedisStore {
	s, err := NewRedisStore(context.Background(), c, "sluice")
	require.NoError(t, err)
	return s
}

// The bound on a real Redis: four servers, each with its own client.
func TestFourServersRedis(t *testing.T) {
	r := startRedis(t)
	fourServers(t, redisStore(t, r.client(t)))
}

// The Redis scripts compute what the Go model (gcra, MemStore) does.
func TestRedisLeaseMatchesModel(t *testing.T) {
	r := startRedis(t)
	rs := redisStore(t, r.client(t))
	ms := NewMemStore(nil)
	lim := Limit{Rate: 1e-3, Burst: 10} // no refill within the test
	ctx := context.Background()
	steps := []LeaseOp{
		{Want: 4, Least: 1}, {Want: 4, Least: 1}, {Want: 4, Least: 1}, // 4, 4, 2
		{Want: 1, Least: 1},               // 0: empty
		{Return: 3, Want: 0},              // back to 3
		{Want: 5, Least: 4},               // 0: fewer than least
		{Debt: 5, Want: 1, Least: 1},      // in debt
		{Return: 100, Want: 10, Least: 1}, // full again, all 10
	}
	for i, st := range steps {
		a := []LeaseOp{st}
		b := []LeaseOp{st}
		a[0].Key, b[0].Key, a[0].Limit, b[0].Limit = "sluice:{t:1}", "sluice:{t:1}", lim, lim
		require.NoError(t, rs.Lease(ctx, a))
		require.NoError(t, ms.Lease(ctx, b))
		assert.Equal(t, b[0].Granted, a[0].Granted, "step %d", i)
		assert.Equal(t, b[0].Retry > 0, a[0].Retry > 0, "step %d", i)
	}
	ok, left, _, err := rs.Take(ctx, "sluice:{t:2}", lim, 10)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Zero(t, left)
	ok, _, retry, err := rs.Take(ctx, "sluice:{t:2}", lim, 1)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.InDelta(t, 1000*time.Second, retry, float64(time.Second))
}

// Heartbeats count the live servers; one that leaves is not counted.
func TestRedisHeartbeat(t *testing.T) {
	r := startRedis(t)
	s := redisStore(t, r.client(t))
	ctx := context.Background()
	for i, name := range []string{"a", "b", "c"} {
		n, err := s.Heartbeat(ctx, name, time.Second)
		require.NoError(t, err)
		assert.Equal(t, i+1, n)
	}
	require.NoError(t, s.Leave(ctx, "b"))
	n, err := s.Heartbeat(ctx, "a", time.Second)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	_, err = s.Heartbeat(ctx, "c", 50*time.Millisecond)
	require.NoError(t, err)
	_, err = s.Heartbeat(ctx, "a", 50*time.Millisecond)
	require.NoError(t, err)
	time.Sleep(120 * time.Millisecond)
	n, err = s.Heartbeat(ctx, "a", time.Second)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "c's heartbeat expired")
}

// faultRun floods the hostile account over two servers while an honest
// account (one message every 100ms, far under its local share) plays on
// the first, with fault injected at 1s; it returns the tallies and the
// slowest Check, and fills samples with every hostile Check's duration.
func faultRun(t *testing.T, r *redisProc, d time.Duration, fault func([]*server), samples *[]sample) (hostile *tally, honestLost int64, slowest time.Duration, servers []*server) {
	cfg := Config{Lease: tLease, Refresh: 20 * time.Millisecond, Timeout: 100 * time.Millisecond, Idle: 5 * time.Second, Heartbeat: 200 * time.Millisecond, Servers: 2}
	for _, name := range []string{"a", "b"} {
		servers = append(servers, newServer(t, redisStore(t, r.client(t)), name, cfg))
	}
	now := atomicbucket.Nanotime()
	g := servers[0].g
	h, v := g.Open(servers[0].addr(), now)
	require.True(t, v.OK())
	require.True(t, g.Authenticate(h, 7, now).OK())
	hostile = newTally(d)
	var lost atomic.Int64
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); slowest = flood(servers, hostile, d, samples) }()
	go func() {
		defer wg.Done()
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			if !g.Check(core.Message{Session: h, Kind: 0, Size: 8}, atomicbucket.Nanotime()).OK() {
				lost.Add(1)
			}
		}
	}()
	go func() { defer wg.Done(); time.Sleep(time.Second); fault(servers) }()
	wg.Wait()
	return hostile, lost.Load(), slowest, servers
}

// Redis stopped (SIGSTOP) for 5s mid-run: no Check waits on it, the
// honest player loses nothing, the servers fall back to their local share
// and, once Redis continues, are healthy again and back under the bound
// within two refresh periods plus a timeout.
func TestRedisStopCont(t *testing.T) {
	r := startRedis(t)
	const d = 9 * time.Second
	var healthyAgain time.Duration
	var samples []sample
	ta, lost, slowest, servers := faultRun(t, r, d, func(servers []*server) {
		r.signal(syscall.SIGSTOP)
		time.Sleep(5 * time.Second)
		r.signal(syscall.SIGCONT)
		start := time.Now()
		for !servers[0].f.Healthy() || !servers[1].f.Healthy() {
			if time.Since(start) > 5*time.Second {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		healthyAgain = time.Since(start)
	}, &samples)
	st := servers[0].f.Stats()
	before, during := p99(samples, 0, time.Second), p99(samples, 1100*time.Millisecond, 6*time.Second)
	t.Logf("slowest Check %v; p99 per Check %v before the stop, %v while Redis is stopped; honest lost %d; errors %d, fallback takes %d; healthy %v after SIGCONT",
		slowest, before, during, lost, st.Errors, st.Fallback, healthyAgain)
	// A Check is a few hundred ns; its p99 here is the scheduling of a
	// loaded machine (milliseconds under -race). One that waited on Redis
	// would take the 100ms timeout.
	assert.Less(t, during, 10*time.Millisecond, "p99 of a Check while Redis is stopped")
	// A Check that waited on Redis would wait at least the timeout (100ms);
	// the slowest ones are scheduling delays of a loaded machine.
	assert.Less(t, waited(samples, 50*time.Millisecond), 0.001, "Checks waited (Redis is never on the message path)")
	assert.Zero(t, lost, "honest messages lost")
	assert.Positive(t, st.Errors)
	assert.Positive(t, st.Fallback)
	assert.Less(t, healthyAgain, time.Second)
	after, _ := ta.maxWindow(time.Second, 7*time.Second, d)
	assert.LessOrEqual(t, after, boundFor(2, time.Second), "after SIGCONT the fleet is back under the bound")
}

// kill -9 and a restart with no keys: no panic, the servers resume the
// fleet limit (a lost bucket is a full one), and nothing leaks once they
// stop.
func TestRedisKillRestart(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	r := startRedis(t)
	const d = 6 * time.Second
	var samples []sample
	ta, lost, slowest, servers := faultRun(t, r, d, func([]*server) {
		r.kill()
		time.Sleep(time.Second)
		r.restart()
	}, &samples)
	st := servers[0].f.Stats()
	t.Logf("slowest Check %v; honest lost %d; errors %d; rounds %d", slowest, lost, st.Errors, st.Rounds)
	assert.Less(t, waited(samples, 50*time.Millisecond), 0.001, "Checks waited on Redis")
	assert.Zero(t, lost)
	assert.Positive(t, st.Errors)
	assert.True(t, servers[0].f.Healthy() && servers[1].f.Healthy())
	after, _ := ta.maxWindow(time.Second, 4*time.Second, d)
	assert.LessOrEqual(t, after, boundFor(2, time.Second), "limits resume after the restart")
	assert.GreaterOrEqual(t, after, int64(tRate*0.8))
	for _, s := range servers {
		s.f.Stop()
	}
}

// A policy's fleet section is all a server needs: Open builds the fleet
// and the gate options, and the gate's account layer is then shared.
func TestOpenFromPolicy(t *testing.T) {
	r := startRedis(t)
	p, err := core.DecodePolicyYAML([]byte(`
channels: [{name: move, class: input, rate: 1000, burst: 1000}]
account: {rate: 1, burst: 6}
match: {disabled: true}
strikes: {weights: {AccountLimit: 0}}
fleet:
  redis: [` + r.addr + `]
  lease: 2
  refresh: 10ms
`))
	require.NoError(t, err)
	ctx := context.Background()
	var admitted int
	for _, name := range []string{"a", "b"} {
		s, err := Open(ctx, p, name)
		require.NoError(t, err)
		require.NoError(t, s.Fleet.Start())
		now := atomicbucket.Nanotime()
		g, err := core.NewGate(p, now, s.GateOptions...)
		require.NoError(t, err)
		h, v := g.Open(netip.MustParseAddrPort("127.0.0.1:1"), now)
		require.True(t, v.OK())
		require.True(t, g.Authenticate(h, 99, now).OK())
		for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
			if g.Check(core.Message{Session: h, Size: 1}, atomicbucket.Nanotime()).OK() {
				admitted++
			}
		}
		require.NoError(t, s.Close())
	}
	// burst 6 + under a second of rate 1 + 2 × 2 servers × lease 2
	assert.LessOrEqual(t, admitted, 6+1+8)
	assert.GreaterOrEqual(t, admitted, 6)
}
