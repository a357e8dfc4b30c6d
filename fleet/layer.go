package fleet

import (
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sluicedev/sluice/core"
)

// OnFailure is what a layer does with a take its lease cannot cover while
// the fleet store is unavailable.
type OnFailure uint8

const (
	// FailLocal takes from a local bucket with the layer's rate and burst
	// ÷ the live servers (the local share). The default.
	FailLocal OnFailure = iota
	// FailDeny denies it.
	FailDeny
	// FailAllow lets it through.
	FailAllow
)

// ParseOnFailure reads the policy's fleet.onFailure: local, deny or allow.
func ParseOnFailure(s string) (OnFailure, bool) {
	switch s {
	case "", "local":
		return FailLocal, true
	case "deny":
		return FailDeny, true
	case "allow":
		return FailAllow, true
	}
	return 0, false
}

// Layer is one keyed layer of a gate (core.KeyedLayer) whose buckets are
// shared by the fleet: each key's take spends tokens this server leased
// from the key's fleet bucket, with one CompareAndSwap on the key's lease
// word, lock-free and allocation-free, with no I/O. The Fleet's refresher
// tops leases up, charges tokens spent on credit, and returns idle leases;
// while the store is unavailable a take the lease cannot cover follows
// OnFailure.
//
// A key's first take after it has no lease (new, or returned idle) is
// served on credit: the server grants itself one lease and the refresher
// charges it to the fleet bucket as a debt at its next round, whatever the
// bucket holds, so an honest player's first message never waits for Redis
// and every token is still accounted. A denial writes nothing; only takes
// decided by OnFailure are counted (Stats.Fallback).
//
// Build Layers with Fleet.Layer (or through Fleet.GateOptions); the zero
// value is not usable. Safe for concurrent use. Keyed escalation (lockout)
// is not applied by a fleet layer: the gate's strikes still are.
type Layer struct {
	f        *Fleet
	path     string
	reason   core.Reason
	limit    Limit
	lease    uint64
	maxCost  uint64
	open     bool // a full table lets a key through untracked
	onFail   OnFailure
	tab      *table
	share    atomic.Pointer[core.Limiter] // the local share; replaced when the live count changes
	shareCfg core.LimiterConfig
	prefix   string

	defaultRetry time.Duration
	active       []*slot       // the refresher's: the slots holding a lease
	fallback     atomic.Uint64 // takes decided by OnFailure
}

var _ core.KeyedLayer = (*Layer)(nil)

// defaultLease is a layer's lease when the policy sets none: an eighth
// of the burst, at least 1.
func defaultLease(burst float64) uint64 { return uint64(max(1, math.Floor(burst/8))) }

// TakeAt implements core.KeyedLayer.
func (l *Layer) TakeAt(key uint64, now int64, n uint64) core.Decision {
	if n == 0 || n > l.maxCost {
		return core.Decision{Reason: core.Oversize}
	}
	s := l.tab.find(key)
	if s == nil {
		if s = l.tab.insert(key); s == nil {
			if l.open {
				return core.Decision{Allowed: true, Reason: core.TableFull}
			}
			return core.Decision{Reason: core.TableFull, RetryAfter: l.defaultRetry}
		}
	}
	for {
		w := s.word.Load()
		if w&live != 0 {
			st := w & stockMask
			if st < n {
				return l.uncovered(key, now, n, s)
			}
			if s.word.CompareAndSwap(w, w-n) {
				return core.Decision{Allowed: true, Remaining: uint32(min(st-n, math.MaxUint32))}
			}
			continue
		}
		if !l.f.healthy.Load() {
			return l.uncovered(key, now, n, s)
		}
		// No lease: take one on credit (see the type's doc).
		c := max(l.lease, n)
		s.credit.Store(c)
		if s.word.CompareAndSwap(w, live|(c-n)) {
			l.tab.push(s)
			return core.Decision{Allowed: true, Remaining: uint32(min(c-n, math.MaxUint32))}
		}
	}
}

// uncovered decides a take the lease cannot cover: a denial until the
// refresher's next lease while the store is healthy, else OnFailure.
func (l *Layer) uncovered(key uint64, now int64, n uint64, s *slot) core.Decision {
	if l.f.healthy.Load() {
		return core.Decision{Reason: l.reason, RetryAfter: time.Duration(max(s.retry.Load(), int64(l.defaultRetry)))}
	}
	l.fallback.Add(1)
	switch l.onFail {
	case FailAllow:
		return core.Decision{Allowed: true}
	case FailDeny:
		return core.Decision{Reason: l.reason, RetryAfter: l.defaultRetry}
	}
	return l.share.Load().TakeAt(key, now, n)
}

// RefundAt implements core.KeyedLayer: the tokens go back to the key's
// lease, or, while the store is unavailable (when a take beyond the lease
// was the local share's), to the local share: a refund never turns a
// share's token into a leased one, which the fleet bucket never granted.
func (l *Layer) RefundAt(key uint64, now int64, n uint64) {
	s := l.tab.find(key)
	if s == nil {
		return
	}
	if !l.f.healthy.Load() {
		l.share.Load().RefundAt(key, now, n)
		return
	}
	for {
		w := s.word.Load()
		if w&live == 0 {
			return
		}
		if s.word.CompareAndSwap(w, w+n) {
			return
		}
	}
}

// LevelAt implements core.KeyedLayer: the unspent tokens of the key's
// lease on this server (not the fleet bucket's level, which is in the
// store).
func (l *Layer) LevelAt(key uint64, now int64) float64 {
	s := l.tab.find(key)
	if s == nil {
		return l.limit.Burst
	}
	return float64(s.word.Load() & stockMask)
}

// SweepAt implements core.KeyedLayer. A fleet layer forgets no key (see
// table); the refresher returns idle leases. It returns 0.
func (l *Layer) SweepAt(now int64) int { return 0 }

// Len implements core.KeyedLayer.
func (l *Layer) Len() int {
	n := int(l.tab.n.Load())
	if l.tab.zeroU.Load() {
		n++
	}
	return n
}

// Limit returns the fleet bucket's rate and burst.
func (l *Layer) Limit() Limit { return l.limit }

// Lease returns the tokens one lease asks for.
func (l *Layer) Lease() uint64 { return l.lease }

// setShare makes the local share the layer's rate and burst ÷ live (the
// burst at least 1). Its buckets start full: it serves only while the
// store is unavailable, and the change is rare (the live count moved).
func (l *Layer) setShare(live int) error {
	c := l.shareCfg
	c.Rate, c.Burst = l.limit.Rate/float64(live), max(1, math.Floor(l.limit.Burst/float64(live)))
	sh, err := core.NewLimiter(c)
	if err != nil {
		return err
	}
	l.share.Store(sh)
	return nil
}

// keyName is the Redis key of a limit key's fleet bucket: the whole limit
// key in a hash tag, so the bucket is one Cluster slot.
func (l *Layer) keyName(key uint64) string {
	return l.prefix + ":{" + l.path + ":" + strconv.FormatUint(key, 10) + "}"
}
