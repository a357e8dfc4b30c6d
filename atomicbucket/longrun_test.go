package atomicbucket

import (
	"fmt"
	"math/big"
	"math/bits"
	"testing"
)

// longRunTakes is the number of simulated takes per (rate, burst) pair. The
// race detector instruments every atomic operation and would take minutes
// over 1e8, so it runs a smaller count; the plain run keeps 1e8.
func longRunTakes() int {
	switch {
	case raceEnabled:
		return 1_000_000
	case testing.Short():
		return 10_000_000
	}
	return 100_000_000
}

// splitmix is a tiny deterministic generator, cheap enough for the inner loop.
type splitmix uint64

func (s *splitmix) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// below returns a number in [0, n).
func (s *splitmix) below(n uint64) uint64 {
	hi, _ := bits.Mul64(s.next(), n)
	return hi
}

type checkpoint struct {
	now      int64
	accepted uint64
}

// TestLongRunAcceptedTokensStayExact simulates a client whose demand always
// exceeds supply, on virtual time, for 1e8 takes per (rate, burst) pair. The
// client asks again at once after a pass and, after a denial, no later than
// the RetryAfter it was given (half the time exactly then, otherwise at a
// random earlier instant), so the bucket never idles full. At checkpoints
// spread over the run it drains whatever whole tokens are left with takes of
// one, then records (now, accepted). Over every pair of checkpoints (and from
// the start, when the bucket is full) the accepted tokens over T seconds must
// lie in [r·T − 1, b + r·T], computed exactly; from the start they must also
// be at least b + r·T − 1, which with the upper bound pins the total to
// within one token of the ideal over the whole run: no drift.
func TestLongRunAcceptedTokensStayExact(t *testing.T) {
	takes := longRunTakes()
	pairs := []struct {
		rate, burst float64
		maxN        uint64 // takes are of 1..maxN tokens
		start       int64
		takes       int
		// strict: the accepted tokens never exceed b + r·T for the
		// configured r. Otherwise the bound is b + r_eff·T, where r_eff is
		// the rate of the fixed-point clock, rounded up from r by less than
		// 2^-60 units per ns (the allowance the package doc states).
		strict bool
	}{
		{480_000, 8000, 1500, 0, takes, true},
		{30, 30, 5, -1 << 50, takes, true},
		{1e9, 1e9, 1000, 1 << 40, takes, true},
		{0.5, 1, 1, 12345, takes, true},
		// The float64 nearest 1/3 is a little below 1/3: tokens fall due
		// a hair after whole nanoseconds, and the rounded-up clock credits
		// them on the nanosecond, about 1e-11 token beyond b + r·T.
		{1.0 / 3, 7, 3, -987654321, takes / 5, false},
	}
	for _, pc := range pairs {
		t.Run(fmt.Sprintf("rate=%v/burst=%v", pc.rate, pc.burst), func(t *testing.T) {
			t.Parallel()
			b, err := NewAt(pc.rate, pc.burst, pc.start)
			if err != nil {
				t.Fatal(err)
			}
			const nCheckpoints = 200
			every := pc.takes / nCheckpoints
			nextCP := every
			cps := []checkpoint{{pc.start, 0}} // full: not drained
			rng := splitmix(uint64(pc.start) ^ 0x5eed)
			now, accepted := pc.start, uint64(0)
			n := 1 + rng.below(pc.maxN)
			for i := 1; i <= pc.takes; i++ {
				if i >= nextCP {
					nextCP += every
					// Drain the whole tokens left, so the level at the
					// checkpoint is below one token: one token, then
					// all that it reports remaining, until denied.
					for {
						i++
						r := b.TakeAt(now, 1)
						if r.Status() != Allowed {
							break
						}
						accepted++
						if rem := uint64(r.Remaining()); rem > 0 {
							i++
							if r := b.TakeAt(now, rem); r.Status() != Allowed || r.Remaining() != 0 {
								t.Fatalf("drain of %d reported remaining: %+v", rem, r)
							}
							accepted += rem
						}
					}
					cps = append(cps, checkpoint{now, accepted})
				}
				r := b.TakeAt(now, n)
				switch r.Status() {
				case Allowed:
					accepted += n
					n = 1 + rng.below(pc.maxN)
				case Denied:
					wait := uint64(r.RetryAfter())
					if rng.next()&1 == 0 {
						now += int64(wait)
					} else {
						now += int64(rng.below(wait))
					}
				default:
					t.Fatalf("take %d: n=%d: %+v", i, n, r)
				}
			}
			checkLongRun(t, &b.Limit, pc.rate, pc.burst, pc.strict, cps)
			t.Logf("%d takes, %d tokens accepted over %.6gs simulated, %d checkpoints",
				pc.takes, accepted, float64(now-pc.start)/1e9, len(cps))
		})
	}
}

// checkLongRun checks the interval bounds over every pair of checkpoints.
func checkLongRun(t *testing.T, l *Limit, rate, burst float64, strict bool, cps []checkpoint) {
	t.Helper()
	p := l.p.Load()
	r := new(big.Rat).Quo(new(big.Rat).SetFloat64(rate), big.NewRat(1e9, 1)) // tokens per ns
	// r_eff = ρ / 2^(60+F) tokens per ns, exactly.
	rEff := new(big.Rat).SetFrac(new(big.Int).SetUint64(p.rho), new(big.Int).Lsh(big.NewInt(1), rhoFracBits+p.shift))
	if rEff.Cmp(r) < 0 {
		t.Fatalf("effective rate %s below the configured %s", rEff.FloatString(30), r.FloatString(30))
	}
	bRat := new(big.Rat).SetFloat64(burst)
	one := big.NewRat(1, 1)
	excess, maxExcess := new(big.Rat), new(big.Rat)
	strictMisses := 0
	for i := range cps {
		for j := i + 1; j < len(cps); j++ {
			T := new(big.Rat).SetInt64(cps[j].now - cps[i].now)
			acc := new(big.Rat).SetInt(new(big.Int).SetUint64(cps[j].accepted - cps[i].accepted))
			lo := new(big.Rat).Sub(new(big.Rat).Mul(r, T), one) // r·T − 1
			if i == 0 {
				// From a full bucket: at least b + r·T − 1.
				lo.Add(lo, bRat)
			}
			hi := new(big.Rat).Add(new(big.Rat).Mul(r, T), bRat)       // b + r·T
			hiEff := new(big.Rat).Add(new(big.Rat).Mul(rEff, T), bRat) // b + r_eff·T
			if acc.Cmp(lo) < 0 || acc.Cmp(hiEff) > 0 || (strict && acc.Cmp(hi) > 0) {
				t.Fatalf("checkpoints %d..%d (t %d..%d, T %s ns): accepted %s, want at least %s and at most %s (b + r·T) / %s (b + r_eff·T)",
					i, j, cps[i].now, cps[j].now, T.RatString(), acc.RatString(),
					lo.FloatString(12), hi.FloatString(12), hiEff.FloatString(12))
			}
			if acc.Cmp(hi) > 0 {
				strictMisses++
				if excess.Sub(acc, hi); excess.Cmp(maxExcess) > 0 {
					maxExcess.Set(excess)
				}
			}
		}
	}
	if strictMisses > 0 {
		f, _ := maxExcess.Float64()
		t.Logf("%d of %d intervals exceed b + r·T by the rounding of ρ, at most %.3g token",
			strictMisses, len(cps)*(len(cps)-1)/2, f)
	}
}
