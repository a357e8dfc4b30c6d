package fleet

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"
)

// Limit is the rate (tokens per second) and burst of a fleet bucket.
type Limit struct {
	Rate  float64
	Burst float64
}

func (l Limit) valid() error {
	if !(l.Rate > 0) || math.IsInf(l.Rate, 0) {
		return errors.New("fleet: rate must be positive and finite")
	}
	if !(l.Burst >= 1) || math.IsInf(l.Burst, 0) {
		return errors.New("fleet: burst must be at least 1 and finite")
	}
	return nil
}

// LeaseOp is one operation on a fleet bucket in a Store.Lease batch: give
// back Return unused tokens, charge Debt tokens whatever the level (tokens
// a server already spent on credit), then grant up to Want tokens, but only
// if at least Least are there. The store fills Granted and, when it
// granted fewer than Want, Retry: the time until Least tokens will be
// there.
type LeaseOp struct {
	Key    string
	Limit  Limit
	Return int64
	Debt   int64
	Want   int64
	Least  int64

	Granted int64
	Retry   time.Duration
}

// Store holds the fleet's buckets: a token bucket per key shared by every
// server. Redis is the production store (NewRedisStore); MemStore is the
// same model in one process. A Store is safe for concurrent use.
type Store interface {
	// Lease applies ops, in order, each atomically on its key's bucket.
	// An error means some ops may not have been applied: their Granted is
	// 0, and a caller must treat their Return and Debt as possibly lost.
	Lease(ctx context.Context, ops []LeaseOp) error
	// Take takes n tokens from key's bucket if they are all there (strict
	// mode), returning whether it did, the whole tokens left, and when
	// denied the time until n will be there.
	Take(ctx context.Context, key string, lim Limit, n int64) (ok bool, remaining int64, retry time.Duration, err error)
	// Heartbeat records that server is alive until ttl from now and
	// returns the number of servers alive (at least 1: this one).
	Heartbeat(ctx context.Context, server string, ttl time.Duration) (int, error)
	// Leave forgets server's heartbeat.
	Leave(ctx context.Context, server string) error
}

// MemStore is a Store in one process: the fleet buckets of servers that
// share one process (a simulation, or tests), on the same GCRA model as
// the Redis store, under one mutex. The zero value is not usable: call
// NewMemStore. Safe for concurrent use.
type MemStore struct {
	mu    sync.Mutex
	clock func() int64
	tat   map[string]float64 // theoretical arrival time, ns
	beats map[string]int64   // server -> expiry, ns
}

// NewMemStore returns an empty MemStore reading clock (nanoseconds; nil:
// the wall clock).
func NewMemStore(clock func() int64) *MemStore {
	if clock == nil {
		clock = func() int64 { return time.Now().UnixNano() }
	}
	return &MemStore{clock: clock, tat: map[string]float64{}, beats: map[string]int64{}}
}

// gcra is one lease operation on a bucket whose theoretical arrival time
// is tat, at now, in the units of iv (time per token): the model every
// store implements (the Redis scripts are the same arithmetic in Lua).
func gcra(tat, now, iv, burst float64, ret, debt, want, least int64) (newTat float64, granted int64, retry float64) {
	tat = max(tat, now)
	if ret > 0 {
		tat = max(now, tat-float64(ret)*iv)
	}
	tat += float64(debt) * iv
	avail := int64(math.Floor((now+burst*iv-tat)/iv + 1e-9))
	if want > 0 && avail >= least {
		granted = min(want, avail)
	}
	tat += float64(granted) * iv
	if granted < want {
		retry = max(0, tat+float64(least)*iv-burst*iv-now)
	}
	return tat, granted, retry
}

// Lease implements Store.
func (m *MemStore) Lease(ctx context.Context, ops []LeaseOp) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := float64(m.clock())
	for i := range ops {
		o := &ops[i]
		iv := 1e9 / o.Limit.Rate
		tat, ok := m.tat[o.Key]
		if !ok {
			tat = now
		}
		var r float64
		tat, o.Granted, r = gcra(tat, now, iv, o.Limit.Burst, o.Return, o.Debt, o.Want, max(1, o.Least))
		o.Retry = time.Duration(r)
		if tat > now {
			m.tat[o.Key] = tat
		} else {
			delete(m.tat, o.Key)
		}
	}
	return nil
}

// Take implements Store.
func (m *MemStore) Take(ctx context.Context, key string, lim Limit, n int64) (bool, int64, time.Duration, error) {
	ops := []LeaseOp{{Key: key, Limit: lim, Want: n, Least: n}}
	if err := m.Lease(ctx, ops); err != nil {
		return false, 0, 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := float64(m.clock())
	iv := 1e9 / lim.Rate
	tat, ok := m.tat[key]
	if !ok {
		tat = now
	}
	left := int64(math.Floor((now + lim.Burst*iv - max(tat, now)) / iv))
	return ops[0].Granted == n, max(0, left), ops[0].Retry, nil
}

// Heartbeat implements Store.
func (m *MemStore) Heartbeat(ctx context.Context, server string, ttl time.Duration) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock()
	m.beats[server] = now + int64(ttl)
	n := 0
	for s, exp := range m.beats {
		if exp <= now {
			delete(m.beats, s)
			continue
		}
		n++
	}
	return n, nil
}

// Leave implements Store.
func (m *MemStore) Leave(ctx context.Context, server string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.beats, server)
	return nil
}
