package atomicbucket

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestNextFullAgreesWithDecide holds the pass path's take from a full
// bucket (Pass.NextFull, with its precomputed take of one token) to Decide,
// the decision written without a Pass, for every kind of n, at bursts of
// one token, of whole tokens and with a fraction, on a bucket that is full
// and one that has stood idle far longer than a fill.
func TestNextFullAgreesWithDecide(t *testing.T) {
	for _, burst := range []float64{1, 1.25, 1.5, 2, 3, 999.5, 1000} {
		b, err := NewAt(10, burst, 0)
		if err != nil {
			t.Fatalf("burst %v: %v", burst, err)
		}
		full := b.Word()
		maxN := uint64(math.Floor(b.Burst()))
		for _, now := range []int64{0, 1e12} {
			for _, n := range []uint64{0, 1, 2, maxN, maxN + 1, math.MaxUint64} {
				t.Run(fmt.Sprintf("burst=%v/now=%d/n=%d", burst, now, n), func(t *testing.T) {
					pass := b.Snapshot().PassAt(now, n)
					if !pass.IsFull(full) {
						t.Fatal("the word of a new bucket is not full")
					}
					next, r, ok := pass.NextFull()
					decNext, dec := b.Decide(full, now, n)
					if ok != (dec.Status() == Allowed) || ok && (next != decNext || r != dec) {
						t.Fatalf("NextFull %#x %+v %v, Decide %#x %+v", next, r, ok, decNext, dec)
					}
					if wantPass := n >= 1 && n <= maxN; ok != wantPass {
						t.Fatalf("passed %v, want %v (burst %v holds %d whole tokens)", ok, wantPass, b.Burst(), maxN)
					}
					if ok && uint64(r.Remaining()) != maxN-n {
						t.Fatalf("remaining %d, want %d", r.Remaining(), maxN-n)
					}
				})
			}
		}
	}
}

// TestPassAfterReconfiguration holds the Pass decisions (Next, that is
// NextFull or NextPartial as IsFull says) to Decide on the same word while
// SetBurst and SetRateAt replace the Limit's parameters between takes, so
// that the one-token precomputation follows every new burst.
func TestPassAfterReconfiguration(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	b, err := NewAt(100, 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	word, now := b.Word(), int64(0)
	for step := range 20000 {
		switch rng.IntN(10) {
		case 0:
			burst := float64(1+rng.IntN(200)) + []float64{0, 0.25, 0.5}[rng.IntN(3)]
			if err := b.SetBurst(burst); err != nil {
				t.Fatalf("step %d: SetBurst(%v): %v", step, burst, err)
			}
		case 1:
			rate := []float64{1, 10, 100, 1e3, 1e6}[rng.IntN(5)]
			if err := b.SetRateAt(rate, now); err != nil {
				continue // a fill time above the maximum at this burst
			}
		default:
			now += rng.Int64N(int64(50 * time.Millisecond))
			maxN := uint64(math.Floor(b.Burst()))
			n := []uint64{1, 1, 1, 2, maxN, maxN + 1, 0}[rng.IntN(7)]
			pass := b.Snapshot().PassAt(now, n)
			next, r, ok := pass.Next(word)
			want, dec := b.Decide(word, now, n)
			if ok != (dec.Status() == Allowed) || ok && (next != want || r != dec) {
				t.Fatalf("step %d: burst %v rate %v, n=%d at %d on %#x (full %v): Pass %#x %+v %v, Decide %#x %+v",
					step, b.Burst(), b.Rate(), n, now, word, pass.IsFull(word), next, r, ok, want, dec)
			}
			word = want
		}
	}
}
