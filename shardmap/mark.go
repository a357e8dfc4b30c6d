package shardmap

import (
	"math"
	"time"

	"github.com/sluicedev/sluice/internal/timesat"
)

// Mark is a slot's word of presence and escalation state (a small counter
// and a coarse deadline), packed into one uint64 so that it is updated with
// one CompareAndSwap. Marks live beside the cells, in an array of their
// own; a take reads its key's mark only while the shard holds a key.
//
//	bit  0      present (1 in every live slot; 0 only in an empty slot)
//	bit  1      held: takes are refused until the deadline
//	bits 2–9    count, 0–255 (the caller's, e.g. soft violations)
//	bits 10–63  deadline, in whole microseconds after the Map's anchor,
//	            rounded up (54 bits: 571 years)
//
// A Mark whose deadline has passed carries no state: the map may evict the
// key (if its bucket is full) and a caller should treat it as MarkNone.
// Marks are made with Map.MakeMark, which knows the anchor. The zero Mark
// is not a valid Mark of a live key; MarkNone is the state of a new key.
// Mark is a plain value, safe to copy.
type Mark uint64

const (
	// MarkNone is the mark of a key with no escalation state.
	MarkNone Mark = 1

	markPresent Mark = 1        // bit 0, set in every live slot (and in markDead)
	markEmpty   Mark = 0        // an empty slot
	markDead    Mark = ^Mark(0) // a removed or moved slot
	markHeld    Mark = 1 << 1
	countBits        = 8
	countShift       = 2
	tickShift        = 10
	maxTicks         = 1<<54 - 2 // all ones is reserved for markDead
	tick             = 1000      // ns per deadline tick
	countMask        = 1<<countBits - 1
)

// MaxCount is the largest count a Mark holds.
const MaxCount = countMask

// Held reports whether the mark holds the key (refuses its takes) until its
// deadline.
func (mk Mark) Held() bool { return mk&markHeld != 0 && mk != markDead }

// Count returns the counter.
func (mk Mark) Count() int { return int(mk>>countShift) & countMask }

func (mk Mark) ticks() uint64 { return uint64(mk) >> tickShift }

// MakeMark returns a mark with the given count (clamped to 0..MaxCount),
// hold flag and deadline (nanoseconds on the caller's clock; rounded up to
// the next microsecond after the anchor, and clamped to the representable
// range).
func (m *Map) MakeMark(count int, held bool, deadline int64) Mark {
	count = min(max(count, 0), MaxCount)
	var t uint64
	if deadline > m.anchor {
		d := uint64(deadline) - uint64(m.anchor) // the exact difference: it is positive and below 2^64
		t = min((d+tick-1)/tick, maxTicks)
		if d > math.MaxUint64-tick { // d+tick−1 wrapped
			t = maxTicks
		}
	}
	mk := MarkNone | Mark(count)<<countShift | Mark(t)<<tickShift
	if held {
		mk |= markHeld
	}
	return mk
}

// Deadline returns the mark's deadline in nanoseconds on the caller's clock
// (saturating at math.MaxInt64).
func (m *Map) Deadline(mk Mark) int64 {
	d := mk.ticks() * tick                          // ≤ 2^54·1000 < 2^64
	if d > uint64(math.MaxInt64)-uint64(m.anchor) { // modular arithmetic: right for either sign of anchor
		return math.MaxInt64
	}
	return int64(uint64(m.anchor) + d)
}

// Active reports whether mk carries state at now: it is not MarkNone and
// its deadline has not passed.
func (m *Map) Active(mk Mark, now int64) bool {
	return mk != MarkNone && mk != markEmpty && mk != markDead && now < m.Deadline(mk)
}

// HeldAt reports whether mk refuses takes at now, and for how long
// (saturating at math.MaxInt64).
func (m *Map) HeldAt(mk Mark, now int64) (time.Duration, bool) {
	if !mk.Held() {
		return 0, false
	}
	d := m.Deadline(mk)
	if now >= d {
		return 0, false
	}
	return time.Duration(timesat.Sub(d, now)), true
}

// markFloor is the earliest epoch a map gives its marks: about 219 years
// before 0. A mark keeps a deadline in whole ticks after its epoch, for 571
// years, and clamps an earlier one to the epoch; from markFloor on, the
// latest deadline it holds is past math.MaxInt64, so a hold that runs to
// the end of the clock still saturates there.
const markFloor = -(1 << 62) - (1 << 61)

// markAnchor is the epoch of the marks of a map made at now: the earliest
// time from markFloor on that is a whole number of ticks before now.
// Anchored at now itself, a hold begun at a time before it (a now below 0
// on a clock that read 0) would have lasted until now; anchored there, it
// lasts as long as any other, its deadline rounded up to the same ticks as
// one begun after now.
func markAnchor(now int64) int64 {
	if now < markFloor {
		return now
	}
	floor := int64(markFloor)
	d := uint64(now) - uint64(floor) // now − markFloor, exact
	return floor + int64(d%tick)
}
