package peers

import (
	"context"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/fleet"
	"github.com/sluicedev/sluice/internal/cputime"
)

// startRedis starts a redis-server of the caller's own on a free loopback
// port, without persistence, and stops it at cleanup. Without
// redis-server the caller skips, except in CI (CI=true), where it fails.
func startRedis(tb testing.TB) string {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("redis-server is required in CI: %v", err)
		}
		tb.Skip("redis-server not installed: skipping (apt-get install redis-server)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", tb.TempDir())
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := "127.0.0.1:" + strconv.Itoa(port)
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); c.Ping(context.Background()).Err() != nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("redis-server on %s did not answer", addr)
		}
	}
	return addr
}

// strictTaker is one strict (a Redis round trip per take) fleet limiter.
type strictTaker interface {
	take(ctx context.Context, key string, n int) (allowed bool, remaining int, err error)
}

// strictLimit is the limit of both peers: rate per hour, burst.
type strictLimit struct {
	perHour, burst int
}

type sluiceStrict struct {
	s   *fleet.Strict
	lim fleet.Limit
}

func (s *sluiceStrict) take(ctx context.Context, key string, n int) (bool, int, error) {
	d, err := s.s.Take(ctx, s.s.Key(key), s.lim, int64(n), core.AccountLimit)
	return d.Allowed, int(d.Remaining), err
}

type redisRate struct {
	l   *redis_rate.Limiter
	lim redis_rate.Limit
}

func (r *redisRate) take(ctx context.Context, key string, n int) (bool, int, error) {
	res, err := r.l.AllowN(ctx, key, r.lim, n)
	if err != nil {
		return false, 0, err
	}
	return res.Allowed > 0, res.Remaining, nil
}

// newStrict builds each peer on its own client (go-redis's default pool)
// to the one redis-server at addr.
func newStrict(tb testing.TB, addr, name string, l strictLimit) strictTaker {
	c := redis.NewClient(&redis.Options{Addr: addr})
	tb.Cleanup(func() { c.Close() })
	switch name {
	case "sluice":
		s, err := fleet.NewStrict(context.Background(), c, fleet.StrictConfig{})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(s.Close)
		return &sluiceStrict{s: s, lim: fleet.Limit{Rate: float64(l.perHour) / 3600, Burst: float64(l.burst)}}
	case "redis_rate":
		return &redisRate{l: redis_rate.NewLimiter(c), lim: redis_rate.Limit{Rate: l.perHour, Burst: l.burst, Period: time.Hour}}
	}
	tb.Fatalf("no strict peer %q", name)
	return nil
}

// Both peers decide a shared trace of takes identically: the same
// passes, and after each pass the same tokens left (on a denial
// redis_rate reports 0 left, sluice the whole tokens there). The rate (one token an hour) leaves no
// refill within the test, so the decisions depend on the trace alone.
func TestStrictSameDecisions(t *testing.T) {
	addr := startRedis(t)
	lim := strictLimit{perHour: 1, burst: 20}
	a, b := newStrict(t, addr, "sluice", lim), newStrict(t, addr, "redis_rate", lim)
	rng := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	passed, denied := 0, 0
	for i := range 400 {
		key := "k" + strconv.Itoa(rng.IntN(8))
		n := 1 + rng.IntN(4)
		okA, leftA, errA := a.take(ctx, "trace:"+key, n)
		okB, leftB, errB := b.take(ctx, "trace:"+key, n)
		if errA != nil || errB != nil {
			t.Fatalf("take %d: %v, %v", i, errA, errB)
		}
		if okA != okB || okA && leftA != leftB {
			t.Fatalf("take %d (%s, n=%d): sluice %v (%d left), redis_rate %v (%d left)", i, key, n, okA, leftA, okB, leftB)
		}
		if okA {
			passed++
		} else {
			denied++
		}
	}
	if passed == 0 || denied == 0 {
		t.Fatalf("a trace must both pass and deny: %d passed, %d denied", passed, denied)
	}
}

// BenchmarkStrict is one strict take (a Redis round trip, the limit in
// Redis) with 1, 16 or 64 callers at once, each peer on its own go-redis
// client to the same redis-server. One op is one take; ops/s is the
// takes per second the fleet sustains. It also reports what a take cost
// Redis and the client (redisCost.report, client-cpu-ns/op: the whole
// process's CPU), for a machine whose load makes wall time noisy.
func BenchmarkStrict(b *testing.B) {
	addr := startRedis(b)
	lim := strictLimit{perHour: 1 << 30, burst: 1 << 30}
	for _, name := range []string{"sluice", "redis_rate"} {
		for _, callers := range []int{1, 16, 64} {
			b.Run(name+"/"+strconv.Itoa(callers), func(b *testing.B) {
				s := newStrict(b, addr, name, lim)
				ctx := context.Background()
				var next atomic.Int64
				var failed atomic.Int64
				b.ReportAllocs()
				before := readRedisCost(b, addr)
				cpu0 := cputime.Process()
				b.ResetTimer()
				var wg sync.WaitGroup
				for c := range callers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						key := "bench:" + strconv.Itoa(c%16)
						for next.Add(1) <= int64(b.N) {
							if ok, _, err := s.take(ctx, key, 1); err != nil || !ok {
								failed.Add(1)
							}
						}
					}()
				}
				wg.Wait()
				b.StopTimer()
				cpu1 := cputime.Process()
				readRedisCost(b, addr).report(b, before)
				if cpu0 >= 0 && cpu1 >= 0 {
					b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "client-cpu-ns/op")
				}
				if f := failed.Load(); f > 0 {
					b.Fatalf("%d takes failed or were denied", f)
				}
			})
		}
	}
}

// redisCost is what a redis-server has spent so far: its CPU time, and
// the calls and time of script commands (EVALSHA, EVAL) and of all
// commands (those a script calls included), from INFO.
type redisCost struct {
	cpuNs                   float64
	scripts, scriptUs, cmds float64
}

func readRedisCost(b *testing.B, addr string) redisCost {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	info, err := c.Info(context.Background(), "cpu", "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var rc redisCost
	for _, line := range strings.Split(info, "\r\n") {
		name, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch {
		case name == "used_cpu_sys" || name == "used_cpu_user":
			f, _ := strconv.ParseFloat(val, 64)
			rc.cpuNs += f * 1e9
		case strings.HasPrefix(name, "cmdstat_"):
			var calls, us float64
			for _, kv := range strings.Split(val, ",") {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "calls":
					calls, _ = strconv.ParseFloat(v, 64)
				case "usec":
					us, _ = strconv.ParseFloat(v, 64)
				}
			}
			if name == "cmdstat_evalsha" || name == "cmdstat_eval" {
				rc.scripts += calls
				rc.scriptUs += us
			}
			rc.cmds += calls
		}
	}
	return rc
}

// report reports per take what Redis spent since before: its CPU
// (redis-cpu-ns/op), the time inside scripts (script-ns/op), the script
// calls (scripts/op: below 1 when one call decides several takes) and the
// commands Redis ran, scripts and the commands they call (cmds/op).
func (rc redisCost) report(b *testing.B, before redisCost) {
	n := float64(b.N)
	b.ReportMetric((rc.cpuNs-before.cpuNs)/n, "redis-cpu-ns/op")
	b.ReportMetric((rc.scriptUs-before.scriptUs)*1e3/n, "script-ns/op")
	b.ReportMetric((rc.scripts-before.scripts)/n, "scripts/op")
	b.ReportMetric((rc.cmds-before.cmds-1)/n, "cmds/op") // less the INFO that read before
}
