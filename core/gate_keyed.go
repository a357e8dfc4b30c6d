package core

import (
	"net/netip"
	"time"
)

// keyedBuckets is what the gate's account, address and match layers need
// from a keyed limiter: take n tokens from the bucket of a key, and give
// them back exactly when a later layer of the same message denies.
// Implementations must be safe for concurrent use, and lock- and
// allocation-free for keys already tracked. The gate runs every keyed layer
// on core.Limiter (limiterKeyed), or on the exported KeyedLayer that
// WithKeyedLayer gives it (externalKeyed); the interface keeps the gate's
// needs explicit and lets tests stand in for it.
type keyedBuckets interface {
	// takeAt takes n tokens from key's bucket at now. A key seen for the
	// first time gets a full bucket; when it cannot be tracked the result
	// has reason TableFull.
	takeAt(key uint64, now int64, n uint64) keyedResult
	// refundAt returns n tokens taken by takeAt at the same now, never
	// filling the bucket above its burst.
	refundAt(key uint64, now int64, n uint64)
	// levelAt returns the tokens key's bucket holds at now, and whether the
	// key is tracked (an untracked key is full).
	levelAt(key uint64, now int64) (float64, bool)
	// sweep forgets keys whose buckets are full again.
	sweep(now int64)
	// size returns the number of tracked keys.
	size() int
}

// keyedResult is the outcome of a keyed take. A pass with reason TableFull
// is a key that could not be tracked, let through by a fail-open policy:
// nothing was taken. A denial always has a reason: the layer's own
// (AccountLimit, AddressLimit or MatchLimit) for an empty bucket or a cost
// above its burst, or TableFull, Lockout (keyed escalation) or Closed.
type keyedResult struct {
	retry  time.Duration
	reason Reason
	ok     bool
}

// addrKey maps a source address to the key of its pre-auth bucket: an IPv4
// address (or IPv4-mapped IPv6) to itself under a prefix no IPv6 unicast /64
// uses, an IPv6 address to its /64, since one host commonly owns a whole
// /64 and could otherwise pick a fresh key per connection.
func addrKey(a netip.Addr) uint64 {
	a = a.Unmap()
	if a.Is4() {
		b := a.As4()
		return 0xffff_ffff_0000_0000 | uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])
	}
	b := a.As16()
	var k uint64
	for _, c := range b[:8] {
		k = k<<8 | uint64(c)
	}
	return k
}
