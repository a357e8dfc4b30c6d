package fleet

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicedev/sluice/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// 64 concurrent callers on one strict bucket get exactly its burst, on a
// single Redis (one script per batch) and through the pipelined form.
func TestStrictExact(t *testing.T) {
	r := startRedis(t)
	for _, cluster := range []bool{false, true} {
		c := r.client(t)
		s, err := NewStrict(context.Background(), c, StrictConfig{Prefix: "strict"})
		require.NoError(t, err)
		s.cluster = cluster // the pipeline of one script per take, as on a Cluster
		lim := Limit{Rate: 1e-3, Burst: 50}
		key := s.Key("buy:" + map[bool]string{false: "one", true: "many"}[cluster])
		var passed, denied atomic.Int64
		var wg sync.WaitGroup
		for range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 4 {
					d, err := s.Take(context.Background(), key, lim, 1, core.AccountLimit)
					if err != nil {
						t.Error(err)
						return
					}
					if d.Allowed {
						passed.Add(1)
					} else {
						assert.Equal(t, core.AccountLimit, d.Reason)
						assert.Greater(t, d.RetryAfter, 100*time.Second)
						denied.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		s.Close()
		assert.Equal(t, int64(50), passed.Load(), "cluster form %v", cluster)
		assert.Equal(t, int64(64*4-50), denied.Load())
	}
}

// With Redis gone a strict take returns an error (no decision, no panic);
// after a restart (scripts lost) it works again; Close ends the senders.
func TestStrictRedisGone(t *testing.T) {
	r := startRedis(t)
	c := redis.NewClient(&redis.Options{Addr: r.addr, MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer c.Close()
	s, err := NewStrict(context.Background(), c, StrictConfig{})
	require.NoError(t, err)
	defer s.Close()
	lim := Limit{Rate: 10, Burst: 10}
	_, err = s.Take(context.Background(), s.Key("k"), lim, 1, core.AccountLimit)
	require.NoError(t, err)
	r.kill()
	_, err = s.Take(context.Background(), s.Key("k"), lim, 1, core.AccountLimit)
	require.Error(t, err)
	r.restart()
	d, err := s.Take(context.Background(), s.Key("k"), lim, 1, core.AccountLimit)
	require.NoError(t, err, "NOSCRIPT after the restart: the scripts are loaded again")
	assert.True(t, d.Allowed)
	d, _ = s.Take(context.Background(), s.Key("k"), lim, 11, core.AccountLimit)
	assert.Equal(t, core.Oversize, d.Reason)
}

// Concurrent takes of mixed sizes on keys of different limits, batched
// together (several takes of one key in one batch, on a single Redis and
// through the per-key pipeline): each key admits exactly what its bucket
// holds, every allowed take reports a distinct remainder, and a denial
// only comes when fewer than n tokens are left.
func TestStrictBatchKeys(t *testing.T) {
	r := startRedis(t)
	for _, cluster := range []bool{false, true} {
		c := r.client(t)
		s, err := NewStrict(context.Background(), c, StrictConfig{Prefix: "mix", Senders: 1})
		require.NoError(t, err)
		s.cluster = cluster
		const keys = 8
		var mu sync.Mutex
		taken := make([]int64, keys)
		left := make([]map[uint32]bool, keys)
		for k := range left {
			left[k] = map[uint32]bool{}
		}
		var wg sync.WaitGroup
		for g := range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 8 {
					k, n := (g+i)%keys, int64(1+(g*7+i)%3)
					lim := Limit{Rate: 1e-3, Burst: float64(10 + 3*k)}
					d, err := s.Take(context.Background(), s.Key(fmt.Sprintf("%v:%d", cluster, k)), lim, n, core.AccountLimit)
					if !assert.NoError(t, err) {
						return
					}
					mu.Lock()
					if d.Allowed {
						taken[k] += n
						assert.False(t, left[k][d.Remaining], "key %d: remainder %d twice", k, d.Remaining)
						left[k][d.Remaining] = true
					} else {
						assert.Less(t, int64(d.Remaining), n, "key %d: denied with %d left for %d", k, d.Remaining, n)
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		s.Close()
		for k := range keys {
			burst := int64(10 + 3*k)
			assert.LessOrEqual(t, taken[k], burst, "cluster form %v, key %d", cluster, k)
			assert.GreaterOrEqual(t, taken[k], burst-2, "cluster form %v, key %d: 64 takes of up to 3 leave under 3", cluster, k)
			least := burst
			for l := range left[k] {
				least = min(least, int64(l))
			}
			assert.Equal(t, burst-taken[k], least, "cluster form %v, key %d: the last allowed take's remainder", cluster, k)
			// The bucket's key expires when it is full again: in taken
			// tokens' time (1000 s a token), to within the test's run.
			ttl, err := c.PTTL(context.Background(), s.Key(fmt.Sprintf("%v:%d", cluster, k))).Result()
			require.NoError(t, err)
			assert.InDelta(t, float64(taken[k])*1000, ttl.Seconds(), 10, "cluster form %v, key %d: expiry", cluster, k)
		}
	}
}
