package core

import (
	"hash/maphash"
	"math"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	uatomic "go.uber.org/atomic"

	"github.com/sluicedev/sluice/atomicbucket"
	"github.com/sluicedev/sluice/internal/timesat"
	"github.com/sluicedev/sluice/shardmap"
)

// Limiter is a keyed rate limiter for millions of players: one token bucket
// per key (rate and burst shared by all keys, refill scaled by an adaptive
// factor), kept in a bounded shardmap.Map, with escalation from soft
// throttling to a hard lockout. Keys are uint64 (an account or session id),
// strings or network addresses (hashed with a per-limiter random seed). A
// take returns a Decision: allowed, or why not and for how long.
//
// Escalation: every ordinary denial of a key is a soft violation; the
// violations of a key are counted in a window that opens at its first one
// (SoftViolationWindow); reaching MaxSoftViolations inside one window locks
// the key out for LockoutDuration, during which every take is refused with
// Reason Lockout without touching the bucket. A key with a running window
// or lockout, or whose bucket is not full, is never evicted or swept, so
// key churn cannot reset a throttled or locked-out player.
//
// The zero value is not usable: make one with NewLimiter. A Limiter is safe
// for concurrent use. A take on a tracked key takes no lock and allocates
// nothing (string and netip.Addr keys included); a take on a new key locks
// one shard of the table. After Close every take fails closed (Reason
// Closed).
type Limiter struct {
	m       *shardmap.Map
	lim     *atomicbucket.Limit
	closed  atomic.Bool
	seed    maphash.Seed
	cfg     LimiterConfig   // with defaults
	stripes []limiterStripe // counters, one per shard

	mu       sync.Mutex      // serialises SetRefillFactor, janitors and Close
	factor   uatomic.Float64 // the refill factor
	janitors []*Janitor
}

// limiterStripe holds the limiter's counters of one shard, on its own cache
// lines, so that denials of keys in different shards never contend.
type limiterStripe struct {
	limiterCounters
	_ [(128 - unsafe.Sizeof(limiterCounters{})%128) % 128]byte
}

type limiterCounters struct {
	soft      atomic.Uint64 // soft violations recorded
	lockouts  atomic.Uint64 // lockouts started
	fullDeny  atomic.Uint64 // TableFull denials
	fullPass  atomic.Uint64 // TableFull passes (fail-open)
	oversized atomic.Uint64 // takes that can never pass
}

// NewLimiter validates cfg (see LimiterConfig for defaults) and returns an
// empty limiter anchored at cfg.Clock's current reading.
func NewLimiter(cfg LimiterConfig) (*Limiter, error) {
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	now := cfg.Clock()
	lim, err := atomicbucket.NewLimit(cfg.Rate, cfg.Burst, now)
	if err != nil {
		return nil, cfgErr("Rate", cfg.Rate, err.Error(), err)
	}
	m, err := shardmap.New(lim, shardmap.Config{MaxKeys: cfg.MaxKeys, Shards: cfg.Shards, EvictBackoff: cfg.EvictBackoff, Seed: cfg.HashSeed}, now)
	if err != nil {
		return nil, cfgErr("MaxKeys", cfg.MaxKeys, err.Error(), err)
	}
	l := &Limiter{
		m:       m,
		lim:     lim,
		seed:    maphash.MakeSeed(),
		cfg:     cfg,
		stripes: make([]limiterStripe, m.Shards()),
	}
	l.factor.Store(1)
	return l, nil
}

// Config returns the limiter's configuration, defaults filled in.
func (l *Limiter) Config() LimiterConfig { return l.cfg }

// TakeAt takes n tokens from key's bucket at now (nanoseconds on the
// limiter's clock). A new key starts with a full bucket.
func (l *Limiter) TakeAt(key uint64, now int64, n uint64) Decision {
	// closed is written once by Close; a take that loads it before Close
	// may still pass, every take that starts after Close returns fails.
	if l.closed.Load() {
		return Decision{Reason: Closed}
	}
	return l.takeOpen(key, now, n)
}

// takeOpen is TakeAt on a limiter found open.
func (l *Limiter) takeOpen(key uint64, now int64, n uint64) Decision {
	r, st := l.m.TakeAt(key, now, n)
	if st == shardmap.Taken && r.OK() {
		return Decision{Allowed: true, Remaining: r.Remaining()}
	}
	return l.refused(key, now, r, st)
}

// refused builds every decision but an ordinary pass, off the pass path.
//
//go:noinline
func (l *Limiter) refused(key uint64, now int64, r atomicbucket.Result, st shardmap.Status) Decision {
	switch st {
	case shardmap.Held:
		// The rest of the hold only: the bucket's own wait would cost a
		// held take a second lookup, a clock conversion and the wait's
		// reciprocal multiply, and a held take, the common case under a
		// flood, must stay cheap.
		return Decision{Reason: Lockout, RetryAfter: r.RetryAfter()}
	case shardmap.Full:
		st := &l.stripes[l.m.ShardOf(key)]
		if l.cfg.FailOpen {
			st.fullPass.Add(1)
			return Decision{Allowed: true, Reason: TableFull}
		}
		st.fullDeny.Add(1)
		// The map says when the shard's first key becomes evictable (its
		// bucket full again, its escalation mark expired), as its scan
		// found it. When it does not know, one fill time at the current
		// (possibly scaled) rate is when a throttled bucket is full again.
		wait := r.RetryAfter()
		if wait == 0 {
			wait = time.Duration(math.Ceil(l.lim.Burst() / l.lim.EffectiveRate() * 1e9))
		}
		return Decision{Reason: TableFull, RetryAfter: wait}
	}
	if r.Status() == atomicbucket.Invalid {
		l.stripes[l.m.ShardOf(key)].oversized.Add(1)
		return Decision{Reason: Oversize, Remaining: r.Remaining()}
	}
	d := Decision{Reason: l.cfg.DenyReason, RetryAfter: r.RetryAfter(), Remaining: r.Remaining()}
	if l.cfg.DisableEscalation {
		return d
	}
	return l.violate(key, now, d)
}

// violate records a soft violation of key at now and, at the limit, starts
// a lockout. The key's mark is updated with one CompareAndSwap (retried on
// a race), so concurrent denials each count once and exactly one of them
// starts the lockout.
func (l *Limiter) violate(key uint64, now int64, d Decision) Decision {
	var (
		started bool
		heldFor time.Duration
	)
	mk, ok := l.m.UpdateMark(key, func(old shardmap.Mark) (shardmap.Mark, bool) {
		started, heldFor = false, 0
		if rest, held := l.m.HeldAt(old, now); held {
			heldFor = rest // another denial started a lockout meanwhile
			return old, false
		}
		count, until := 0, timesat.Add(now, int64(l.cfg.SoftViolationWindow))
		if l.m.Active(old, now) { // a window is running
			count, until = old.Count(), l.m.Deadline(old)
		}
		if count++; count >= l.cfg.MaxSoftViolations {
			started = true
			return l.m.MakeMark(0, true, timesat.Add(now, int64(l.cfg.LockoutDuration))), true
		}
		return l.m.MakeMark(count, false, until), true
	})
	switch {
	case heldFor > 0:
		return Decision{Reason: Lockout, RetryAfter: heldFor, Remaining: d.Remaining}
	case !ok:
		return d // the key was removed meanwhile (it was idle): nothing to count
	}
	st := &l.stripes[l.m.ShardOf(key)]
	if started {
		st.lockouts.Add(1)
		// The hold as stored: its deadline is rounded up to the mark's
		// microsecond, so LockoutDuration alone could be up to 999ns short.
		hold, _ := l.m.HeldAt(mk, now)
		return Decision{Reason: Lockout, RetryAfter: max(hold, d.RetryAfter), Remaining: d.Remaining}
	}
	st.soft.Add(1)
	return d
}

// RefundAt gives n tokens back to key's bucket at now, never above the
// burst: the undo of a take that a later check of the same message refused,
// so a message's takes across layers are all-or-nothing. It does nothing for
// a key the limiter no longer tracks, and it never touches escalation state.
func (l *Limiter) RefundAt(key uint64, now int64, n uint64) {
	l.m.RefundAt(key, now, n)
}

// AllowAt takes one token from key's bucket at now.
func (l *Limiter) AllowAt(key uint64, now int64) Decision { return l.TakeAt(key, now, 1) }

// Take takes n tokens from key's bucket now, on the limiter's clock.
func (l *Limiter) Take(key uint64, n uint64) Decision { return l.TakeAt(key, l.cfg.Clock(), n) }

// Allow takes one token from key's bucket now, on the limiter's clock.
func (l *Limiter) Allow(key uint64) Decision { return l.TakeAt(key, l.cfg.Clock(), 1) }

// StringKey returns the key a string maps to: its hash under the limiter's
// random seed. Distinct strings collide with probability 2^-64 per pair;
// string keys share the uint64 key space, so use one limiter per kind of key.
func (l *Limiter) StringKey(s string) uint64 { return maphash.String(l.seed, s) }

// AddrKey returns the key an address maps to: the hash of its 16-byte form
// under the limiter's seed. An IPv4-mapped IPv6 address is the same key as
// the IPv4 address (As16 gives both the same form, so no Unmap is needed);
// the zone is ignored.
func (l *Limiter) AddrKey(a netip.Addr) uint64 {
	b := a.As16()
	return maphash.Bytes(l.seed, b[:])
}

// TakeStringAt takes n tokens from the bucket of string key s at now.
func (l *Limiter) TakeStringAt(s string, now int64, n uint64) Decision {
	return l.TakeAt(l.StringKey(s), now, n)
}

// TakeString takes n tokens from the bucket of string key s now.
func (l *Limiter) TakeString(s string, n uint64) Decision {
	return l.TakeAt(l.StringKey(s), l.cfg.Clock(), n)
}

// TakeAddrAt takes n tokens from the bucket of address a at now.
func (l *Limiter) TakeAddrAt(a netip.Addr, now int64, n uint64) Decision {
	return l.TakeAt(l.AddrKey(a), now, n)
}

// TakeAddr takes n tokens from the bucket of address a now.
func (l *Limiter) TakeAddr(a netip.Addr, n uint64) Decision {
	return l.TakeAt(l.AddrKey(a), l.cfg.Clock(), n)
}

// Delete forgets key (its bucket, soft violations and lockout): call it
// when what the key stands for ends. It reports whether key was tracked.
// Deleting a throttled or locked-out key resets it; keys that must outlive
// a connection (accounts) should be left to the sweep instead.
func (l *Limiter) Delete(key uint64) bool { return l.m.Delete(key) }

// DeleteString forgets string key s.
func (l *Limiter) DeleteString(s string) bool { return l.m.Delete(l.StringKey(s)) }

// DeleteAddr forgets address a.
func (l *Limiter) DeleteAddr(a netip.Addr) bool { return l.m.Delete(l.AddrKey(a)) }

// LevelAt returns the tokens key's bucket holds at now (the burst for an
// untracked key, which would start full), without changing anything.
func (l *Limiter) LevelAt(key uint64, now int64) float64 {
	if lv, ok := l.m.LevelAt(key, now); ok {
		return lv
	}
	return l.lim.Burst()
}

// LockedOutAt reports whether key is locked out at now, and for how long.
func (l *Limiter) LockedOutAt(key uint64, now int64) (time.Duration, bool) {
	mk, ok := l.m.MarkOf(key)
	if !ok {
		return 0, false
	}
	return l.m.HeldAt(mk, now)
}

// Len returns the number of keys tracked.
func (l *Limiter) Len() int { return l.m.Len() }

// SetRefillFactor scales the refill rate to f·Rate from now on, for a server
// that sheds load: f in (0, 1]; 1 restores the configured rate. Every
// bucket keeps the level it has at now (atomicbucket.Limit.SetRateAt). A
// factor the bucket's scale cannot hold is refused: one that makes the fill
// time exceed atomicbucket.MaxFillTime, or a cut of 2^39 to 2^40 times or
// more, depending on where Rate fell in its fixed-point scale (see
// atomicbucket.Limit.SetRateAt).
func (l *Limiter) SetRefillFactor(f float64, now int64) error {
	if math.IsNaN(f) || f <= 0 || f > 1 {
		return cfgErr("RefillFactor", f, "must be in (0, 1]", nil)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.lim.SetRateAt(l.cfg.Rate*f, now); err != nil {
		return cfgErr("RefillFactor", f, err.Error(), err)
	}
	l.factor.Store(f)
	return nil
}

// RefillFactor returns the current refill factor.
func (l *Limiter) RefillFactor() float64 { return l.factor.Load() }

// SweepAt forgets every idle key (bucket full at now, no soft-violation
// window or lockout running) and returns how many. It locks one shard at a
// time; takes go on meanwhile.
func (l *Limiter) SweepAt(now int64) int { return l.m.SweepAt(now) }

// Sweep is SweepAt on the limiter's clock.
func (l *Limiter) Sweep() int { return l.m.SweepAt(l.cfg.Clock()) }

// Janitor is a goroutine that sweeps a limiter periodically. Start one with
// Limiter.StartJanitor; stop it with Stop (or Limiter.Close). It is safe for
// concurrent use.
type Janitor struct {
	l    *Limiter // whose list Stop takes the janitor off
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// StartJanitor starts a goroutine that calls Sweep every interval (1s if
// interval ≤ 0) until the returned Janitor is stopped or the limiter is
// closed.
func (l *Limiter) StartJanitor(interval time.Duration) *Janitor {
	if interval <= 0 {
		interval = time.Second
	}
	j := &Janitor{l: l, stop: make(chan struct{}), done: make(chan struct{})}
	l.mu.Lock()
	if l.closed.Load() {
		l.mu.Unlock()
		close(j.done)
		j.once.Do(func() {})
		return j
	}
	l.janitors = append(l.janitors, j)
	l.mu.Unlock()
	go func() {
		defer close(j.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-j.stop:
				return
			case <-t.C:
				l.Sweep()
			}
		}
	}()
	return j
}

// Stop ends the janitor and waits for it. It may be called more than once.
func (j *Janitor) Stop() {
	j.once.Do(func() {
		close(j.stop)
		if l := j.l; l != nil {
			l.mu.Lock()
			l.janitors = slices.DeleteFunc(l.janitors, func(x *Janitor) bool { return x == j })
			l.mu.Unlock()
		}
	})
	<-j.done
}

// Close makes every later take fail closed with Reason Closed and stops the
// limiter's janitors. It always returns nil and may be called more than
// once.
func (l *Limiter) Close() error {
	l.mu.Lock()
	l.closed.Store(true)
	js := l.janitors
	l.janitors = nil
	l.mu.Unlock()
	for _, j := range js {
		j.Stop()
	}
	return nil
}

// Closed reports whether Close was called.
func (l *Limiter) Closed() bool { return l.closed.Load() }
