package atomicbucket

import (
	"math"
	"math/big"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
)

// The clock is exact for readings before and after the anchor, far inside
// the word's horizon (a level must stay below 2^63 units; at ρ ≤ 1 that is
// more than 2^62 ns either side): anchors and readings at the ends of the
// int64 range and across zero, each pair on a fresh bucket, since the
// level is v(now) − E and it is that difference the horizon bounds.
func TestClockAtTheEndsOfTheInt64Range(t *testing.T) {
	anchors := []int64{0, 1, -1, math.MaxInt64, math.MinInt64, math.MaxInt64 - 1<<61, math.MinInt64 + 1<<61, 1_800_000_000_000_000_000, -1 << 61}
	readings := []int64{math.MinInt64, math.MinInt64 + 1, math.MinInt64 + 1<<62 - 1, -1 << 61, -1, 0, 1, 1 << 61, math.MaxInt64 - 1<<62 + 1, math.MaxInt64 - 1, math.MaxInt64}
	horizon := new(big.Int).Lsh(big.NewInt(1), 62)
	checked := 0
	for _, rate := range []float64{10, 1e9, 0.001, 480_000} {
		for _, t0 := range anchors {
			for _, now := range append(readings, t0-1, t0+1, t0+int64(time.Second)) {
				d := new(big.Int).Sub(big.NewInt(now), big.NewInt(t0))
				if d.CmpAbs(horizon) >= 0 || (now < t0) != (d.Sign() < 0) {
					continue // beyond the horizon, or t0±1 wrapped around
				}
				b, err := NewAt(rate, 3, t0)
				if err != nil {
					t.Fatal(err)
				}
				m := newRatModel(t, &b.Limit, rate, 3, t0)
				for _, n := range []uint64{1, 3} {
					got, want := decisionOf(b.TakeAt(now, n)), m.take(now, n)
					if got != want || b.Word() != m.word() {
						t.Fatalf("rate %v t0 %d: take %d at %d = %+v (word %#x), model %+v (word %#x)", rate, t0, n, now, got, b.Word(), want, m.word())
					}
				}
				if got, want := b.TokensAt(now), m.tokens(now); got != want {
					t.Fatalf("rate %v t0 %d: TokensAt(%d) = %v, model %v", rate, t0, now, got, want)
				}
				checked++
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d pairs checked", checked)
	}
}

// The retry time's reciprocal division against an exact big.Int ceiling, for
// ρ with every count of leading zeros, numerators from 1 unit to past the
// saturation point, and every fraction edge.
func TestWaitMatchesExactCeiling(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	maxI64 := big.NewInt(math.MaxInt64)
	for z := 0; z < 64; z++ {
		for i := 0; i < 200; i++ {
			rho := uint64(1)<<(63-z) | rng.Uint64()>>(z+1)
			var p params
			p.setRho(rho)
			need := rng.Uint64() >> rng.UintN(64)
			if need == 0 {
				need = 1
			}
			frac := []uint64{0, 1, 1<<rhoFracBits - 1, rng.Uint64() >> 4}[i%4]
			num := new(big.Int).Lsh(new(big.Int).SetUint64(need), rhoFracBits)
			num.Sub(num, new(big.Int).SetUint64(frac))
			q, r := new(big.Int).QuoRem(num, new(big.Int).SetUint64(rho), new(big.Int))
			if r.Sign() != 0 {
				q.Add(q, big.NewInt(1))
			}
			want := time.Duration(math.MaxInt64)
			if q.Cmp(maxI64) < 0 {
				want = time.Duration(q.Int64())
			}
			u1, u0, fits := p.waitNumerator(need, frac)
			q1, rem := divNorm(u1, u0, p.rhoNorm, p.rhoInv)
			if got := ceilWait(q1, rem, fits); got != want {
				t.Fatalf("ρ %#x (%d leading zeros), need %d, frac %#x: wait %d, exact %d", rho, z, need, frac, got, want)
			}
		}
	}
}

// After SetRateAt (up to 16 times faster, or far slower) a denial's
// RetryAfter is still exact: the take fails a nanosecond before it and
// passes at it.
func TestRetryAfterExactAfterSetRate(t *testing.T) {
	for _, rate := range []float64{30, 1e6, 0.5} {
		for _, factor := range []float64{16, 3, 1.0 / 7, 1e-3} {
			b, err := NewAt(rate, 4, 0)
			if err != nil {
				t.Fatal(err)
			}
			now := int64(time.Second)
			b.TakeAt(now, 4)
			newRate := rate * factor
			if newRate*float64(MaxFillTime/time.Second) < 4 {
				continue // the fill time would exceed MaxFillTime: refused
			}
			if err := b.SetRateAt(newRate, now); err != nil {
				t.Fatalf("rate %v → %v: %v", rate, newRate, err)
			}
			for _, n := range []uint64{1, 3} {
				now += 7
				r := b.TakeAt(now, n)
				if r.Status() != Denied {
					t.Fatalf("rate %v → %v: take %d at %d = %v, want a denial", rate, newRate, n, now, r)
				}
				d := int64(r.RetryAfter())
				var probe atomic.Uint64
				probe.Store(b.Word())
				if early := b.Limit.TakeAt(&probe, now+d-1, n); early.OK() || early.RetryAfter() != 1 {
					t.Fatalf("rate %v → %v: a nanosecond early: %v", rate, newRate, early)
				}
				if onTime := b.Limit.TakeAt(&probe, now+d, n); !onTime.OK() {
					t.Fatalf("rate %v → %v: at RetryAfter %v: %v", rate, newRate, time.Duration(d), onTime)
				}
			}
		}
	}
}

// A reading at the least int64 (a zero time.Time's UnixNano is near it) on a
// bucket of 10/s made at a small positive time is more than 2^63 ns back:
// it is judged as the clock stepping back (denied, then rebased), not as a
// reading from the far future that finds the bucket full. (That holds while
// 2^63 ns is under 2^63 units, ρ < 1; at the fastest rates such a reading is
// past the horizon the package doc states, and may read either way.)
func TestReadingAtMinInt64IsAStepBack(t *testing.T) {
	b, err := NewAt(10, 3, 5*int64(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	m := newRatModel(t, &b.Limit, 10, 3, 5*int64(time.Second))
	got, want := decisionOf(b.TakeAt(math.MinInt64, 1)), m.take(math.MinInt64, 1)
	if got.Status != Denied || got != want || b.Word() != m.word() {
		t.Fatalf("take at MinInt64 = %+v (word %#x), model %+v (word %#x)", got, b.Word(), want, m.word())
	}
}
