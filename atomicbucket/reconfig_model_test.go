package atomicbucket

import (
	"math"
	"math/rand"
	"testing"
	"time"
)

// The exact model (ratModel) follows rate changes by re-anchoring its clock
// at each SetRateAt's exact value, the fraction of a unit included.

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
		m := newRatModel(t, &b.Limit, rate, burst, t0)
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
				if err := b.SetRateAt(nr, at); err != nil {
					continue
				}
				if b.Limit.p.Load() == old {
					t.Fatal("not published")
				}
				m.setRateAt(t, &b.Limit, at)
			default:
				n := uint64(1 + rng.Intn(int(burst)))
				if rng.Intn(4) == 0 {
					n = uint64(burst) + 1 + uint64(rng.Intn(5))
				}
				before := b.Word()
				b.RefundAt(&b.word, now, n)
				m.refund(now, n)
				if b.Word() != m.word() {
					t.Fatalf("iter %d step %d: refund %d at %d (burst %v): word %#x, model %#x (level before %v)", iter, step, n, now, burst, b.Word(), m.word(), b.Level(before, now))
				}
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
			m := newRatModel(t, &b.Limit, rate, 5, base+1)
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
					if b.SetRateAt(rate*f, at) == nil {
						m.setRateAt(t, &b.Limit, at)
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
