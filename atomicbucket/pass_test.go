package atomicbucket

import (
	"fmt"
	"math"
	"testing"
)

// TestNextFullAgreesWithNext holds the pass path's take from a full bucket
// (Pass.NextFull, with its precomputed take of one token) to Next and to
// Decide, the decision written without a Pass, for every kind of n, bursts of one token, of whole tokens and with
// a fraction included, on a bucket that is full and one that has stood idle
// far longer than a fill.
func TestNextFullAgreesWithNext(t *testing.T) {
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
					wantNext, wantR, wantOK := pass.Next(full)
					decNext, dec := b.Decide(full, now, n)
					if ok != wantOK || ok != (dec.Status() == Allowed) {
						t.Fatalf("NextFull ok %v, Next %v, Decide %v", ok, wantOK, dec.Status())
					}
					if ok && (next != wantNext || r != wantR || next != decNext || r != dec) {
						t.Fatalf("NextFull %#x %+v, Next %#x %+v, Decide %#x %+v", next, r, wantNext, wantR, decNext, dec)
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
