package fleet

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicedev/sluice/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clusterPort returns a free loopback port whose cluster bus port (port +
// 10000) is free too.
func clusterPort(t *testing.T) int {
	for p := 20000 + int(time.Now().UnixNano()%5000); p < 30000; p += 7 {
		a, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		b, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+10000))
		a.Close()
		if err != nil {
			continue
		}
		b.Close()
		return p
	}
	t.Fatal("no free port pair for a cluster node")
	return 0
}

// startCluster starts a 3-master Redis Cluster on loopback, its slots
// assigned by redis-cli --cluster create, and returns the seed addresses.
func startCluster(t *testing.T) []string {
	needRedis(t)
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not installed")
	}
	var addrs []string
	for range 3 {
		p := clusterPort(t)
		r := &redisProc{t: t, port: p, addr: "127.0.0.1:" + strconv.Itoa(p)}
		dir := t.TempDir()
		r.args = []string{"--port", strconv.Itoa(p), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir,
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000"}
		r.start(needRedis(t))
		t.Cleanup(r.kill)
		addrs = append(addrs, r.addr)
	}
	out, err := exec.Command(cli, append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "0", "--cluster-yes")...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			info, _ := c.ClusterInfo(context.Background()).Result()
			if strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				c.Close()
				t.Fatalf("cluster node %s not ok: %s", a, info)
			}
		}
		c.Close()
	}
	return addrs
}

// On a 3-master Cluster the hash-tagged buckets spread over the masters
// and every lease and strict take works (no CROSSSLOT): each script names
// one key, and a pipeline is split by node.
func TestRedisClusterHashTags(t *testing.T) {
	addrs := startCluster(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	store, err := NewRedisStore(ctx, c, "sluice")
	require.NoError(t, err)
	_, l := newLayer(t, Config{Store: store, Lease: 3}, testSpec(1e-3, 9, 1000))
	var ops []LeaseOp
	for k := range uint64(60) {
		ops = append(ops, LeaseOp{Key: l.keyName(k), Limit: l.limit, Want: 4, Least: 1})
	}
	require.NoError(t, store.Lease(ctx, ops))
	for i := range ops {
		assert.Equal(t, int64(4), ops[i].Granted, "key %d", i)
	}
	var masters atomic.Int64 // ForEachMaster runs f on every master at once
	err = c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		n, err := m.DBSize(ctx).Result()
		if n > 0 {
			masters.Add(1)
		}
		return err
	})
	require.NoError(t, err)
	assert.Equal(t, int64(3), masters.Load(), "the buckets spread over every master")
	n, err := store.Heartbeat(ctx, "a", time.Second)
	require.NoError(t, err)
	assert.Equal(t, 1, n)

	s, err := NewStrict(ctx, c, StrictConfig{})
	require.NoError(t, err)
	defer s.Close()
	require.True(t, s.cluster)
	lim := Limit{Rate: 1e-3, Burst: 2}
	// All 60 takes at once, so that batches hold keys of several slots
	// (one script call per key) and several takes of one key.
	var allowed [20]atomic.Int64
	var wg sync.WaitGroup
	for k := range 20 {
		key := s.Key(fmt.Sprintf("buy:%d", k))
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d, err := s.Take(ctx, key, lim, 1, core.AccountLimit)
				if !assert.NoError(t, err) {
					return
				}
				if d.Allowed {
					allowed[k].Add(1)
				}
			}()
		}
	}
	wg.Wait()
	for k := range allowed {
		assert.Equal(t, int64(2), allowed[k].Load(), "key %d", k)
	}
}
