package fleet

import (
	"context"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/collectors"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// latencyProxy puts a toxiproxy TCP proxy on a free loopback port in
// front of r and returns it; the test adds and removes toxics.
func latencyProxy(t *testing.T, r *redisProc) *toxiproxy.Proxy {
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	srv.Metrics.ProxyMetrics = collectors.NewProxyMetricCollectors()
	p := toxiproxy.NewProxy(srv, "redis", "127.0.0.1:0", r.addr)
	require.NoError(t, p.Start())
	t.Cleanup(p.Stop)
	return p
}

// Redis behind a proxy that adds latency: under Timeout the fleet stays
// healthy and under its bound; over it the servers fall back to their
// local share without a Check ever waiting, and recover when the latency
// goes.
func TestRedisLatencyProxy(t *testing.T) {
	r := startRedis(t)
	p := latencyProxy(t, r)
	front := &redisProc{t: t, addr: p.Listen}
	const d = 6 * time.Second
	var slowWhileMild, slowWhileBad bool
	var samples []sample
	ta, lost, slowest, servers := faultRun(t, front, d, func(servers []*server) {
		_, err := p.Toxics.AddToxicJson(strings.NewReader(`{"name":"mild","type":"latency","stream":"downstream","attributes":{"latency":30}}`))
		require.NoError(t, err)
		time.Sleep(1500 * time.Millisecond)
		slowWhileMild = !servers[0].f.Healthy()
		require.NoError(t, p.Toxics.RemoveToxic(context.Background(), "mild"))
		_, err = p.Toxics.AddToxicJson(strings.NewReader(`{"name":"bad","type":"latency","stream":"downstream","attributes":{"latency":400}}`))
		require.NoError(t, err)
		time.Sleep(1500 * time.Millisecond)
		slowWhileBad = !servers[0].f.Healthy()
		require.NoError(t, p.Toxics.RemoveToxic(context.Background(), "bad"))
	}, &samples)
	st := servers[0].f.Stats()
	t.Logf("slowest Check %v; honest lost %d; errors %d; fallback takes %d", slowest, lost, st.Errors, st.Fallback)
	assert.False(t, slowWhileMild, "30ms of latency is under the 100ms timeout")
	assert.True(t, slowWhileBad, "400ms of latency is over the timeout")
	assert.Less(t, waited(samples, 50*time.Millisecond), 0.001, "Checks waited on Redis")
	assert.Zero(t, lost)
	assert.Positive(t, st.Fallback)
	mild, _ := ta.maxWindow(time.Second, 1200*time.Millisecond, 2500*time.Millisecond)
	assert.LessOrEqual(t, mild, boundFor(2, time.Second))
	after, _ := ta.maxWindow(time.Second, 5*time.Second, d)
	assert.LessOrEqual(t, after, boundFor(2, time.Second), "back under the bound once the latency goes")
}
