package atomicbucket

import (
	"errors"
	"math"
	"math/big"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sec = int64(time.Second)

// The example from the seed documents: rate 10, burst 3.
func TestSeedExample(t *testing.T) {
	b, err := NewAt(10, 3, 0)
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		require.True(t, b.TakeAt(0, 1).OK(), "take %d at t=0", i)
	}
	r := b.TakeAt(0, 1)
	assert.Equal(t, Denied, r.Status())
	assert.Equal(t, 100*time.Millisecond, r.RetryAfter())
	r = b.TakeAt(sec/20, 1) // 0.5 tokens
	assert.Equal(t, Denied, r.Status())
	assert.Equal(t, 50*time.Millisecond, r.RetryAfter())
	assert.InDelta(t, 0.5, b.TokensAt(sec/20), 1e-6)
	assert.True(t, b.TakeAt(sec/10, 1).OK()) // 1.0 token
}

func TestTableAtExplicitTimes(t *testing.T) {
	type step struct {
		at        int64
		n         uint64
		status    Status
		remaining uint32
		retry     time.Duration
	}
	cases := []struct {
		name        string
		rate, burst float64
		steps       []step
	}{
		{"default burst of 2.5/s is 3", 2.5, 0, []step{
			{0, 3, Allowed, 0, 0},
			{0, 1, Denied, 0, 400 * time.Millisecond},
			{sec * 4 / 10, 1, Allowed, 0, 0},
		}},
		{"idle never banks more than burst", 1, 2, []step{
			{0, 2, Allowed, 0, 0},
			{60 * sec, 1, Allowed, 1, 0},
			{60 * sec, 1, Allowed, 0, 0},
			{60 * sec, 1, Denied, 0, time.Second},
		}},
		{"n above burst is invalid, not denied", 5, 4, []step{
			{0, 5, Invalid, 0, 0},
			{0, 0, Invalid, 0, 0},
			{0, 4, Allowed, 0, 0},
		}},
		{"multi-token retry is exact", 3, 10, []step{
			{0, 10, Allowed, 0, 0},
			{0, 2, Denied, 0, 666_666_667},
			{666_666_666, 2, Denied, 1, 1},
			{666_666_667, 2, Allowed, 0, 0},
		}},
		{"byte budget", 480_000, 8000, []step{
			{0, 7999, Allowed, 1, 0},
			{0, 800, Denied, 1, 1_664_584},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := NewAt(c.rate, c.burst, 0)
			require.NoError(t, err)
			for i, s := range c.steps {
				r := b.TakeAt(s.at, s.n)
				assert.Equal(t, s.status, r.Status(), "step %d", i)
				assert.Equal(t, s.remaining, r.Remaining(), "step %d remaining", i)
				assert.Equal(t, s.retry, r.RetryAfter(), "step %d retry", i)
			}
		})
	}
}

func TestValidationNamesTheField(t *testing.T) {
	cases := []struct {
		rate, burst float64
		field       string
		is          error
	}{
		{0, 1, "rate", ErrRate},
		{-1, 1, "rate", ErrRate},
		{math.NaN(), 1, "rate", ErrRate},
		{math.Inf(1), 1, "rate", ErrRate},
		{2e9, 0, "rate", ErrRate},
		{1, 0.5, "burst", ErrBurst},
		{1, math.Inf(1), "burst", ErrBurst},
		{1, math.NaN(), "burst", ErrBurst},
		{1, 2e9, "burst", ErrBurst},
		{0.001, 1e6, "burst", ErrBurst}, // fill time 1e9 s
	}
	for _, c := range cases {
		_, err := NewAt(c.rate, c.burst, 0)
		require.Error(t, err, "rate %v burst %v", c.rate, c.burst)
		assert.True(t, errors.Is(err, c.is), "%v", err)
		var ce *ConfigError
		require.True(t, errors.As(err, &ce))
		assert.Equal(t, c.field, ce.Field)
		assert.Contains(t, err.Error(), c.field)
	}
}

func TestBoundaryRatesAndBursts(t *testing.T) {
	maxFill := MaxFillTime.Seconds()
	pairs := [][2]float64{
		{0.001, 1}, {0.001, 0.001 * maxFill}, {1e9, 1}, {1e9, 1e9},
		{1e9 / maxFill, 1e9}, {1 / maxFill, 1}, {0.001, 2592},
	}
	for _, p := range pairs {
		b, err := NewAt(p[0], p[1], 0)
		require.NoError(t, err, "rate %v burst %v", p[0], p[1])
		n := uint64(p[1])
		require.True(t, b.TakeAt(0, n).OK())
		r := b.TakeAt(0, 1)
		require.Equal(t, Denied, r.Status())
		// One token's worth of time later (within a nanosecond of 1/rate),
		// one token passes, and not a nanosecond earlier.
		one := int64(r.RetryAfter())
		assert.InDelta(t, 1e9/p[0], float64(one), 1+1e-12*float64(one))
		require.False(t, b.TakeAt(one-1, 1).OK())
		require.True(t, b.TakeAt(one, 1).OK(), "rate %v burst %v after %dns", p[0], p[1], one)
		// A full fill time later the bucket is full again, and no fuller.
		fill := int64(math.Ceil(p[1] / b.EffectiveRate() * 1e9))
		assert.InDelta(t, p[1], b.TokensAt(one+fill+1), 1e-9*p[1])
		assert.Equal(t, Invalid, b.TakeAt(one+fill, n+1).Status())
	}
}

func TestEffectiveRateMatchesTheConfiguredOne(t *testing.T) {
	for _, r := range []float64{0.001, 1.0 / 3, 30, 240, 480_000, 7e8, 1e9, 123_456.789} {
		l, err := NewLimit(r, 0, 0)
		require.NoError(t, err)
		assert.InEpsilon(t, r, l.EffectiveRate(), 1e-15)
	}
}

func TestClockJumps(t *testing.T) {
	year := int64(365 * 24 * time.Hour)
	b, err := NewAt(10, 5, 0)
	require.NoError(t, err)
	require.True(t, b.TakeAt(0, 5).OK())
	// Years forward: full again, never more than burst.
	assert.Equal(t, 5.0, b.TokensAt(10*year))
	require.True(t, b.TakeAt(10*year, 5).OK())
	require.False(t, b.TakeAt(10*year, 1).OK())
	// A small step back: credits nothing, and the bucket is where it was.
	w := b.Word()
	r := b.TakeAt(10*year-sec, 1)
	assert.Equal(t, Denied, r.Status())
	assert.Equal(t, 1100*time.Millisecond, r.RetryAfter())
	assert.Equal(t, w, b.Word(), "a stale reading writes nothing")
	assert.True(t, b.TakeAt(10*year+sec/10, 1).OK())
	// Years back: no credit, no panic, and refill resumes from the new time.
	w = b.Word()
	r = b.TakeAt(-5*year, 1)
	assert.Equal(t, Denied, r.Status())
	assert.NotEqual(t, w, b.Word(), "a jump back past a fill time rebases")
	assert.Equal(t, 0.0, b.TokensAt(-5*year))
	assert.True(t, b.TakeAt(-5*year+sec/10, 1).OK())
	assert.False(t, b.TakeAt(-5*year+sec/10, 1).OK())
}

func TestDenialWritesNothing(t *testing.T) {
	b, err := NewAt(1, 1, 0)
	require.NoError(t, err)
	require.True(t, b.TakeAt(0, 1).OK())
	w := b.Word()
	for i := int64(0); i < 100; i++ {
		require.False(t, b.TakeAt(i*1000, 1).OK())
	}
	assert.Equal(t, w, b.Word())
}

func TestLiveRateAndBurstChange(t *testing.T) {
	b, err := NewAt(10, 10, 0)
	require.NoError(t, err)
	require.True(t, b.TakeAt(0, 10).OK())
	// Half a second at 10/s: 5 tokens. Then the rate halves: level kept.
	require.NoError(t, b.SetRateAt(5, sec/2))
	assert.InDelta(t, 5, b.TokensAt(sec/2), 1e-6)
	assert.InDelta(t, 7.5, b.TokensAt(sec), 1e-6)
	// Burst lowered below the level: capped, never above.
	require.NoError(t, b.SetBurst(3))
	assert.Equal(t, 3.0, b.TokensAt(sec))
	require.True(t, b.TakeAt(sec, 3).OK())
	assert.Equal(t, Invalid, b.TakeAt(sec, 4).Status())
	// Raising the rate past the scale's headroom is refused, naming rate.
	err = b.SetRateAt(1e9, sec)
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "rate", ce.Field)
}

func TestFrozenTimeGivesExactlyBurst(t *testing.T) {
	const burst = 1000
	b, err := NewAt(1, burst, 0)
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	passed := 0
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for i := 0; i < 500; i++ {
				if b.TakeAt(5, 1).OK() {
					n++
				}
			}
			mu.Lock()
			passed += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	assert.Equal(t, burst, passed)
}

func TestZeroAllocations(t *testing.T) {
	b, err := NewAt(1e6, 100, 0)
	require.NoError(t, err)
	now := int64(0)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { now += 1000; b.TakeAt(now, 1) }))
	assert.Zero(t, testing.AllocsPerRun(1000, func() { b.TakeAt(now, 1) }), "deny")
	var retry time.Duration
	assert.Zero(t, testing.AllocsPerRun(1000, func() { retry += b.TakeAt(now, 1).RetryAfter() }), "deny with RetryAfter")
	assert.Positive(t, retry)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { b.Take(1) }))
	assert.Zero(t, testing.AllocsPerRun(1000, func() { b.TokensAt(now) }))
	c := StartCoarseClock(time.Millisecond)
	defer c.Stop()
	assert.Zero(t, testing.AllocsPerRun(1000, func() { b.TakeAt(c.Now(), 1) }))
}

// DeniedFor carries a layer's own wait, and the zero Result fails closed.
func TestDeniedForAndZeroResult(t *testing.T) {
	r := DeniedFor(3 * time.Second)
	assert.Equal(t, Denied, r.Status())
	assert.False(t, r.OK())
	assert.Equal(t, 3*time.Second, r.RetryAfter())
	assert.Zero(t, r.Remaining())
	assert.Zero(t, DeniedFor(-time.Second).RetryAfter(), "a negative wait is no wait")
	var zero Result
	assert.Equal(t, Denied, zero.Status())
	assert.Zero(t, zero.RetryAfter())
	assert.Equal(t, "denied (remaining 0, retry after 3s)", r.String())
}

func TestCoarseClockAdvancesAndStops(t *testing.T) {
	c := StartCoarseClock(time.Millisecond)
	start := c.Now()
	deadline := time.Now().Add(2 * time.Second)
	for c.Now() == start && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	assert.Greater(t, c.Now(), start)
	c.Stop()
	c.Stop()
	last := c.Now()
	time.Sleep(5 * time.Millisecond)
	assert.Equal(t, last, c.Now())
}

func TestRefundRestoresAndNeverExceedsBurst(t *testing.T) {
	b, err := NewAt(10, 5, 0)
	require.NoError(t, err)
	require.True(t, b.TakeAt(0, 4).OK())
	w := b.Word()
	b.RefundAt(&b.word, 0, 4)
	assert.Equal(t, 5.0, b.TokensAt(0))
	require.True(t, b.TakeAt(0, 4).OK())
	assert.Equal(t, w, b.Word(), "take, refund, take is the same word as one take")
	// After 0.2 s the bucket holds 3; refunding 4 caps at the burst.
	b.RefundAt(&b.word, sec/5, 4)
	assert.Equal(t, 5.0, b.TokensAt(sec/5))
	// Decide alone writes nothing.
	next, r := b.Decide(b.Word(), sec/5, 5)
	assert.True(t, r.OK())
	assert.NotEqual(t, b.Word(), next)
	assert.Equal(t, 5.0, b.TokensAt(sec/5))
}

// A stale reading (a backlog processed late, a goroutine holding an old
// timestamp) never refills a bucket: below StepBack it only waits.
func TestStaleReadingDoesNotRefill(t *testing.T) {
	b, err := NewAt(10, 5, 0)
	require.NoError(t, err)
	T := int64(100 * time.Hour)
	require.True(t, b.TakeAt(T, 5).OK())
	w := b.Word()
	for _, stale := range []time.Duration{time.Second, 62 * time.Second, time.Hour, StepBack} {
		r := b.TakeAt(T-int64(stale), 1)
		assert.Equal(t, Denied, r.Status(), "stale by %v", stale)
		assert.Equal(t, w, b.Word(), "a stale reading by %v writes nothing", stale)
	}
	assert.False(t, b.TakeAt(T, 1).OK(), "back at T, the bucket is still empty")
}

// A burst that is not a whole number of refill quanta is rounded down, and
// Burst and TokensAt report what the bucket really holds.
func TestFractionalBurstIsRoundedToQuanta(t *testing.T) {
	b, err := NewAt(1e9, 1.5, 0) // a quantum is a whole token at 1e9/s
	require.NoError(t, err)
	assert.Equal(t, 1.0, b.Burst())
	assert.Equal(t, 1.0, b.TokensAt(0))
	b, err = NewAt(10, 2.5, 0)
	require.NoError(t, err)
	assert.Equal(t, 2.5, b.Burst())
	assert.Equal(t, 2.5, b.TokensAt(0))
	assert.True(t, b.TakeAt(0, 2).OK())
	assert.Equal(t, Invalid, b.TakeAt(0, 3).Status())
}

// TakeLiveAt leaves a retired word alone, and never stores the retired
// value itself: a take whose new word would equal it stores one quantum
// less credit.
func TestTakeLiveAtNeverTouchesOrStoresDead(t *testing.T) {
	l, err := NewLimit(10, 3, 0)
	require.NoError(t, err)
	var w atomic.Uint64
	w.Store(l.FullWord(0))

	const dead = 0xdead
	r, ok := l.TakeLiveAt(&w, 0, 1, w.Load())
	assert.False(t, ok, "the word is the dead value")
	assert.False(t, r.OK())
	assert.Equal(t, l.FullWord(0), w.Load(), "nothing written")

	next, want := l.Decide(w.Load(), 0, 1)
	r, ok = l.TakeLiveAt(&w, 0, 1, next)
	require.True(t, ok)
	assert.Equal(t, decisionOf(want), decisionOf(r))
	assert.Equal(t, next+1, w.Load(), "the dead value is never stored")

	r, ok = l.TakeLiveAt(&w, 0, 1, dead)
	assert.True(t, ok && r.OK())
	r, ok = l.TakeLiveAt(&w, 0, 1, dead)
	assert.True(t, ok)
	assert.Equal(t, Denied, r.Status(), "a quantum short of the third token")
	r, ok = l.TakeLiveAt(&w, 0, 9, dead)
	assert.True(t, ok)
	assert.Equal(t, Invalid, r.Status())

	// Each arm that stores nudges a new word equal to dead: a take from a
	// partly empty bucket, and the rebase after a clock reset backwards.
	back := -int64(time.Second) - int64(StepBack) - int64(time.Minute) // beyond a fill time (0.3s) and StepBack
	for _, c := range []struct {
		name string
		old  uint64
		now  int64
		st   Status
	}{
		{"partly empty", l.FullWord(0) + 1<<l.p.Load().shift, 0, Allowed},
		{"rebase", l.FullWord(0), back, Denied},
	} {
		w.Store(c.old)
		next, want := l.Decide(c.old, c.now, 1)
		require.NotEqual(t, c.old, next, c.name)
		r, ok := l.TakeLiveAt(&w, c.now, 1, next)
		require.True(t, ok, c.name)
		assert.Equal(t, c.st, r.Status(), c.name)
		assert.Equal(t, decisionOf(want), decisionOf(r), c.name)
		assert.Equal(t, next+1, w.Load(), "%s: the dead value is never stored", c.name)
	}
}

// InvalidTake is the result Decide gives a take that can never pass, and
// Valid says which takes those are.
func TestInvalidTakeIsWhatDecideSays(t *testing.T) {
	b, err := NewAt(10, 3, 0)
	require.NoError(t, err)
	for _, n := range []uint64{0, 4, 1 << 63} {
		assert.False(t, b.Valid(n), "n=%d", n)
		_, r := b.Decide(b.Word(), 0, n)
		assert.Equal(t, InvalidTake(), r, "n=%d", n)
	}
	for _, n := range []uint64{1, 3} {
		assert.True(t, b.Valid(n), "n=%d", n)
	}
}

// TestEffectiveRateIsTheNearestFloat64 holds EffectiveRate to its doc: the
// float64 nearest the fixed-point rate ρ·1e9/2^(60+F), rounded once (30/s
// is exactly 30, not 29.999999999999996), for every integer rate up to
// 20,000/s and a spread of others, after SetRateAt too.
func TestEffectiveRateIsTheNearestFloat64(t *testing.T) {
	nearest := func(l *Limit) float64 {
		p := l.p.Load()
		exact := new(big.Rat).SetFrac(new(big.Int).Mul(new(big.Int).SetUint64(p.rho), big.NewInt(1e9)),
			new(big.Int).Lsh(big.NewInt(1), rhoFracBits+p.shift))
		f, _ := exact.Float64() // the nearest float64, ties to even
		return f
	}
	l, err := NewLimit(30, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, 30.0, l.EffectiveRate(), "30/s")
	rates := []float64{0.5, 1.0 / 3, 2.5, 480_000, 1e9, 123456.789, 1e-6 * 7}
	for r := 1; r <= 20_000; r++ {
		rates = append(rates, float64(r))
	}
	off := 0
	for _, r := range rates {
		l, err := NewLimit(r, math.Max(1, math.Ceil(r)), 0)
		if err != nil {
			continue // outside the encoding (a fill time too long)
		}
		if got, want := l.EffectiveRate(), nearest(l); got != want {
			off++
			if off < 5 {
				t.Errorf("rate %v: EffectiveRate %v, nearest float64 %v", r, got, want)
			}
		}
		if r > 1 && r < 1e8 {
			require.NoError(t, l.SetRateAt(r*3, 5))
			if got, want := l.EffectiveRate(), nearest(l); got != want {
				off++
				t.Errorf("rate %v after SetRateAt(%v): EffectiveRate %v, nearest float64 %v", r, r*3, got, want)
			}
		}
	}
	assert.Zero(t, off, "rates whose EffectiveRate is not the nearest float64")
}
