package timesat

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAddSaturates(t *testing.T) {
	assert.Equal(t, int64(5), Add(2, 3))
	assert.Equal(t, int64(math.MaxInt64-1), Add(-1, math.MaxInt64))
	assert.Equal(t, int64(math.MaxInt64), Add(math.MaxInt64-1, 2))
}

func TestSubSaturates(t *testing.T) {
	assert.Equal(t, int64(7), Sub(10, 3))
	assert.Equal(t, int64(math.MaxInt64), Sub(math.MaxInt64-1, -1))
	assert.Equal(t, int64(math.MaxInt64), Sub(math.MaxInt64, -5), "wraps without saturation")
}

func TestOffsetKeepsOrder(t *testing.T) {
	ts := []int64{math.MinInt64, -1, 0, 1, math.MaxInt64}
	assert.Zero(t, Offset(math.MinInt64))
	for i := 1; i < len(ts); i++ {
		assert.Less(t, Offset(ts[i-1]), Offset(ts[i]), "%d < %d", ts[i-1], ts[i])
	}
}
