package atomicbucket

import (
	"sync/atomic"
)

// Valid reports whether a take of n tokens could ever pass: n is at least
// 1 and at most the burst. A take of any other n is Invalid.
func (l *Limit) Valid(n uint64) bool { return n-1 < l.p.Load().maxTake } // n == 0 wraps

// Decide computes, without writing anything, what a take of n tokens at now
// does to a bucket whose word is old: the decision, and the word to store
// for it. next == old means there is nothing to store (a denial, or an
// invalid n). A caller that keeps words in its own structure stores next
// with one CompareAndSwap against old, and calls Decide again if that CAS
// fails; TakeAt is that loop, written out (and TakeLiveAt the one for words
// that can be retired).
//
// A denial's next differs from old only for the rebase after a backwards
// clock jump described in the package doc.
func (l *Limit) Decide(old uint64, now int64, n uint64) (next uint64, r Result) {
	p := l.p.Load()
	if n-1 >= p.maxTake { // n == 0 wraps to MaxUint64
		return old, InvalidTake()
	}
	v, _ := p.virtual(now)
	shift := p.shift & 63 // the mask spares the shifts below Go's guard for ≥ 64
	k := n << shift
	capUnits := int64(p.capUnits)
	level := int64(v - old)
	base := old
	if level >= capUnits {
		// Full: the empty point follows the clock.
		base, level = v-uint64(capUnits), capUnits
	}
	if level >= int64(k) {
		return base + k, allowed(uint64(level-int64(k)) >> shift)
	}
	next = old
	if level < -int64(p.stepUnits) {
		// More than a fill time and StepBack before the empty point: the
		// clock jumped backwards. Rebase to empty at now.
		next, level = v, 0
	}
	return next, denied(p, now, uint64(int64(k)-level), uint64(max(level, 0))>>shift)
}

// TakeAt takes n tokens from the bucket word w at time now (nanoseconds on
// the caller's clock, the same clock the Limit was made with).
//
// On success it stores the new word with one CompareAndSwap, retrying only
// when another take changed the word in between. A denial only reads, except
// for the rebase after a backwards clock jump described in the package doc.
func (l *Limit) TakeAt(w *atomic.Uint64, now int64, n uint64) Result {
	// This is the loop of Decide and CompareAndSwap with Decide written out,
	// so the clock is converted once however often the CAS is retried. It
	// calls nothing (virtual, allowed and denied inline, and the clock
	// needs no branch for readings before its anchor), so it is a leaf with
	// no stack frame: a call on any path would make every path pay for the
	// frame and the stack check.
	p := l.p.Load()
	if n-1 >= p.maxTake {
		return InvalidTake()
	}
	v, _ := p.virtual(now)
	shift := p.shift & 63
	k := n << shift
	capUnits := int64(p.capUnits)
	for {
		old := w.Load()
		level := int64(v - old)
		if level >= capUnits {
			// Full: the empty point follows the clock, and a valid n always
			// passes. The CompareAndSwap has an arm of its own so that the
			// word it stores does not wait for old: a select of the two
			// next words would put a compare and a conditional move between
			// the load and the CompareAndSwap.
			if w.CompareAndSwap(old, v-uint64(capUnits)+k) {
				return allowed(uint64(capUnits-int64(k)) >> shift)
			}
			continue
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
			return denied(p, now, uint64(int64(k)-level), uint64(max(level, 0))>>shift)
		}
		if w.CompareAndSwap(old, old+k) {
			return allowed(uint64(level-int64(k)) >> shift)
		}
	}
}

// TakeLiveAt is TakeAt on a word that its owner retires by storing dead
// into it (package shardmap marks removed and moved slots so). If it finds
// dead it takes nothing and reports false. (An invalid n is reported
// Invalid, and true, without reading w.) It never stores dead itself: a
// new word equal to it is stored one refill quantum emptier instead (the
// Result is the one computed before that nudge, which for that 1-in-2^64
// word may leave its Remaining one token high). So a take racing the
// retirement either lands before it or fails its CompareAndSwap and finds
// dead: nothing is ever written into a retired word.
func (l *Limit) TakeLiveAt(w *atomic.Uint64, now int64, n uint64, dead uint64) (Result, bool) {
	return l.Snapshot().PassAt(now, n).TakeLiveAt(w, now, dead)
}

// TakeLiveAt is Limit.TakeLiveAt for the Pass's n at now, which must be
// the reading the Pass was made at: the loop that decides every take, on
// the clock the Pass already converted. A caller whose inline NextFull or
// NextPartial found no pass calls it to decide the take exactly (a denial,
// with its wait) without converting the clock a second time.
//
// It decides a pass with NextFull and NextPartial, which inline, and
// writes out only the denial: it stays a leaf, since a keyed take's cost
// is mostly calls and cache misses.
func (ps Pass) TakeLiveAt(w *atomic.Uint64, now int64, dead uint64) (Result, bool) {
	p := ps.p
	if ps.n-1 >= p.maxTake { // an invalid n: 0 (which wraps) or above the burst
		return InvalidTake(), true // decided without reading w
	}
	for {
		old := w.Load()
		if old == dead {
			return Result{}, false
		}
		var next uint64
		var r Result
		var ok bool
		if ps.IsFull(old) {
			next, r, ok = ps.NextFull()
		} else {
			next, r, ok = ps.NextPartial(old)
		}
		if !ok { // a denial: n is valid, so the bucket lacks tokens
			shift := p.shift & 63
			k, level := int64(ps.n<<shift), int64(ps.v-old)
			if level < -int64(p.stepUnits) {
				// The clock jumped backwards: rebase, as in TakeAt; if the
				// CompareAndSwap loses, the word moved and is read again.
				if next = ps.v; next == dead {
					next++
				}
				if !w.CompareAndSwap(old, next) {
					continue
				}
				level = 0
			}
			return denied(p, now, uint64(k-level), uint64(max(level, 0))>>shift), true
		}
		if next == dead {
			next++
		}
		if w.CompareAndSwap(old, next) {
			return r, true
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
	level := int64(v - old)
	if level >= int64(p.capUnits) {
		return v - p.capUnits // full already: capped
	}
	// The level becomes min(cap, level + n). What the bucket lacks of full,
	// cap − level, is exact in uint64 (below 2^63 + 2^62 even for a level
	// far below empty at a stale reading); comparing n with it in tokens
	// keeps n<<shift from wrapping.
	lack := p.capUnits - uint64(level)
	if n > (lack-1)>>p.shift { // n<<shift ≥ lack
		return v - p.capUnits
	}
	return old - n<<p.shift
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
