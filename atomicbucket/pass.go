package atomicbucket

// Snapshot is the configuration a Limit has at one moment (its rate, burst
// and the anchor of its virtual clock). A Limit replaces its configuration
// whole on each reconfiguration, so everything read from one Snapshot is
// consistent. It is a small value, safe to copy and to share.
type Snapshot struct{ p *params }

// Snapshot returns the configuration in effect now.
func (l *Limit) Snapshot() Snapshot { return Snapshot{l.p.Load()} }

// Pass is a Snapshot resolved at one clock reading for takes of n tokens:
// what a structure that keeps bucket words of its own (package shardmap)
// needs to decide a take that passes inline, in its own CompareAndSwap
// loop. Snapshot, PassAt, IsFull, NextFull and NextPartial all inline, so
// such a take calls nothing: on random keys, every instruction between one
// take's cache miss and the next take's delays the next, and a call with
// the spills around it costs more than the decision (see shardmap's
// BenchmarkTakeAnatomy).
//
// Next (NextFull or NextPartial, as IsFull says) decides passes only. A
// take it refuses (a denial or an invalid n, where TakeLiveAt has more to
// say) is decided again by TakeLiveAt, which agrees with Next on every
// pass. A Pass is a plain value.
type Pass struct {
	p *params
	v uint64 // the virtual clock at the reading, in units
	n uint64 // tokens to take, as given: valid when 1 ≤ n ≤ maxTake (see units)
}

// PassAt returns the Pass of takes of n tokens at now (the caller's clock,
// the Limit's). Like TakeLiveAt it converts the clock once.
func (s Snapshot) PassAt(now int64, n uint64) Pass {
	// Not params.virtual: the fraction it also returns puts PassAt over
	// Go's inlining budget of 80.
	return Pass{s.p, s.p.whole(s.p.clock(now)), n}
}

// units returns the Pass's n in units (shift is the Limit's), an invalid n
// (0, which wraps, or above maxTake) as maxTake+1 tokens, more than the
// burst, which no take passes. PassAt leaves n as given: a take of one
// token from a full bucket (NextFull), the commonest, never needs this.
func (ps Pass) units(shift uint) int64 { return int64((min(ps.n-1, ps.p.maxTake) + 1) << shift) }

// IsFull reports whether a bucket whose word is old is full at the Pass's
// reading (as Limit.IsFull).
func (ps Pass) IsFull(old uint64) bool { return int64(ps.v-old) >= int64(ps.p.capUnits) }

// NextFull is Next for a bucket that IsFull, computed from the Pass alone:
// a caller that branches on IsFull and calls NextFull there gives a full
// bucket (the common case: a key idle since its last take) a new word that
// does not wait for the load of the old one, as a conditional move on
// fullness would make it (on random keys, that cost a take about 5%:
// BenchmarkKeyed/1M/serial in package bench).
func (ps Pass) NextFull() (next uint64, r Result, ok bool) {
	if ps.n == 1 { // precomputed: no shift, no subtraction, always a pass
		return ps.v - ps.p.oneLeft, Result{meta: ps.p.oneMeta}, true
	}
	shift := ps.p.shift & 63                       // the mask spares Go's guard for shifts of 64 or more
	left := int64(ps.p.capUnits) - ps.units(shift) // negative for an invalid n
	return ps.v - uint64(left), allowed(uint64(left) >> shift), left >= 0
}

// NextPartial is Next for a bucket that is not full (IsFull reports false;
// a full word would be over-credited): the pass path's other branch.
func (ps Pass) NextPartial(old uint64) (next uint64, r Result, ok bool) {
	shift := ps.p.shift & 63 // the mask spares Go's guard for shifts of 64 or more
	k := ps.units(shift)
	level := int64(ps.v - old)
	if level < k {
		return 0, Result{}, false
	}
	return old + uint64(k), allowed(uint64(level-k) >> shift), true
}

// Next returns, for a bucket whose word is old, the word a take of the
// Pass's n stores and its Result, if the take passes; ok is false
// otherwise, and then next and r mean nothing. A caller that retires words
// with a reserved value (see TakeLiveAt) checks old and next against it
// itself. It is NextFull or NextPartial, as IsFull says; a caller on a hot
// path branches on IsFull itself, so that the two inline.
func (ps Pass) Next(old uint64) (next uint64, r Result, ok bool) {
	if ps.IsFull(old) {
		return ps.NextFull()
	}
	return ps.NextPartial(old)
}
