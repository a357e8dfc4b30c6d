package atomicbucket

import (
	"math"
	"math/big"
	"math/rand"
	"sync/atomic"
	"testing"
	"time"
)

// pwModel is the exact model of a bucket whose rate changes: its virtual
// clock is piecewise linear, v*(t) = VA + ρ·(t − tA) for the current
// segment (also for t < tA, as the implementation computes it), where each
// SetRateAt starts a segment at the previous one's exact value, the
// fraction of a unit included. ρ is the fixed-point rate the Limit holds.
type pwModel struct {
	rho  *big.Rat
	tA   int64
	VA   *big.Rat
	unit *big.Int
	cap  *big.Int
	step *big.Int
	maxN uint64
	e    *big.Int
}

func (m *pwModel) exact(t int64) *big.Rat {
	d := new(big.Rat).SetInt64(t - m.tA)
	d.Mul(d, m.rho)
	return d.Add(d, m.VA)
}

func (m *pwModel) setFrom(t *testing.T, l *Limit) {
	p := l.p.Load()
	m.rho = new(big.Rat).SetFrac(new(big.Int).SetUint64(p.rho), bigTwo60)
	m.unit = new(big.Int).Lsh(big.NewInt(1), p.shift)
	m.cap = new(big.Int).SetUint64(p.capUnits)
	st := ratFloor(new(big.Rat).Mul(m.rho, big.NewRat(int64(StepBack), 1)))
	m.step = st.Add(st, m.cap)
	if m.step.Uint64() != p.stepUnits {
		t.Fatalf("stepUnits %d want %s", p.stepUnits, m.step)
	}
	m.maxN = p.maxTake
}

func (m *pwModel) take(now int64, n uint64) decision {
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
	need := new(big.Rat).Sub(new(big.Rat).SetInt(new(big.Int).Add(m.e, k)), ve)
	d := ratCeil(need.Quo(need, m.rho))
	if d.Cmp(bigMaxI64) > 0 {
		d.Set(bigMaxI64)
	}
	return decision{Status: Denied, Remaining: rem, RetryAfter: time.Duration(d.Int64())}
}

// refund: exact saturating rule E' = max(E − n·unit, v − cap).
func (m *pwModel) refund(now int64, n uint64) {
	v := ratFloor(m.exact(now))
	k := new(big.Int).Mul(new(big.Int).SetUint64(n), m.unit)
	e := new(big.Int).Sub(m.e, k)
	full := new(big.Int).Sub(v, m.cap)
	if e.Cmp(full) < 0 {
		e = full
	}
	m.e = e
}

func (m *pwModel) word() uint64 { return new(big.Int).And(m.e, bigMask64).Uint64() }

// Random takes (stale readings included), rate changes of ×16 down to
// ×1/1000 and tiny ones, and refunds (up to a few tokens over a burst), on
// fractional and whole bursts: every decision, RetryAfter and word is the
// exact model's.
func TestPiecewiseSetRateAgainstExactModel(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	rates := []float64{1e9, 7e8, 3e8, 1e6, 480000, 1000, 30, 10, 3, 1, 0.5, 1e-3, 1e-5}
	for iter := 0; iter < 400; iter++ {
		rate := rates[rng.Intn(len(rates))]
		burst := float64(1 + rng.Intn(1000))
		if rng.Intn(3) == 0 {
			burst += 0.5
		}
		if burst/rate > MaxFillTime.Seconds() {
			continue
		}
		t0 := rng.Int63n(1<<40) - 1<<39
		b, err := NewAt(rate, burst, t0)
		if err != nil {
			t.Fatal(err)
		}
		m := &pwModel{tA: t0, VA: new(big.Rat)}
		m.setFrom(t, &b.Limit)
		m.e = new(big.Int).Neg(m.cap)
		now := t0
		for step := 0; step < 300; step++ {
			switch k := rng.Intn(10); {
			case k < 6:
				now += rng.Int63n(int64(2 * float64(time.Second) / rate * 1))
				if rng.Intn(20) == 0 {
					now -= rng.Int63n(int64(time.Second))
				}
				n := uint64(1 + rng.Intn(int(math.Max(1, burst))+1))
				got, want := decisionOf(b.TakeAt(now, n)), m.take(now, n)
				if got != want || b.Word() != m.word() {
					t.Fatalf("iter %d step %d rate %v: take %d at %d: got %+v word %#x, model %+v word %#x", iter, step, b.Rate(), n, now, got, b.Word(), want, m.word())
				}
			case k < 9:
				f := []float64{16, 2, 1, 0.5, 1.0 / 3, 1e-3, 1.0001, 0.9999}[rng.Intn(8)]
				nr := rate * f
				at := now + rng.Int63n(1000) - 100
				old := b.Limit.p.Load()
				ve := new(big.Rat).Set(m.exact(at))
				if err := b.SetRateAt(nr, at); err != nil {
					continue
				}
				if b.Limit.p.Load() == old {
					t.Fatal("not published")
				}
				m.VA, m.tA = ve, at
				m.setFrom(t, &b.Limit)
			default:
				n := uint64(1 + rng.Intn(int(burst)))
				if rng.Intn(4) == 0 {
					n = uint64(burst) + 1 + uint64(rng.Intn(5))
				}
				var w atomic.Uint64
				w.Store(b.Word())
				b.Limit.RefundAt(&w, now, n)
				m.refund(now, n)
				if w.Load() != m.word() {
					t.Fatalf("iter %d step %d: refund %d at %d (burst %v): word %#x, model %#x (level before %v)", iter, step, n, now, burst, w.Load(), m.word(), b.Limit.Level(b.Word(), now))
				}
				b.word.Store(w.Load())
			}
		}
	}
}

// The same near both ends of the int64 clock.
func TestPiecewiseNearInt64Ends(t *testing.T) {
	for _, base := range []int64{math.MinInt64, math.MaxInt64 - 1<<50} {
		for _, rate := range []float64{7e8, 3, 1e9, 0.37} {
			b, err := NewAt(rate, 5, base+1)
			if err != nil {
				t.Fatal(err)
			}
			m := &pwModel{tA: base + 1, VA: new(big.Rat)}
			m.setFrom(t, &b.Limit)
			m.e = new(big.Int).Neg(m.cap)
			rng := rand.New(rand.NewSource(2))
			now := base + 1
			for i := 0; i < 2000; i++ {
				now += 1 + rng.Int63n(int64(3*float64(time.Second)/rate))
				if i%3 == 0 {
					f := []float64{1, 2, 0.3, 15, 1e-4}[rng.Intn(5)]
					at := now - rng.Int63n(3)
					if at < base+1 || at > now {
						at = base + 1
					}
					ve := m.exact(at)
					err := b.SetRateAt(rate*f, at)
					if err == nil {
						m.VA, m.tA = ve, at
						m.setFrom(t, &b.Limit)
					}
				}
				got, want := decisionOf(b.TakeAt(now, 1)), m.take(now, 1)
				if got != want || b.Word() != m.word() {
					t.Fatalf("base %d rate %v i %d: got %+v model %+v", base, rate, i, got, want)
				}
			}
		}
	}
}
