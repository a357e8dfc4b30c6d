package core

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/sluicedev/sluice/internal/timesat"
)

// StrikeStage is a rung of the strike ladder. Each stage includes the ones
// below it.
type StrikeStage uint8

const (
	// StageNone: no strikes worth acting on.
	StageNone StrikeStage = iota
	// StageWarn: a StrikeEvent tells the server; nothing else changes.
	StageWarn
	// StageShed: every token cost of the session is multiplied by the
	// policy's shed factor, so its rates shrink.
	StageShed
	// StageDrop: every message is dropped with reason Lockout before any
	// bucket, and each one earns the Lockout weight.
	StageDrop
	// StageDisconnect: every message gets Action Disconnect.
	StageDisconnect
	// StageLockout: the account (or, before authentication, the source
	// address) is refused for the policy's lockout duration.
	StageLockout
	numStages
)

var stageNames = [numStages]string{"none", "warn", "shed", "drop", "disconnect", "lockout"}

func (s StrikeStage) String() string {
	if s < numStages {
		return stageNames[s]
	}
	return "StrikeStage(?)"
}

// MarshalText encodes the stage name.
func (s StrikeStage) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// strikeLadder is the compiled strike policy. Scores are kept as time: with
// the score draining at d points per second, a score of s points is s/d
// seconds of drain, so a record is one int64 (see strikeRecord) and a
// weight or threshold is a number of nanoseconds.
type strikeLadder struct {
	disabled bool
	weight   [NumReasons]int64 // nanoseconds of drain per strike of each reason
	rung     [numStages]int64  // rung[s] = threshold of stage s in ns (rung[0] = 0)
	ceiling  int64             // a score never grows beyond this, in ns
	lockout  int64             // lockout duration, ns
	nsPerPt  float64
}

func newStrikeLadder(s *Strikes) strikeLadder {
	l := strikeLadder{disabled: s.Disabled, lockout: int64(*s.Lockout)}
	// The score drains Ladder.Disconnect points per Window.
	l.nsPerPt = float64(*s.Window) / *s.Ladder.Disconnect
	ns := func(points float64) int64 { return int64(math.Ceil(points * l.nsPerPt)) }
	for r := Reason(0); r < numReasons; r++ {
		l.weight[r] = ns(s.StrikeWeight(r))
	}
	l.weight[None] = 0
	l.rung[StageWarn] = ns(*s.Ladder.Warn)
	l.rung[StageShed] = ns(*s.Ladder.Shed)
	l.rung[StageDrop] = ns(*s.Ladder.Drop)
	l.rung[StageDisconnect] = ns(*s.Ladder.Disconnect)
	l.rung[StageLockout] = ns(*s.Ladder.Lockout)
	l.ceiling = 2 * l.rung[StageLockout]
	return l
}

// stageOf returns the stage of a score in ns.
func (l *strikeLadder) stageOf(score int64) StrikeStage {
	s := StageNone
	for s+1 < numStages && score >= l.rung[s+1] {
		s++
	}
	return s
}

// points converts a score in ns to points.
func (l *strikeLadder) points(score int64) float64 { return float64(score) / l.nsPerPt }

// strikeRecord is a decaying strike score in one word: the time (on the
// caller's clock, ns) at which the score will have drained to zero. The
// score at now is max(0, zeroAt − now) in ns of drain, i.e. points × the
// ladder's ns per point; adding w moves zeroAt to max(zeroAt, now) + w. The
// zero value is a clean record at any now from 0 on; every record is made
// with zeroAt set to its first now, which makes it clean before 0 too.
// Safe for concurrent use: an add is one CAS loop.
type strikeRecord struct {
	zeroAt atomic.Int64
}

// score returns the score at now in ns.
func (r *strikeRecord) score(now int64) int64 {
	if d := r.zeroAt.Load() - now; d > 0 {
		return d
	}
	return 0
}

// add adds w ns of score at now, capped at ceiling, and returns the scores
// before and after.
func (r *strikeRecord) add(w, ceiling, now int64) (before, after int64) {
	for {
		old := r.zeroAt.Load()
		base := max(old, now)
		nw := min(base+w, now+ceiling)
		if nw < old { // already above the ceiling: keep it
			nw = old
		}
		if nw == old || r.zeroAt.CompareAndSwap(old, nw) {
			return max(old-now, 0), nw - now
		}
	}
}

// lockState is a lockout deadline: locked while now < until. The deadline
// is kept as timesat.Offset(until), an order-preserving map of int64 onto uint64,
// so that the zero value, the least deadline, is unlocked at every now,
// including a now before 0.
type lockState struct {
	until atomic.Uint64
}

func (l *lockState) locked(now int64) bool { return timesat.Offset(now) < l.until.Load() }

// lockUntil extends the lockout to at least t, and reports whether this
// call started it (it was not locked at now before): of racing calls that
// find it unlocked, exactly one does.
func (l *lockState) lockUntil(t, now int64) (started bool) {
	for {
		old := l.until.Load()
		if old >= timesat.Offset(t) {
			return false
		}
		if l.until.CompareAndSwap(old, timesat.Offset(t)) {
			return old <= timesat.Offset(now)
		}
	}
}

// remaining returns how long the lockout still runs at now, saturating at
// the longest Duration.
func (l *lockState) remaining(now int64) time.Duration {
	u, n := l.until.Load(), timesat.Offset(now)
	if u <= n {
		return 0
	}
	return time.Duration(min(u-n, math.MaxInt64))
}
