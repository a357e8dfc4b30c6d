package atomicbucket

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Re-anchoring the clock keeps the fraction of a refill quantum earned so
// far: at 7e8/s one quantum is a whole token, and a SetRateAt every
// nanosecond (to the same rate) used to drop each 0.7 token earned, so no
// take ever passed.
func TestSetRateKeepsTheFractionEarned(t *testing.T) {
	b, err := NewAt(7e8, 1000, 0)
	require.NoError(t, err)
	require.True(t, b.TakeAt(0, 1000).OK())
	passed := 0
	for now := int64(1); now <= 1000; now++ {
		require.NoError(t, b.SetRateAt(7e8, now))
		for b.TakeAt(now, 1).OK() {
			passed++
		}
	}
	assert.InDelta(t, 700, passed, 1, "0.7 token per ns over 1000 ns")
}

// A refund of more than a burst fills the bucket; its units (n << F) no
// longer wrap and empty it instead.
func TestRefundOfMoreThanABurstFills(t *testing.T) {
	b, err := NewAt(1, 1, 0)
	require.NoError(t, err)
	require.Equal(t, 1.0/(1<<29), b.Quantum(), "F = 29: 2^35 tokens are 2^64 units")
	for _, n := range []uint64{1 << 35, 3 << 35, 1<<64 - 1} {
		require.True(t, b.TakeAt(0, 1).OK())
		b.RefundAt(&b.word, 0, n)
		assert.Equal(t, 1.0, b.TokensAt(0), "refund of %d", n)
		b.ResetAt(0)
	}
}

// A new rate whose fill time under the current burst is too long is the
// rate's fault, and the error names it.
func TestSetRateFillTimeNamesTheRate(t *testing.T) {
	b, err := NewAt(1, 1000, 0)
	require.NoError(t, err)
	err = b.SetRateAt(1e-4, 0)
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "rate", ce.Field)
	assert.True(t, errors.Is(err, ErrRate))
	assert.Contains(t, err.Error(), "fill time")
}

// A rate cut so deep that ρ's rounding would run it over one part in a
// million fast is refused; a cut within that is kept to that precision.
func TestSetRateCutKeepsItsPrecision(t *testing.T) {
	b, err := NewAt(1e9, 1, 0)
	require.NoError(t, err)
	var ce *ConfigError
	require.ErrorAs(t, b.SetRateAt(1e-6, 0), &ce, "ρ would be 1153 units of 2^-60")
	assert.Equal(t, "rate", ce.Field)
	require.NoError(t, b.SetRateAt(1e-2, 0))
	assert.InEpsilon(t, 1e-2, b.EffectiveRate(), 1e-6)
	assert.GreaterOrEqual(t, b.EffectiveRate(), 1e-2)
}

// A burst raise applies as if the new burst had always applied: a bucket
// that sat full gets the credit it earned meanwhile, up to the new burst,
// as the doc says; one below keeps its level.
func TestSetBurstRaiseIsRetroactive(t *testing.T) {
	b, err := NewAt(1, 1, 0)
	require.NoError(t, err)
	idle, _ := NewAt(1, 1, 0)
	require.True(t, b.TakeAt(int64(999*time.Second), 1).OK()) // empty at 999s
	require.NoError(t, b.SetBurst(1000))
	require.NoError(t, idle.SetBurst(1000))
	assert.InDelta(t, 1.0, b.TokensAt(int64(1000*time.Second)), 1e-9, "earned 1 since last empty")
	assert.Equal(t, 1000.0, idle.TokensAt(int64(1000*time.Second)), "full since 0: 1000 earned, capped at the new burst")
}

// A refund at a stale reading, where the level is below empty, makes it
// min(burst, level + n): a refund of more than a burst there gives back n
// tokens, not a full bucket, unless n covers what the bucket lacks.
func TestRefundOverABurstAtAStaleReading(t *testing.T) {
	const ms = int64(time.Millisecond)
	for _, c := range []struct {
		n    uint64
		pass bool
	}{{1, false}, {2, false}, {5, false}, {11, true}, {1 << 40, true}, {1<<64 - 1, true}} {
		b, err := NewAt(1000, 1, 0)
		require.NoError(t, err)
		require.True(t, b.TakeAt(sec, 1).OK())
		b.RefundAt(&b.word, sec-10*ms, c.n) // the level there is −10 tokens
		assert.Equal(t, c.pass, b.TakeAt(sec-5*ms, 1).OK(), "refund of %d", c.n)
	}
}
