package atomicbucket

// Oracles for the bucket: a mutex-based reference with the same integer
// semantics, and an exact model in big.Rat that derives every decision from
// the stated rule rather than from the implementation's arithmetic.
//
// Rounding rule (the package doc's, restated as the model computes it):
//
//	ρ        = Limit.rho / 2^60 units per nanosecond, exactly (ρ is the
//	           configured rate·2^F/1e9 rounded UP to 60 fractional bits);
//	v*(t)    = ρ·(t − t0), an exact rational number of units;
//	v(t)     = floor(v*(t)): the bucket is credited in whole units only;
//	level(t) = min(cap, v(t) − E), cap = floor(burst·2^F) units, read as a
//	           signed number (negative for a reading older than E);
//	a take of n passes iff level ≥ n·2^F and then
//	           E' = max(E, v(t) − cap) + n·2^F;
//	a denial reports floor(max(level,0)/2^F) remaining and the smallest whole
//	           number of nanoseconds d ≥ 0 with floor(v*(t+d)) ≥ E + n·2^F,
//	           i.e. d = ceil((E + n·2^F − v*(t)) / ρ);
//	a denial with level < −(cap + floor(ρ·StepBack)) is a clock that jumped
//	           back: E := v(t), and the denial is judged at level 0.
//
// At an instant where the exact level v*(t) − E is an integer number of
// units, the take sees that integer (floor of an integer is itself), so a
// token that is due at t is there at t, not a nanosecond later.

import (
	"fmt"
	"math"
	"math/big"
	"sync"
	"testing"
	"time"
)

// decision is what a take reports, as plain values that the oracles below
// build directly and tests compare with ==.
type decision struct {
	Status     Status
	Remaining  uint32
	RetryAfter time.Duration
}

func decisionOf(r Result) decision { return decision{r.Status(), r.Remaining(), r.RetryAfter()} }

// refStep is the sequential specification in the bucket's own integer
// arithmetic: the decision of a take of n at now on the word e, and the word
// after it. It reuses the Limit's params (ρ, F, cap, the virtual clock and
// the wait computation); the big.Rat model checks those independently.
func refStep(p *params, e uint64, now int64, n uint64) (decision, uint64) {
	if n == 0 || n > p.maxTake {
		return decision{Status: Invalid}, e
	}
	k := n << p.shift
	capUnits := p.capUnits
	v, _ := p.virtual(now)
	level := int64(v - e)
	base := e
	if level >= int64(capUnits) {
		base, level = v-capUnits, int64(capUnits)
	}
	if level >= int64(k) {
		return decision{Status: Allowed, Remaining: uint32(uint64(level-int64(k)) >> p.shift)}, base + k
	}
	if level < -int64(p.stepUnits) {
		e, level = v, 0
	}
	var rem uint32
	if level > 0 {
		rem = uint32(uint64(level) >> p.shift)
	}
	return decision{Status: Denied, Remaining: rem, RetryAfter: p.waitAt(now, uint64(int64(k)-level))}, e
}

// refBucket is the mutex-based reference bucket: a plain word guarded by a
// lock, stepped by refStep.
type refBucket struct {
	mu sync.Mutex
	p  *params
	e  uint64
}

func newRefBucket(l *Limit, now int64) *refBucket {
	return &refBucket{p: l.p.Load(), e: l.FullWord(now)}
}

func (r *refBucket) takeAt(now int64, n uint64) decision {
	r.mu.Lock()
	defer r.mu.Unlock()
	res, e := refStep(r.p, r.e, now, n)
	r.e = e
	return res
}

func (r *refBucket) word() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.e
}

// ratModel is the exact model. E is an unbounded integer (no wrap); the
// bucket's word must equal it modulo 2^64.
type ratModel struct {
	rho   *big.Rat // units per nanosecond
	t0    int64    // the clock's anchor: NewAt's now, or the last SetRateAt's
	v0    *big.Rat // v*(t0): 0 at NewAt, the old clock's exact value after a SetRateAt
	unit  *big.Int // 2^F units per token
	cap   *big.Int // floor(burst·2^F)
	step  *big.Int // cap + floor(ρ·StepBack)
	maxN  uint64   // floor(burst)
	burst float64
	e     *big.Int
}

var (
	bigTwo60   = new(big.Int).Lsh(big.NewInt(1), rhoFracBits)
	bigMask64  = new(big.Int).SetUint64(math.MaxUint64)
	bigMaxI64  = big.NewInt(math.MaxInt64)
	bigBillion = big.NewRat(1_000_000_000, 1)
)

func ratFloor(x *big.Rat) *big.Int {
	// Euclidean division by a positive denominator is the floor.
	q, m := new(big.Int), new(big.Int)
	q.DivMod(x.Num(), x.Denom(), m)
	return q
}

func ratCeil(x *big.Rat) *big.Int {
	q := ratFloor(new(big.Rat).Neg(x))
	return q.Neg(q)
}

func ratOf(f float64) *big.Rat { return new(big.Rat).SetFloat64(f) }

// expectedShift is F from its definition: the largest F ≤ 62 with
// rate·2^F ≤ 1e9 and burst·2^F ≤ 2^62, computed exactly.
func expectedShift(rate, burst float64) uint {
	r, b := ratOf(rate), ratOf(burst)
	lim := new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), 62))
	f := uint(0)
	for f < 62 {
		p := new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), f+1))
		if new(big.Rat).Mul(r, p).Cmp(bigBillion) > 0 || new(big.Rat).Mul(b, p).Cmp(lim) > 0 {
			break
		}
		f++
	}
	return f
}

// newRatModel builds the model of a bucket made by NewAt(rate, burst, t0). It
// first checks the Limit's fixed-point parameters against their definitions
// (F, ρ rounded up, cap, StepBack threshold), then takes ρ from the Limit.
func newRatModel(t testing.TB, l *Limit, rate, burst float64, t0 int64) *ratModel {
	t.Helper()
	p := l.p.Load()
	if want := expectedShift(rate, burst); p.shift != want {
		t.Fatalf("rate %v burst %v: F = %d, want %d", rate, burst, p.shift, want)
	}
	unit := new(big.Int).Lsh(big.NewInt(1), p.shift)
	// ρ = ceil(rate·2^(F+60) / 1e9).
	exact := new(big.Rat).Mul(ratOf(rate), new(big.Rat).SetInt(new(big.Int).Lsh(unit, rhoFracBits)))
	exact.Quo(exact, bigBillion)
	if want := ratCeil(exact); !want.IsUint64() || want.Uint64() != p.rho {
		t.Fatalf("rate %v: ρ = %d, want ceil(%s) = %s", rate, p.rho, exact.FloatString(6), want)
	}
	rho := new(big.Rat).SetFrac(new(big.Int).SetUint64(p.rho), bigTwo60)
	if rho.Cmp(big.NewRat(1, 1)) > 0 {
		t.Fatalf("rate %v: ρ = %s units/ns exceeds 1", rate, rho.FloatString(6))
	}
	capU := ratFloor(new(big.Rat).Mul(ratOf(burst), new(big.Rat).SetInt(unit)))
	if capU.Uint64() != p.capUnits {
		t.Fatalf("burst %v: cap %d units, want %s", burst, p.capUnits, capU)
	}
	step := ratFloor(new(big.Rat).Mul(rho, big.NewRat(int64(StepBack), 1)))
	step.Add(step, capU)
	if step.Uint64() != p.stepUnits {
		t.Fatalf("stepUnits %d, want %s", p.stepUnits, step)
	}
	return &ratModel{
		rho:   rho,
		t0:    t0,
		v0:    new(big.Rat),
		unit:  unit,
		cap:   capU,
		step:  step,
		maxN:  uint64(math.Floor(burst)),
		burst: burst,
		e:     new(big.Int).Neg(capU), // full at t0: E = v(t0) − cap = −cap
	}
}

// exact returns v*(now) = v0 + ρ·(now − t0).
func (m *ratModel) exact(now int64) *big.Rat {
	d := new(big.Int).Sub(big.NewInt(now), big.NewInt(m.t0))
	v := new(big.Rat).Mul(m.rho, new(big.Rat).SetInt(d))
	return v.Add(v, m.v0)
}

// setRateAt follows l.SetRateAt(…, at), which has just returned: the clock
// goes on from its exact value at at (the fraction of a unit included) at
// the Limit's new ρ, whose threshold for a step back is checked again.
func (m *ratModel) setRateAt(t testing.TB, l *Limit, at int64) {
	t.Helper()
	m.v0, m.t0 = m.exact(at), at
	p := l.p.Load()
	m.rho = new(big.Rat).SetFrac(new(big.Int).SetUint64(p.rho), bigTwo60)
	m.step = ratFloor(new(big.Rat).Mul(m.rho, big.NewRat(int64(StepBack), 1)))
	m.step.Add(m.step, m.cap)
	if m.step.Uint64() != p.stepUnits {
		t.Fatalf("stepUnits %d, want %s", p.stepUnits, m.step)
	}
}

// refund gives n tokens back at now: the level becomes min(cap, level + n),
// that is E' = max(E − n·2^F, v(now) − cap).
func (m *ratModel) refund(now int64, n uint64) {
	e := new(big.Int).Sub(m.e, new(big.Int).Mul(new(big.Int).SetUint64(n), m.unit))
	if full := new(big.Int).Sub(ratFloor(m.exact(now)), m.cap); e.Cmp(full) < 0 {
		e = full
	}
	m.e = e
}

func (m *ratModel) take(now int64, n uint64) decision {
	if n == 0 || n > m.maxN {
		return decision{Status: Invalid}
	}
	k := new(big.Int).Mul(new(big.Int).SetUint64(n), m.unit)
	ve := m.exact(now)
	v := ratFloor(ve)
	level := new(big.Int).Sub(v, m.e)
	if level.Cmp(m.cap) >= 0 {
		m.e.Sub(v, m.cap)
		level.Set(m.cap)
	}
	if level.Cmp(k) >= 0 {
		m.e.Add(m.e, k)
		rem := new(big.Int).Div(level.Sub(level, k), m.unit)
		return decision{Status: Allowed, Remaining: toU32(rem)}
	}
	if level.Cmp(new(big.Int).Neg(m.step)) < 0 {
		m.e.Set(v)
		level.SetInt64(0)
	}
	var rem uint32
	if level.Sign() > 0 {
		rem = toU32(new(big.Int).Div(level, m.unit))
	}
	// Smallest d with floor(v*(now+d)) ≥ E+k, i.e. v*(now)+ρ·d ≥ E+k.
	need := new(big.Rat).Sub(new(big.Rat).SetInt(new(big.Int).Add(m.e, k)), ve)
	d := ratCeil(need.Quo(need, m.rho))
	if d.Sign() < 0 {
		panic("model: a denial with the tokens already there")
	}
	if d.Cmp(bigMaxI64) > 0 {
		d.Set(bigMaxI64)
	}
	return decision{Status: Denied, Remaining: rem, RetryAfter: time.Duration(d.Int64())}
}

// level returns v(now) − E capped at cap, in units.
func (m *ratModel) level(now int64) *big.Int {
	l := new(big.Int).Sub(ratFloor(m.exact(now)), m.e)
	if l.Cmp(m.cap) > 0 {
		l.Set(m.cap)
	}
	return l
}

// tokens is what TokensAt must return: the capacity (burst rounded down to
// whole units) when full, 0 when empty or behind, otherwise level/2^F
// rounded to the nearest float64.
func (m *ratModel) tokens(now int64) float64 {
	l := m.level(now)
	switch {
	case l.Cmp(m.cap) >= 0:
		f, _ := new(big.Rat).SetFrac(m.cap, m.unit).Float64()
		return f
	case l.Sign() <= 0:
		return 0
	}
	f, _ := new(big.Rat).SetFrac(l, m.unit).Float64()
	return f
}

func (m *ratModel) full(now int64) bool { return m.level(now).Cmp(m.cap) >= 0 }

// word is E modulo 2^64 (big.Int's And works in two's complement).
func (m *ratModel) word() uint64 { return new(big.Int).And(m.e, bigMask64).Uint64() }

func toU32(x *big.Int) uint32 {
	if !x.IsUint64() || x.Uint64() > math.MaxUint32 {
		panic(fmt.Sprintf("model: remaining %s does not fit in uint32", x))
	}
	return uint32(x.Uint64())
}

// The model on its own reproduces the worked examples of the design, so that
// it is not merely agreeing with the implementation.
func TestModelReproducesDesignExamples(t *testing.T) {
	l, err := NewLimit(10, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	m := newRatModel(t, l, 10, 3, 0)
	for i := 0; i < 3; i++ {
		if r := m.take(0, 1); r.Status != Allowed || r.Remaining != uint32(2-i) {
			t.Fatalf("take %d: %+v", i, r)
		}
	}
	if r := m.take(0, 1); r != (decision{Status: Denied, RetryAfter: 100 * time.Millisecond}) {
		t.Fatalf("empty: %+v", r)
	}
	if r := m.take(sec/20, 1); r != (decision{Status: Denied, RetryAfter: 50 * time.Millisecond}) {
		t.Fatalf("half a token: %+v", r)
	}
	if got := m.tokens(sec / 20); math.Abs(got-0.5) > 1e-6 {
		t.Fatalf("tokens at 50ms = %v", got)
	}
	if r := m.take(sec/10, 1); r.Status != Allowed {
		t.Fatalf("one token at 100ms: %+v", r)
	}
	// 3/s, burst 10: two tokens take 666,666,666.67ns, so 666,666,667ns.
	l, _ = NewLimit(3, 10, 0)
	m = newRatModel(t, l, 3, 10, 0)
	m.take(0, 10)
	if r := m.take(0, 2); r.RetryAfter != 666_666_667 {
		t.Fatalf("3/s, 2 tokens: %+v", r)
	}
	if r := m.take(666_666_666, 2); r.Status != Denied || r.RetryAfter != 1 || r.Remaining != 1 {
		t.Fatalf("a nanosecond early: %+v", r)
	}
	if r := m.take(666_666_667, 2); r.Status != Allowed {
		t.Fatalf("on time: %+v", r)
	}
}
