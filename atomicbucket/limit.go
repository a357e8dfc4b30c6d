// Package atomicbucket is a token bucket whose whole state is one 64-bit
// word, updated by a single CompareAndSwap when a take succeeds. Denials only
// read. Time is always a parameter (nanoseconds on the caller's clock), so the
// bucket is deterministic in tests and as cheap as the caller's clock allows.
//
// # Use
//
// A [Bucket] is one limit: make it with [New] (or [NewAt] on a clock of
// your own), take with [Bucket.TakeAt] (or [Bucket.Take], which reads
// [Nanotime]) and read the [Result]:
//
//	chat, err := atomicbucket.New(10, 20) // 10 per second, bursts of 20
//	if err != nil {
//		return err // a *ConfigError naming rate or burst
//	}
//	r := chat.TakeAt(atomicbucket.Nanotime(), 1)
//	switch r.Status() {
//	case atomicbucket.Allowed: // r.Remaining() whole tokens are left
//	case atomicbucket.Denied: // r.RetryAfter() until one token is there
//	case atomicbucket.Invalid: // n was 0 or above the burst: it never passes
//	}
//
// That is all most callers need. A server with many keys uses package
// core's Limiter (or Gate), which keeps one word per key in package
// shardmap; the parts of this package it builds on are listed under
// "Building blocks for keyed tables" below.
//
// # Model
//
// A bucket of rate r tokens per second and burst b holds up to b tokens and
// refills continuously. A new bucket is full. Taking n tokens at time now first
// credits the time elapsed (capped at b), then consumes n if at least n are
// there. A denial consumes nothing and writes nothing. A take of n = 0 or
// n > b can never pass and is reported as [Invalid], distinct from [Denied].
//
// # Encoding
//
// The state is the virtual-time form of a token bucket (GCRA), counted in
// tokens rather than seconds:
//
//   - A [Limit] keeps a virtual clock v(t) = v0 + ρ·(t − t0), in units of
//     2^-F token, where ρ = r·2^F / 1e9 units per nanosecond is a fixed-point
//     number with 60 fractional bits and v is the floor of the exact product.
//     It is exact for every int64 reading t, before t0 or after.
//     F is chosen per limit at construction: the largest value with ρ ≤ 1
//     (so r·2^F ≤ 1e9) and b·2^F ≤ 2^62. F is 24 at 30/s, 11 at 480,000/s
//     and 0 above 5e8/s. One unit, 2^-F token, is the refill quantum.
//   - The word of each bucket is E, the virtual time at which the bucket is
//     empty. The level at t is min(b·2^F, v(t) − E) units; a take of n
//     tokens passes when the level is at least n·2^F units and stores
//     E' = max(E, v(t) − b·2^F) + n·2^F.
//   - Arithmetic on v and E wraps modulo 2^64; v(t) − E is read as a signed
//     64-bit number, so a bucket is exact while it is touched at least once
//     per 2^63 units of virtual time: 292 years at ρ = 1, and never under 18
//     years (ρ may grow to 16 by [Limit.SetRateAt]). The epoch is the time the
//     Limit was made (t0), so the caller's clock may use any epoch.
//
// Because credit is v(t) − v(t_prev) with v computed from absolute time,
// rounding never accumulates: over any interval [t0, t1] with demand always
// above supply, the accepted tokens are at least r·(t1−t0) − 1, and never
// more than b + r·(t1−t0) plus one refill quantum (the fraction of a unit a
// full bucket drops when it caps) plus the rounding of ρ, which is upward and
// worth less than one unit per 36 years.
//
// Rounding rule: a decision is exactly that of a continuous bucket whose
// level is credited in whole units on the clock v above; at an instant where
// the exact level is an integer number of units the take sees that integer.
//
// # Clocks
//
// Every take has an At form taking now in nanoseconds. [Nanotime] is the
// monotonic clock; [CoarseClock] is a shared tick advanced by a goroutine that
// the caller starts and stops. A reading earlier than the bucket's last
// update (a caller-passed clock that steps back, or two goroutines racing
// with slightly different readings) credits nothing and changes nothing: the
// take is judged on the level the bucket had at that earlier time, and once
// the clock is back the bucket is exactly where it would have been; until
// then, takes wait for it (RetryAfter counts the way back).
//
// A reading more than one fill time (b/r) plus StepBack (a day) before the
// bucket's empty point is taken for a clock that was reset backwards: the
// bucket rebases itself to empty at the new time, so it keeps working on
// the new timeline instead of refusing until the old one comes back. That is
// the one case in which a denial writes. Its price: should the clock then
// return to the old timeline, the bucket credits the time in between (at
// most one burst). A stale reading more than a day old is what it takes to
// trigger it; a monotonic clock never does.
//
// # Building blocks for keyed tables
//
// A table of many buckets (package shardmap) keeps one word per key and
// shares one configuration among them: a [Limit] (from [NewLimit]) is that
// configuration, and its methods decide on a word the caller keeps:
// [Limit.TakeAt] and [Limit.TakeLiveAt] on an atomic.Uint64,
// [Limit.Decide] on a value for the caller's own CompareAndSwap,
// [Limit.FullWord] for a new key, [Limit.IsFull] and [Limit.FullIn] for
// eviction, [Limit.Refund] to give back an all-or-nothing take, and
// [Limit.Snapshot] with [Pass] to decide a passing take inline in the
// caller's loop. [DeniedFor] and [InvalidTake] are the results a layer above
// a bucket returns for reasons of its own. A [Bucket] is exactly a Limit
// and one word.
//
// All methods are safe for concurrent use.
package atomicbucket

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// Limits of the encoding. Every pair of rate and burst inside them is
// accepted; everything outside is refused at construction with an error that
// names the field.
const (
	// MaxRate is the highest rate, in tokens per second.
	MaxRate = 1e9
	// MaxBurst is the largest burst, in tokens.
	MaxBurst = 1e9
	// MaxFillTime is the longest time an empty bucket may take to fill
	// (burst ÷ rate). It bounds the slowest rate for a given burst: at
	// burst 1 the slowest rate is one token per 30 days.
	MaxFillTime = 30 * 24 * time.Hour
	// StepBack is how far behind a bucket's empty point, beyond one fill
	// time, a reading must be to count as a clock reset backwards rather
	// than a stale reading (a goroutine holding an old timestamp, a backlog
	// processed late). A day is far beyond any backlog a server survives;
	// below it, a stepped-back clock only waits.
	StepBack = 24 * time.Hour
	// maxRho bounds live rate increases: ρ stays below 16 units/ns, the most
	// a 4.60 fixed-point number holds.
	maxRho = 16
)

const rhoFracBits = 60

// minRho is the least ρ, in units of 2^-60 unit/ns: ρ is rounded up to a
// whole one, so at 2^20 it runs fast by under one part in a million.
const minRho = 1 << 20

// Errors returned by construction and reconfiguration. They are wrapped in a
// *ConfigError that names the field; test them with errors.Is.
var (
	ErrRate  = errors.New("atomicbucket: invalid rate")
	ErrBurst = errors.New("atomicbucket: invalid burst")
)

// ConfigError names the field that made a rate or burst unusable.
type ConfigError struct {
	Field  string  // "rate" or "burst"
	Value  float64 // the value given
	Reason string  // why it was refused
	err    error
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("atomicbucket: %s %v: %s", e.Field, e.Value, e.Reason)
}

// Unwrap returns ErrRate or ErrBurst.
func (e *ConfigError) Unwrap() error { return e.err }

func rateErr(v float64, reason string) error {
	return &ConfigError{Field: "rate", Value: v, Reason: reason, err: ErrRate}
}

func burstErr(v float64, reason string) error {
	return &ConfigError{Field: "burst", Value: v, Reason: reason, err: ErrBurst}
}

// DefaultBurst is the burst used when none is given: max(1, ceil(rate)).
func DefaultBurst(rate float64) float64 {
	return math.Max(1, math.Ceil(rate))
}

// params is one immutable configuration of a Limit. A reconfiguration builds
// a new one and publishes it with one atomic store; a Result keeps the one its
// decision used, to compute RetryAfter when asked.
//
// The virtual clock is v(t) = v0 + floor(f0 + ρ·(t − t0)), where f0 is the
// fraction of a unit (below 1) already earned at the anchor t0: 0 for a new
// Limit, the old clock's fraction after SetRateAt. A take computes it
// without a branch for readings before t0, and exactly for every int64
// reading: it multiplies ρ by the reading's offset from the least int64
// (never negative, always below 2^64) and subtracts the 128-bit constant
// c1:c0 = ρ·(t0 − MinInt64) − f0, in 128-bit two's complement. The result
// is f0 + ρ·(t − t0) in units of 2^-60, whatever its sign, and its bits
// from 60 up are v − v0 modulo 2^64.
type params struct {
	rho       uint64 // units per ns, fixed point with rhoFracBits fractional bits
	rhoNorm   uint64 // rho << rhoZ: its top bit set, the divisor of waitAt
	rhoInv    uint64 // floor((2^128−1)/rhoNorm) − 2^64: waitAt's reciprocal
	rhoZ      uint   // leading zeros of rho
	c1, c0    uint64 // ρ·(t0 − MinInt64) − f0, 128 bits, in units of 2^-60
	v0        uint64 // v(t0), in units
	capUnits  uint64 // burst in units; ≤ 2^62
	maxTake   uint64 // largest n that can ever pass: floor(burst)
	stepUnits uint64 // a level below −stepUnits is a clock step: capUnits + ρ·StepBack
	shift     uint   // F: one token is 1<<shift units
	// oneLeft and oneMeta are a take of one token from a full bucket, the
	// most common take of all (Pass.NextFull): the level it leaves, in
	// units (never negative: the burst is at least one token), and its
	// Result's meta.
	oneLeft uint64
	oneMeta uint64
	rate    float64 // as configured, tokens per second
	burst   float64 // as configured, tokens
	effRate float64 // ρ in tokens per second, rounded to the nearest float64
}

// anchorAt anchors the virtual clock so that v(t0) = v0 plus frac (a
// fraction of a unit, in units of 2^-60, already earned at t0), for the ρ
// already set: v(t) = v0 + floor(frac·2^-60 + ρ·(t − t0)).
func (p *params) anchorAt(t0 int64, v0, frac uint64) {
	c1, c0 := bits.Mul64(offset(t0), p.rho)
	var borrow uint64
	p.c0, borrow = bits.Sub64(c0, frac, 0)
	p.c1, _ = bits.Sub64(c1, 0, borrow)
	p.v0 = v0
}

// offset is t − MinInt64: every int64 reading as a uint64, in order.
func offset(t int64) uint64 { return uint64(t) ^ 1<<63 }

// clock returns f0 + ρ·(now − t0) in units of 2^-60, as 128-bit two's
// complement hi:lo: v(now) is v0 + (hi:lo >> 60) modulo 2^64, and the
// fraction of a unit earned at now is lo's low 60 bits.
func (p *params) clock(now int64) (hi, lo uint64) {
	hi, lo = bits.Mul64(offset(now), p.rho)
	lo, borrow := bits.Sub64(lo, p.c0, 0)
	hi, _ = bits.Sub64(hi, p.c1, borrow) // one SBB, with the borrow in the flags
	return hi, lo
}

// virtual returns v(now) and the fraction of a unit beyond it, in units of
// 2^-rhoFracBits, such that v + frac/2^60 = v0 + f0 + ρ·(now − t0) exactly
// (mod 2^64 in v), for every int64 now.
func (p *params) virtual(now int64) (v uint64, frac uint64) {
	hi, lo := p.clock(now)
	return p.whole(hi, lo), lo & (1<<rhoFracBits - 1)
}

// whole returns v(now) from clock(now)'s hi and lo: the fraction dropped.
func (p *params) whole(hi, lo uint64) uint64 { return p.v0 + (hi<<(64-rhoFracBits) | lo>>rhoFracBits) }

// mulRho returns floor(d·ρ) in units.
func mulRho(d, rho uint64) uint64 {
	hi, lo := bits.Mul64(d, rho)
	return hi<<(64-rhoFracBits) | lo>>rhoFracBits
}

// waitAt is, for a denial at now that lacks need units, the smallest number
// of nanoseconds after now at which the virtual clock has advanced by at
// least need units, counting the fraction of a unit already earned at now.
// It saturates at math.MaxInt64.
//
// It is ceil((need·2^60 − frac) / ρ) with a 128-bit numerator, divided by
// multiplying with ρ's reciprocal instead of a DIV instruction, in three
// steps that inline: it calls nothing, so Result.RetryAfter costs one call.
func (p *params) waitAt(now int64, need uint64) time.Duration {
	_, lo := p.clock(now) // the fraction of v(now)
	u1, u0, fits := p.waitNumerator(need, lo&(1<<rhoFracBits-1))
	q, rem := divNorm(u1, u0, p.rhoNorm, p.rhoInv)
	return ceilWait(q, rem, fits)
}

// waitNumerator returns need·2^60 − frac shifted left by ρ's leading zeros
// (the numerator divNorm takes), and whether the quotient fits in 64 bits.
func (p *params) waitNumerator(need, frac uint64) (u1, u0 uint64, fits bool) {
	hi, lo := need>>(64-rhoFracBits), need<<rhoFracBits
	lo, borrow := bits.Sub64(lo, frac, 0)
	hi -= borrow
	z := p.rhoZ & 63
	// lo>>(64−z) without Go's guard for a shift by 64: (lo>>1)>>(63−z).
	return hi<<z | (lo>>1)>>((63-z)&63), lo << z, hi < p.rho
}

// divNorm divides the 128-bit number u1:u0 by d, for d with its top bit set
// and u1 < d, given v = floor((2^128−1)/d) − 2^64. It is the division by an
// invariant integer of Möller and Granlund ("Improved division by invariant
// integers", 2011, algorithm 4): estimate the quotient with the reciprocal,
// then correct it at most twice. Exact for every input.
func divNorm(u1, u0, d, v uint64) (q, rem uint64) {
	q, q0 := bits.Mul64(v, u1)
	q0, carry := bits.Add64(q0, u0, 0)
	q, _ = bits.Add64(q, u1, carry)
	q++
	rem = u0 - q*d
	if rem > q0 {
		q--
		rem += d
	}
	if rem >= d {
		q++
		rem -= d
	}
	return q, rem
}

// ceilWait rounds the quotient up when the remainder is not zero and
// saturates at math.MaxInt64.
func ceilWait(q, rem uint64, fits bool) time.Duration {
	if !fits || q >= math.MaxInt64 { // before the increment, which could wrap
		return math.MaxInt64
	}
	if rem != 0 {
		q++
	}
	return time.Duration(q)
}

// Limit is the configuration shared by any number of bucket words: rate,
// burst and the virtual clock they are measured against. Its zero value is
// not usable; make one with NewLimit. A Limit is safe for concurrent use:
// takes read its configuration with one atomic load, and SetRateAt and
// SetBurst publish a new configuration that takes see at once.
//
// Package shardmap keeps one word per key against a single Limit; [Bucket]
// pairs a Limit with one word.
type Limit struct {
	p  atomic.Pointer[params]
	mu sync.Mutex // serialises reconfiguration; never taken by a take
}

// NewLimit validates rate (tokens per second) and burst (tokens) and returns
// a Limit whose virtual clock is anchored at now. A burst of 0 means
// DefaultBurst(rate).
func NewLimit(rate, burst float64, now int64) (*Limit, error) {
	p, err := newParams(rate, burst, now)
	if err != nil {
		return nil, err
	}
	l := &Limit{}
	l.p.Store(p)
	return l, nil
}

// newParams validates rate and burst (0: DefaultBurst) and builds the
// configuration anchored at now.
func newParams(rate, burst float64, now int64) (*params, error) {
	if burst == 0 {
		burst = DefaultBurst(rate)
	}
	if err := validate(rate, burst); err != nil {
		return nil, err
	}
	// Order matters: anchorAt and setBurst read the ρ that setRate sets,
	// and setBurst completes stepUnits, which needs the capacity too.
	p := &params{shift: chooseShift(rate, burst)}
	if err := p.setRate(rate); err != nil {
		return nil, err
	}
	p.anchorAt(now, 0, 0)
	p.setBurst(burst)
	return p, nil
}

// validate checks a rate and a burst. A fill time (burst ÷ rate) over
// MaxFillTime is blamed on the burst; validateRate blames the rate.
func validate(rate, burst float64) error {
	switch {
	case math.IsNaN(rate) || math.IsInf(rate, 0):
		return rateErr(rate, "must be finite")
	case rate <= 0:
		return rateErr(rate, "must be greater than 0")
	case rate > MaxRate:
		return rateErr(rate, fmt.Sprintf("must be at most %g tokens per second", float64(MaxRate)))
	case math.IsNaN(burst) || math.IsInf(burst, 0):
		return burstErr(burst, "must be finite")
	case burst < 1:
		return burstErr(burst, "must be at least 1")
	case burst > MaxBurst:
		return burstErr(burst, fmt.Sprintf("must be at most %g tokens", float64(MaxBurst)))
	case burst/rate > MaxFillTime.Seconds():
		return burstErr(burst, fmt.Sprintf("fill time burst/rate = %gs exceeds %v", burst/rate, MaxFillTime))
	}
	return nil
}

// validateRate is validate for a new rate under a burst already in force:
// a fill time too long is the rate's fault.
func validateRate(rate, burst float64) error {
	err := validate(rate, burst)
	var ce *ConfigError
	if errors.As(err, &ce) && ce.Field == "burst" {
		return rateErr(rate, fmt.Sprintf("makes the fill time burst/rate = %gs exceed %v", burst/rate, MaxFillTime))
	}
	return err
}

// chooseShift picks F: as fine as possible with ρ ≤ 1 unit/ns and the burst
// within 2^62 units.
func chooseShift(rate, burst float64) uint {
	var f uint
	for f < 62 && rate*math.Ldexp(1, int(f+1)) <= 1e9 && burst*math.Ldexp(1, int(f+1)) <= math.Ldexp(1, 62) {
		f++
	}
	return f
}

// setRate computes ρ = rate·2^F/1e9 in fixed point from the exact value of
// the float64 rate, rounded up. Rounding up makes every exact instant exact:
// at 1/s the token is there at 1s, not one unit later. The excess is under
// 2^-60 units per nanosecond, less than one unit in 36 years.
func (p *params) setRate(rate float64) error {
	r := new(big.Float).SetPrec(0).SetFloat64(rate) // exact
	r.SetMantExp(r, int(p.shift)+rhoFracBits)
	q := new(big.Float).SetPrec(200).Quo(r, big.NewFloat(1e9))
	rho, acc := q.Int(nil)
	if acc == big.Below {
		rho.Add(rho, big.NewInt(1))
	}
	if !rho.IsUint64() { // ρ ≥ 16 units/ns
		return rateErr(rate, fmt.Sprintf("is more than %d times the rate this limit's fixed-point scale was built for", maxRho))
	}
	if rho.Cmp(big.NewInt(minRho)) < 0 {
		// Rounded up to a whole 2^-60 unit/ns, ρ would run fast by more
		// than one part in a million (a limit starts at ρ > 1/2: a rate
		// more than 2^39 times below the one it was made for).
		return rateErr(rate, "is too far below the rate this limit's fixed-point scale was built for (it would run over one part in a million fast)")
	}
	p.setRho(rho.Uint64())
	p.rate = rate
	p.stepUnits = p.capUnits + mulRho(uint64(StepBack), p.rho)
	return nil
}

// setRho sets ρ (not 0) and the reciprocal waitAt divides by.
func (p *params) setRho(rho uint64) {
	p.rho = rho
	p.rhoZ = uint(bits.LeadingZeros64(rho))
	p.rhoNorm = rho << p.rhoZ
	p.rhoInv, _ = bits.Div64(^p.rhoNorm, math.MaxUint64, p.rhoNorm)
	p.effRate = effectiveRate(rho, p.shift)
}

// effectiveRate is ρ·1e9/2^(60+F) tokens per second rounded once, to the
// nearest float64: the product is exact in 128 bits (ρ has 64, 1e9 30),
// the scaling by a power of two is exact, and Float64 rounds to nearest
// even. Computing it in float64 steps would round twice and land one ulp
// off for some rates (30/s would read 29.999999999999996).
func effectiveRate(rho uint64, shift uint) float64 {
	x := new(big.Float).SetPrec(128).SetUint64(rho)
	x.Mul(x, new(big.Float).SetPrec(128).SetUint64(1e9))
	x.SetMantExp(x, -rhoFracBits-int(shift))
	f, _ := x.Float64()
	return f
}

// setBurst sets the capacity: the burst rounded down to a whole number of
// units. Only a fractional burst can lose anything, and only what is below
// one unit (2^-F token: nothing at 1e6/s and below for bursts with a few
// decimals' worth of bits, up to a fraction of a token near 1e9/s).
// Burst reports the capacity actually held.
func (p *params) setBurst(burst float64) {
	p.capUnits = uint64(math.Ldexp(burst, int(p.shift)))
	p.maxTake = p.capUnits >> p.shift
	p.oneLeft = p.capUnits - 1<<p.shift
	p.oneMeta = allowed(p.oneLeft >> p.shift).meta
	p.burst = math.Ldexp(float64(p.capUnits), -int(p.shift))
	p.stepUnits = p.capUnits + mulRho(uint64(StepBack), p.rho)
}

// Rate returns the configured rate in tokens per second.
func (l *Limit) Rate() float64 { return l.p.Load().rate }

// Burst returns the burst in tokens: the configured one rounded down to a
// whole number of refill quanta (see Quantum), which is what the bucket
// holds when full.
func (l *Limit) Burst() float64 { return l.p.Load().burst }

// EffectiveRate returns the rate the fixed-point clock actually runs at, in
// tokens per second, rounded to the nearest float64 (computed once per
// configuration: reading it costs a load). The fixed-point rate
// itself is never below Rate and exceeds it by less than 2^-60 units per
// nanosecond: under 2^-59 of Rate for the rate a limit is made with, and
// under one part in a million after any rate change SetRateAt accepts.
func (l *Limit) EffectiveRate() float64 {
	return l.p.Load().effRate
}

// Quantum returns the refill quantum in tokens: 2^-F.
func (l *Limit) Quantum() float64 { return math.Ldexp(1, -int(l.p.Load().shift)) }

// SetRateAt changes the rate from now on. The level every bucket word holds
// at now is kept, the fraction of a refill quantum earned so far included;
// from now on it refills at the new rate.
//
// Each take is judged under the old or the new configuration, whole. Their
// clocks agree at now only, so a take whose reading is later than now but
// which loaded the configuration before the change, beside a take under the
// new one, can together pass up to |new rate − old rate| × (reading − now)
// tokens more than either rate allows: with Nanotime readings, microseconds'
// worth; call SetRateAt with a current now, not a stale one.
//
// The fixed-point scale chosen at construction bounds the new rate: a rate
// at which ρ reaches 16 units/ns is refused (16 to 32 times the rate the
// limit was made with, depending on where that rate fell in its scale), as
// is one so far below it (2^39 to 2^40 times, the same way) that its
// rounding would exceed one part in a million; so are the bounds NewLimit
// enforces, a fill time over MaxFillTime under the current burst included.
func (l *Limit) SetRateAt(rate float64, now int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.p.Load()
	if err := validateRate(rate, old.burst); err != nil {
		return err
	}
	p := *old
	if err := p.setRate(rate); err != nil {
		return err
	}
	// The new clock starts where the old one is at now, the fraction of
	// a unit earned so far included: a rate change costs no credit.
	v, frac := old.virtual(now)
	p.anchorAt(now, v, frac)
	l.p.Store(&p)
	return nil
}

// SetBurst changes the burst. A bucket's level is always the credit it
// earned since its empty point, capped at the burst in force, and the new
// burst applies to that from now on. So a cut caps a bucket holding more at its next take
// or read; a raise lets a bucket below the old burst keep its level and
// refill up to the new one, and gives a bucket that sat full the credit it
// earned while full, up to the new burst (what a keyed table would give a
// key it had forgotten and created afresh).
func (l *Limit) SetBurst(burst float64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.p.Load()
	if burst == 0 {
		burst = DefaultBurst(old.rate)
	}
	if err := validate(old.rate, burst); err != nil {
		return err
	}
	if math.Ldexp(burst, int(old.shift)) > math.Ldexp(1, 62) {
		return burstErr(burst, "exceeds what this limit's fixed-point scale represents")
	}
	p := *old
	p.setBurst(burst)
	l.p.Store(&p)
	return nil
}

// FullWord returns the word of a bucket that is full at now: the state a new
// bucket starts in.
func (l *Limit) FullWord(now int64) uint64 {
	p := l.p.Load()
	v, _ := p.virtual(now)
	return v - p.capUnits
}
