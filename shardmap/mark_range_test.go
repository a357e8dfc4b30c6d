package shardmap

import (
	"math"
	"testing"
	"time"
)

// A hold whose deadline is more than math.MaxInt64 after a take's now (a
// deadline near the end of the int64 clock, a now before 0: every int64 is
// a time on the caller's clock) runs for math.MaxInt64, not for the
// negative difference that wrapped, which a caller would read as no wait.
func TestHeldAtSaturates(t *testing.T) {
	m := newMap(t, 1, 1, Config{MaxKeys: 10, Shards: 1})
	mk := m.MakeMark(0, true, math.MaxInt64)
	for _, now := range []int64{-1, -int64(time.Hour), math.MinInt64} {
		d, held := m.HeldAt(mk, now)
		if !held || d != math.MaxInt64 {
			t.Errorf("held until %d, at %d: %v %v; want %v true", m.Deadline(mk), now, d, held, time.Duration(math.MaxInt64))
		}
	}
	if d, held := m.HeldAt(mk, 0); !held || d != time.Duration(m.Deadline(mk)) {
		t.Errorf("at 0: %v %v", d, held)
	}
}

// A Full refusal at a now before 0 (every int64 is a time on the caller's
// clock): a shard that does not know when it can make room says 0, not
// the time until 0; one whose key is held until a deadline more than
// math.MaxInt64 after now saturates instead of wrapping to a negative wait.
func TestFullWaitBeforeZero(t *testing.T) {
	now := -int64(time.Hour)

	// MaxKeys reached by another shard: this one holds no key, so it
	// does not know.
	m := newMap(t, 1, 1, Config{MaxKeys: 1, Shards: 2, EvictBackoff: -1})
	m.TakeAt(1, now, 1)
	other := uint64(2)
	for m.ShardOf(other) == m.ShardOf(1) {
		other++
	}
	if r, st := m.TakeAt(other, now, 1); st != Full || r.RetryAfter() != 0 {
		t.Errorf("insert into an empty shard of a map at MaxKeys, at %d: %v %v; want full, retry after 0", now, st, r)
	}

	// The only key is held until long after now.
	m = newMap(t, 1, 1, Config{MaxKeys: 1, Shards: 1, EvictBackoff: -1})
	until := int64(math.MaxInt64 - 1e12)
	m.TakeAt(1, now, 1)
	m.UpdateMark(1, func(Mark) (Mark, bool) { return m.MakeMark(0, true, until), true })
	if r, st := m.TakeAt(2, now, 1); st != Full || r.RetryAfter() != math.MaxInt64 {
		t.Errorf("insert into a shard held until %d, at %d: %v %v; want full, retry after %v", until, now, st, r, time.Duration(math.MaxInt64))
	}
}

// A shard whose only key is held to the end of the clock knows when it can
// make room: never, which a Full refusal says as the longest wait, not as
// "not known" (0), which a caller fills with one fill time.
func TestFullOfAKeyHeldForever(t *testing.T) {
	m := newMap(t, 1, 1, Config{MaxKeys: 1, Shards: 1, EvictBackoff: -1})
	m.TakeAt(1, 0, 1)
	m.UpdateMark(1, func(Mark) (Mark, bool) { return m.MakeMark(0, true, math.MaxInt64), true })
	if r, st := m.TakeAt(2, 0, 1); st != Full || r.RetryAfter() < time.Duration(math.MaxInt64/2) {
		t.Errorf("insert into a shard held forever: %v %v; want full, retry after about %v", st, r, time.Duration(math.MaxInt64))
	}
}
