package atomicbucket

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Status says how a take ended.
type Status uint8

const (
	// Denied: not enough tokens now; RetryAfter says when there will be.
	// It is the zero value, so a Result nobody filled in fails closed.
	Denied Status = iota
	// Allowed: the tokens were taken.
	Allowed
	// Invalid: n was 0 or more than the burst, so the take can never pass.
	Invalid
)

func (s Status) String() string {
	switch s {
	case Denied:
		return "denied"
	case Allowed:
		return "allowed"
	case Invalid:
		return "invalid"
	}
	return "unknown"
}

// Result is the decision of one take: a small value returned without
// allocation. Its methods say how the take ended (Status, OK), how many
// whole tokens are left (Remaining) and, for a denial, when to retry
// (RetryAfter).
//
// RetryAfter is computed when asked, not when the take decides: a caller
// that only drops a denied message never pays for the 128-bit division, so
// a denial costs a few loads and compares. The zero Result is a denial with
// nothing to wait for, so a Result nobody filled in fails closed.
type Result struct {
	p    *params // the configuration a denial was decided under; nil otherwise
	now  int64   // when a denial was decided
	need uint64  // units a denial lacked at now; DeniedFor's nanoseconds if p is nil
	meta uint64  // Status in the low byte, Remaining above it
}

// OK reports whether the take passed.
func (r Result) OK() bool { return Status(r.meta) == Allowed }

// Status is Allowed, Denied or Invalid.
func (r Result) Status() Status { return Status(r.meta) }

// Remaining is the number of whole tokens left after the decision.
func (r Result) Remaining() uint32 { return uint32(r.meta >> 8) }

// RetryAfter is, for a denial, the exact time from the take's now until the
// tokens it asked for will be there (rounded up to the nanosecond), if
// nothing else takes them first; 0 otherwise. It saturates at
// math.MaxInt64. For a Result made by DeniedFor it is the time given.
func (r Result) RetryAfter() time.Duration {
	if r.p == nil {
		return time.Duration(r.need) // 0, or DeniedFor's wait
	}
	return r.p.waitAt(r.now, r.need)
}

// DeniedFor returns a denial that says to retry after d (0 if d is
// negative), with no tokens remaining: what a layer above a bucket returns
// when it refuses for a reason of its own, such as a key held in lockout.
func DeniedFor(d time.Duration) Result {
	return Result{need: uint64(max(d, 0)), meta: uint64(Denied)}
}

// InvalidTake returns the result of a take that can never pass (see
// Invalid): what a layer above a bucket returns for an n that Limit.Valid
// refused, without a second look at the configuration.
func InvalidTake() Result { return Result{meta: uint64(Invalid)} }

// String formats the decision for logs and test failures.
func (r Result) String() string {
	if r.Status() == Denied {
		return fmt.Sprintf("%v (remaining %d, retry after %v)", r.Status(), r.Remaining(), r.RetryAfter())
	}
	return fmt.Sprintf("%v (remaining %d)", r.Status(), r.Remaining())
}

// allowed and denied build results; they inline.
func allowed(remaining uint64) Result { return Result{meta: remaining<<8 | uint64(Allowed)} }

func denied(p *params, now int64, need, remaining uint64) Result {
	return Result{p: p, now: now, need: need, meta: remaining<<8 | uint64(Denied)}
}

// LevelAt returns the tokens the bucket word w holds at now, as a fraction
// of whole tokens, without changing it.
func (l *Limit) LevelAt(w *atomic.Uint64, now int64) float64 {
	return l.Level(w.Load(), now)
}

// Level returns the tokens a bucket whose word is word holds at now, as a
// fraction of whole tokens.
func (l *Limit) Level(word uint64, now int64) float64 {
	p := l.p.Load()
	v, _ := p.virtual(now)
	level := int64(v - word)
	switch {
	case level >= int64(p.capUnits):
		return p.burst
	case level <= 0:
		return 0
	}
	return float64(level) / float64(uint64(1)<<p.shift)
}

// FullIn returns how long after now a bucket whose word is word is full
// again if nothing takes from it: 0 if it is full at now.
func (l *Limit) FullIn(word uint64, now int64) time.Duration {
	p := l.p.Load()
	v, _ := p.virtual(now)
	missing := int64(p.capUnits) - int64(v-word)
	if missing <= 0 {
		return 0
	}
	return p.waitAt(now, uint64(missing))
}

// IsFull reports whether the bucket word w is full at now: indistinguishable
// from a fresh bucket, so a keyed table may forget it.
func (l *Limit) IsFull(word uint64, now int64) bool {
	p := l.p.Load()
	v, _ := p.virtual(now)
	return int64(v-word) >= int64(p.capUnits)
}
