package behave

import (
	"math"
	"math/bits"

	"github.com/valyala/fastrand"
)

// Mix64 is SplitMix64's finaliser: a bijection of uint64 that spreads every
// input bit over the whole output, so neighbouring indexes and seeds give
// unrelated generator states.
func Mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// ClientSeed derives the seed of the client at index from the run's seed.
func ClientSeed(runSeed uint64, index int) uint64 {
	return Mix64(runSeed ^ Mix64(uint64(index)))
}

// SubSeed derives the seed of one of a client's generators (stream n) from
// the client's seed, so a behaviour's independent streams (movement,
// abilities, chat...) do not share one sequence.
func SubSeed(seed uint64, n int) uint64 {
	return Mix64(seed + Mix64(uint64(n)+1))
}

// Rand is a client's deterministic random source: two of fastrand's
// xorshift generators, seeded from the two halves of a derived 64-bit seed;
// each output is the first one's plus the second one's rotated by half a
// word. One 32-bit generator alone would give two of a large plan's streams
// the same sequence once its streams number tens of thousands (a birthday
// collision of 32-bit states); with two, the state is the whole 64-bit
// seed. The rotation keeps seeds with swapped halves apart (combining
// the two outputs unrotated is symmetric in them) and makes every output
// bit, the lowest included, depend on both generators; the addition's
// carries mix the bits further than an XOR would. The same seed always
// yields the same sequence.
// The zero value is not usable (fastrand would seed it from the clock);
// make one with NewRand. It is not safe for concurrent use.
type Rand struct {
	lo, hi fastrand.RNG
}

// NewRand returns a source seeded by seed.
func NewRand(seed uint64) *Rand {
	r := &Rand{}
	lo, hi := uint32(seed), uint32(seed>>32)
	// fastrand seeds a zero state from the clock: never let it.
	if lo == 0 {
		lo = 0x9e3779b9
	}
	if hi == 0 {
		hi = 0x7f4a7c15
	}
	r.lo.Seed(lo)
	r.hi.Seed(hi)
	return r
}

// Uint32 returns a uniform uint32.
func (r *Rand) Uint32() uint32 { return r.lo.Uint32() + bits.RotateLeft32(r.hi.Uint32(), 16) }

// Uint64 returns a uniform uint64.
func (r *Rand) Uint64() uint64 { return uint64(r.Uint32())<<32 | uint64(r.Uint32()) }

// uint32n returns a uniform uint32 in [0, n) by multiply-shift, as
// fastrand's Uint32n does.
func (r *Rand) uint32n(n uint32) uint32 { return uint32(uint64(r.Uint32()) * uint64(n) >> 32) }

// Intn returns a uniform int in [0, n); 0 when n ≤ 0.
func (r *Rand) Intn(n int) int {
	if n <= 0 {
		return 0
	}
	if n <= math.MaxUint32 {
		return int(r.uint32n(uint32(n)))
	}
	return int(r.Uint64() % uint64(n))
}

// Float64 returns a uniform float64 in [0, 1).
func (r *Rand) Float64() float64 { return float64(r.Uint32()) / (1 << 32) }

// Chance returns true with probability p.
func (r *Rand) Chance(p float64) bool { return r.Float64() < p }

// Between returns a uniform int64 in [lo, hi]; lo when hi ≤ lo.
func (r *Rand) Between(lo, hi int64) int64 {
	if hi <= lo {
		return lo
	}
	span := uint64(hi-lo) + 1
	if span <= math.MaxUint32 {
		return lo + int64(r.uint32n(uint32(span)))
	}
	return lo + int64(r.Uint64()%span)
}

// Spread returns a uniform value in [d/2, 3d/2]: d with ±50% jitter.
func (r *Rand) Spread(d int64) int64 { return r.Between(d/2, d+d/2) }

// Exp returns an exponentially distributed duration of the given mean (the
// gap between events of a Poisson process), at least 1 and at most about
// 22 means.
func (r *Rand) Exp(mean int64) int64 {
	u := r.Float64() // [0, 1): 1-u is in (0, 1]
	return max(1, int64(-math.Log(1-u)*float64(mean)))
}
