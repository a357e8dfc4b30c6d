package atomicbucket

import (
	"math/bits"
	"sync/atomic"
)

// Decide computes, without writing anything, what a take of n tokens at now
// does to a bucket whose word is old: the decision, and the word to store
// for it. next == old means there is nothing to store (a denial, or an
// invalid n). A caller that keeps words in its own structure (package
// shardmap) stores next with one CompareAndSwap against old, and calls
// Decide again if that CAS fails; TakeAt is that loop, written out.
//
// A denial's next differs from old only for the rebase after a backwards
// clock jump described in the package doc.
func (l *Limit) Decide(old uint64, now int64, n uint64) (next uint64, r Result) {
	p := l.p.Load()
	if n-1 >= p.maxTake { // n == 0 wraps to MaxUint64
		return old, Result{Status: Invalid}
	}
	// v, frac := p.virtual(now), written out: the call would not inline.
	var v, frac uint64
	if now >= p.t0 {
		hi, lo := bits.Mul64(uint64(now-p.t0), p.rho)
		v, frac = p.v0+(hi<<(64-rhoFracBits)|lo>>rhoFracBits), lo&(1<<rhoFracBits-1)
	} else {
		v, frac = p.virtualBefore(now)
	}
	k := n << p.shift
	capUnits := int64(p.capUnits)
	level := int64(v - old)
	base := old
	if level >= capUnits {
		// Full: the empty point follows the clock.
		base, level = v-uint64(capUnits), capUnits
	}
	if level >= int64(k) {
		return base + k, Result{Status: Allowed, Remaining: uint32(uint64(level-int64(k)) >> p.shift)}
	}
	if level < -int64(p.stepUnits) {
		// More than a fill time and StepBack before the empty point: the
		// clock jumped backwards. Rebase to empty at now.
		return v, p.deny(0, k, frac)
	}
	return old, p.deny(level, k, frac)
}

// TakeAt takes n tokens from the bucket word w at time now (nanoseconds on
// the caller's clock, the same clock the Limit was made with).
//
// On success it stores the new word with one CompareAndSwap, retrying only
// when another take changed the word in between. A denial only reads, except
// for the rebase after a backwards clock jump described in the package doc.
func (l *Limit) TakeAt(w *atomic.Uint64, now int64, n uint64) Result {
	// This is the loop of Decide and CompareAndSwap with Decide written out,
	// so the clock is converted once however often the CAS is retried, and
	// no call sits on the pass path. lo keeps the product's low word: the
	// fraction of a unit that a denial's retry time needs is one AND away.
	p := l.p.Load()
	if n-1 >= p.maxTake {
		return Result{Status: Invalid}
	}
	var v, lo uint64
	if now >= p.t0 {
		var hi uint64
		hi, lo = bits.Mul64(uint64(now-p.t0), p.rho)
		v = p.v0 + (hi<<(64-rhoFracBits) | lo>>rhoFracBits)
	} else {
		v, lo = p.virtualBefore(now) // lo: the fraction, below 2^60
	}
	k := n << p.shift
	capUnits := int64(p.capUnits)
	for {
		old := w.Load()
		level := int64(v - old)
		base := old
		if level >= capUnits {
			base, level = v-uint64(capUnits), capUnits
		}
		if level < int64(k) {
			if level < -int64(p.stepUnits) {
				// Clock jumped backwards: rebase, as in Decide; if the CAS
				// loses, the word moved and is read again.
				if !w.CompareAndSwap(old, v) {
					continue
				}
				level = 0
			}
			return p.deny(level, k, lo&(1<<rhoFracBits-1))
		}
		if w.CompareAndSwap(old, base+k) {
			return Result{Status: Allowed, Remaining: uint32(uint64(level-int64(k)) >> p.shift)}
		}
	}
}

// Refund gives back n tokens taken from a bucket whose word is old, at now:
// the word to store. The level never rises above the burst, so a refund
// after the bucket refilled on its own is partly or wholly absorbed. Like
// Decide it writes nothing; RefundAt is the CAS loop.
func (l *Limit) Refund(old uint64, now int64, n uint64) uint64 {
	p := l.p.Load()
	v, _ := p.virtual(now)
	next := old - n<<p.shift
	if int64(v-next) > int64(p.capUnits) {
		next = v - p.capUnits
	}
	return next
}

// RefundAt gives back n tokens to the bucket word w at now (see Refund).
// The layered gate uses it to make a message's takes all-or-nothing.
func (l *Limit) RefundAt(w *atomic.Uint64, now int64, n uint64) {
	for {
		old := w.Load()
		next := l.Refund(old, now, n)
		if next == old || w.CompareAndSwap(old, next) {
			return
		}
	}
}
