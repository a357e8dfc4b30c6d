package atomicbucket

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// TestDivNormMatchesDiv64 checks wait's reciprocal division (divNorm) against the
// hardware division on every edge of the divisor and numerator ranges and a
// million random pairs: the quotient must be identical, and the remainder
// zero exactly when DIV's is.
func TestDivNormMatchesDiv64(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	rhos := []uint64{1, 2, 3, 5, 7, 1 << 32, 1<<32 + 1, 1<<60 - 1, 1 << 60, 1<<60 + 1, 1<<63 - 1, 1 << 63, 1<<63 + 1, math.MaxUint64 - 1, math.MaxUint64}
	for i := 0; i < 64; i++ {
		rhos = append(rhos, 1<<i, 1<<i|1, rng.Uint64()>>uint(i))
	}
	check := func(rho, hi, lo uint64) {
		t.Helper()
		if rho == 0 {
			return
		}
		var p params
		p.setRho(rho)
		hi %= rho
		wantQ, wantR := bits.Div64(hi, lo, rho)
		z := p.rhoZ & 63
		u1, u0 := hi<<z|(lo>>1)>>((63-z)&63), lo<<z
		q, rem := divNorm(u1, u0, p.rhoNorm, p.rhoInv)
		if q != wantQ || (rem == 0) != (wantR == 0) {
			t.Fatalf("divNorm(%#x:%#x / %#x) = %d rem %d, Div64 = %d rem %d", hi, lo, rho, q, rem, wantQ, wantR)
		}
	}
	for _, rho := range rhos {
		for _, hi := range []uint64{0, 1, rho / 2, rho - 1} {
			for _, lo := range []uint64{0, 1, rho - 1, rho, rho + 1, math.MaxUint64, rng.Uint64()} {
				check(rho, hi, lo)
			}
		}
	}
	for i := 0; i < 1_000_000; i++ {
		rho := rng.Uint64() >> rng.UintN(64)
		// Exact multiples, so the zero-remainder case is hit as often as
		// the others.
		if i%2 == 0 && rho != 0 {
			q := rng.Uint64()
			hi, lo := bits.Mul64(q, rho)
			check(rho, hi, lo)
			continue
		}
		check(rho, rng.Uint64(), rng.Uint64())
	}
}
