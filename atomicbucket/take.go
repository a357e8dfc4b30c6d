package atomicbucket

import (
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

// Result is the decision of one take. It is a small value returned without
// allocation.
type Result struct {
	// RetryAfter is, for a denial, the exact time from now until n tokens
	// will be there (rounded up to the nanosecond); 0 otherwise.
	RetryAfter time.Duration
	// Remaining is the number of whole tokens left after the decision.
	Remaining uint32
	// Status is Allowed, Denied or Invalid.
	Status Status
}

// OK reports whether the take passed.
func (r Result) OK() bool { return r.Status == Allowed }

// deny builds the result of a denial. It is kept out of TakeAt so that the
// pass path stays small.
//
//go:noinline
func (p *params) deny(level int64, k, frac uint64) Result {
	var remaining uint32
	if level > 0 {
		remaining = uint32(uint64(level) >> p.shift)
	}
	return Result{Status: Denied, RetryAfter: p.wait(uint64(int64(k)-level), frac), Remaining: remaining}
}

// LevelAt returns the tokens the bucket word w holds at now, as a fraction
// of whole tokens, without changing it.
func (l *Limit) LevelAt(w *atomic.Uint64, now int64) float64 {
	return l.Level(w.Load(), now)
}

// Level returns the tokens a bucket whose word is word holds at now, as a
// fraction of whole tokens.
func (l *Limit) Level(word uint64, now int64) float64 {
	return l.levelOf(l.p.Load(), word, now)
}

func (l *Limit) levelOf(p *params, word uint64, now int64) float64 {
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

// IsFull reports whether the bucket word w is full at now: indistinguishable
// from a fresh bucket, so a keyed table may forget it.
func (l *Limit) IsFull(word uint64, now int64) bool {
	p := l.p.Load()
	v, _ := p.virtual(now)
	return int64(v-word) >= int64(p.capUnits)
}
