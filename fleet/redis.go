package fleet

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// leaseScript is one lease operation on one fleet bucket (KEYS[1]), the
// arithmetic of gcra in Lua: the bucket's state is its theoretical arrival
// time in microseconds of Redis's clock (TIME, so that every server reads
// one clock), kept in one Redis key that expires when the bucket is full
// again. ARGV: time per token (µs), burst, return, debt, want, least.
// Returns {granted, retry in µs}.
var leaseScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local iv = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local ret = tonumber(ARGV[3])
local debt = tonumber(ARGV[4])
local want = tonumber(ARGV[5])
local least = tonumber(ARGV[6])
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
if ret > 0 then tat = math.max(now, tat - ret * iv) end
tat = tat + debt * iv
local avail = math.floor((now + burst * iv - tat) / iv + 1e-9)
local granted = 0
if want > 0 and avail >= least then granted = math.min(want, avail) end
tat = tat + granted * iv
local retry = 0
if granted < want then retry = math.max(0, tat + least * iv - burst * iv - now) end
if tat > now then
  redis.call('SET', KEYS[1], string.format('%.17g', tat), 'PX', math.ceil((tat - now) / 1000) + 1)
else
  redis.call('DEL', KEYS[1])
end
return {granted, math.ceil(retry)}
`)

// takeScript is strict mode's take: n tokens from KEYS[1] if all are there.
// ARGV: time per token (µs), burst, n. Returns {allowed, remaining,
// retry in µs}.
var takeScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local iv = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local avail = (now + burst * iv - tat) / iv
if avail + 1e-9 < n then
  return {0, math.max(0, math.floor(avail + 1e-9)), math.ceil(tat + n * iv - burst * iv - now)}
end
tat = tat + n * iv
redis.call('SET', KEYS[1], string.format('%.17g', tat), 'PX', math.ceil((tat - now) / 1000) + 1)
return {1, math.floor(avail - n + 1e-9), 0}
`)

// heartbeatScript records ARGV[1] alive for ARGV[2] ms in the sorted set
// KEYS[1] (score: expiry on Redis's clock), drops the expired, and
// returns how many are alive.
var heartbeatScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 10)
return redis.call('ZCARD', KEYS[1])
`)

// RedisStore is the Store on Redis (a single server, or a Cluster through
// a redis.ClusterClient): each fleet bucket is one Redis key updated by
// one Lua script per operation, loaded once and run by EVALSHA, the
// operations of a batch pipelined in one round trip. Keys hash-tag the
// whole limit key ({...}) so a bucket lives in one Cluster slot. Safe for
// concurrent use; the caller owns the client and closes it.
type RedisStore struct {
	c      redis.UniversalClient
	prefix string
}

// NewRedisStore returns a store on c whose server-list key starts with
// prefix (the fleet buckets are named by the layers). It loads the
// scripts (a Redis that restarts loses them: the store loads them again
// on NOSCRIPT).
func NewRedisStore(ctx context.Context, c redis.UniversalClient, prefix string) (*RedisStore, error) {
	s := &RedisStore{c: c, prefix: prefix}
	if err := s.load(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *RedisStore) load(ctx context.Context) error {
	for _, sc := range []*redis.Script{leaseScript, takeScript, heartbeatScript} {
		if err := sc.Load(ctx, s.c).Err(); err != nil {
			return err
		}
	}
	return nil
}

func isNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}

// Lease implements Store: one pipeline of EVALSHA, one per op.
func (s *RedisStore) Lease(ctx context.Context, ops []LeaseOp) error {
	if len(ops) == 0 {
		return nil
	}
	err := s.lease(ctx, ops)
	if isNoScript(err) {
		if err = s.load(ctx); err == nil {
			err = s.lease(ctx, ops)
		}
	}
	return err
}

func (s *RedisStore) lease(ctx context.Context, ops []LeaseOp) error {
	p := s.c.Pipeline()
	cmds := make([]*redis.Cmd, len(ops))
	for i := range ops {
		o := &ops[i]
		o.Granted, o.Retry = 0, 0
		cmds[i] = leaseScript.EvalSha(ctx, p, []string{o.Key}, 1e6/o.Limit.Rate, o.Limit.Burst, o.Return, o.Debt, o.Want, max(1, o.Least))
	}
	if _, err := p.Exec(ctx); err != nil {
		return err
	}
	for i, c := range cmds {
		v, err := c.Int64Slice()
		if err != nil || len(v) != 2 {
			if err == nil {
				err = errors.New("fleet: unexpected lease reply")
			}
			return err
		}
		ops[i].Granted, ops[i].Retry = v[0], time.Duration(v[1])*time.Microsecond
	}
	return nil
}

// Take implements Store: one EVALSHA. Strict uses a pipelined form.
func (s *RedisStore) Take(ctx context.Context, key string, lim Limit, n int64) (bool, int64, time.Duration, error) {
	v, err := takeScript.Run(ctx, s.c, []string{key}, 1e6/lim.Rate, lim.Burst, n).Int64Slice()
	if err != nil {
		return false, 0, 0, err
	}
	if len(v) != 3 {
		return false, 0, 0, errors.New("fleet: unexpected take reply")
	}
	return v[0] == 1, v[1], time.Duration(v[2]) * time.Microsecond, nil
}

// Heartbeat implements Store.
func (s *RedisStore) Heartbeat(ctx context.Context, server string, ttl time.Duration) (int, error) {
	n, err := heartbeatScript.Run(ctx, s.c, []string{s.serversKey()}, server, max(1, ttl.Milliseconds())).Int()
	if err != nil {
		return 0, err
	}
	return max(1, n), nil
}

// Leave implements Store.
func (s *RedisStore) Leave(ctx context.Context, server string) error {
	return s.c.ZRem(ctx, s.serversKey(), server).Err()
}

func (s *RedisStore) serversKey() string { return s.prefix + ":{servers}" }
