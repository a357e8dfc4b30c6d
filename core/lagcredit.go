package core

import (
	"math"
	"sync/atomic"

	"github.com/sluicedev/sluice/internal/timesat"
)

// lagWords is the lag credit of the input channels of a session (before
// authentication) or an account: two words per channel, at 2i the time
// (an int64 in the word's bits) the channel's bucket last admitted a
// message, and at 2i+1 the credit the latest silence earned (expiry tick
// << lagCountBits | drops left). They are carved out of the allocation of
// the session's or account's other words.
//
// The model. A client whose network stalls holds its inputs and flushes
// them in one write when the stall ends: after a silence of S, a burst of
// what S carried at the client's tick rate. The channel's bucket holds at
// most its burst b, so a flush longer than b at the channel's rate r
// overflows and the overflow is dropped (inputs are replaceable); what the
// credit changes is that those drops earn no strike, so a flush never
// climbs the ladder. The credit a silence earns is
//
//	min(S, LagCredit) × r − b
//
// drops, usable for one fill time (b ÷ r) after the message that ended the
// silence: with the b tokens the bucket gave, exactly what the silence
// would have carried at the channel's rate, no more. A silence no longer
// than the fill time earns nothing (the bucket alone absorbs its flush), a
// new silence replaces the credit (it never adds up), each forgiven drop
// takes one unit, and a session at the shed stage or above is never
// forgiven (its strikes come from something else). The credit admits
// nothing: a flooder that poses as a laggard gets no message through that
// the bucket would have refused, and at most one strike-free drop per token
// the channel refilled while it sent nothing.
//
// last is written at most once per grain (a sixteenth of the fill time),
// so it may be up to a grain older than the latest admission; a silence is
// counted a grain short for it, and the credit stays within the bound.
//
// Zero words have no credit and a last admission at time 0; sessions and
// accounts set last to their creation time (see start). Safe for concurrent use:
// last moves by CompareAndSwap (so of two admissions that end one silence,
// one grants), and a forgiven drop takes its unit by CompareAndSwap.
type lagWords []atomic.Uint64

// lagCountBits is the width of the credit's count; the expiry tick, the
// order-preserving offset of the expiry time (timesat.Offset) shifted
// right by lagTickShift (about 1 ms units), takes the rest.
const (
	lagCountBits = 20
	lagCountMax  = 1<<lagCountBits - 1
	lagTickShift = lagCountBits
)

// lagTick returns the expiry tick of t, rounded up so that a credit never
// expires early (the last tick saturates).
func lagTick(t int64) uint64 {
	o := timesat.Offset(t)
	if o > math.MaxUint64-(1<<lagTickShift-1) {
		return math.MaxUint64 >> lagTickShift
	}
	return (o + 1<<lagTickShift - 1) >> lagTickShift
}

// start sets every channel's last admission to now, the creation of the
// session or account: a silence counts from there.
func (l lagWords) start(now int64) {
	for i := 0; i < len(l); i += 2 {
		l[i].Store(uint64(now))
	}
}

// admitted records an admission on channel i at now and, if it ends a
// silence longer than the channel's fill time, grants that silence's
// credit. Called only for an accepted message of a channel with credit.
// An admission within a grain (a sixteenth of the fill time) of the last
// one written writes nothing: play faster than that, and the rest of a
// flush, cost the accept path no write.
func (l lagWords) admitted(i int, c *chanSpec, now int64) {
	last := &l[2*i]
	prev := last.Load()
	if now-int64(prev) <= c.lagGrain || !last.CompareAndSwap(prev, uint64(now)) {
		// Within a grain of the last write (the rest of a flush, or play
		// faster than a grain), a clock step back, or a racing admission
		// that moved it: nothing to write.
		return
	}
	// last is at most a grain older than the latest admission, so the
	// silence is at least gap − grain: counting that, the credit never
	// exceeds what the silence carried.
	gap := now - int64(prev) - c.lagGrain
	if gap <= c.fillNs {
		return
	}
	n := math.Floor(float64(min(gap, c.lagCap))*c.rate/1e9) - c.burst
	if n < 1 {
		return
	}
	l[2*i+1].Store(lagTick(timesat.Add(now, c.fillNs))<<lagTickShift | uint64(min(n, lagCountMax)))
}

// forgive takes one unit of channel i's credit at now for a drop, and
// reports whether there was one to take.
func (l lagWords) forgive(i int, now int64) bool {
	credit := &l[2*i+1]
	for {
		w := credit.Load()
		if w&lagCountMax == 0 || timesat.Offset(now)>>lagTickShift >= w>>lagTickShift {
			return false
		}
		if credit.CompareAndSwap(w, w-1) {
			return true
		}
	}
}
