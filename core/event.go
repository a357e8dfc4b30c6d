package core

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// RateLimitedEvent reports one message the gate did not accept, once per
// message, for every reason except the transport-flood reasons (which are
// coalesced into FloodEvents) and NoSession (there is no session to name).
// In shadow mode Shadow is true and the message was in fact accepted.
type RateLimitedEvent struct {
	Session    Session
	Account    uint64 // 0 before authentication
	Kind       int    // channel index, -1 if the kind was unknown
	Channel    string // channel name, "" if unknown
	Reason     Reason
	Action     Action
	RetryAfter time.Duration
	Shadow     bool
	At         int64
}

// FloodEvent is the coalesced report of transport-level drops (ByteLimit,
// FrameLimit, Oversize, Malformed, Duplicate, Replay) of one session for one
// reason since the previous Step: Count is the number of drops folded in.
type FloodEvent struct {
	Session Session
	Account uint64
	Reason  Reason
	Count   uint64
	Bytes   uint64 // the bytes of the dropped messages
	// Largest is the largest dropped message. The accumulators are
	// separate words, so a drop that races a Step can have its size in
	// one report and its count in the next: Bytes and Largest then cover
	// a drop that Count does not (and a report can carry Largest 0).
	// Totals over reports are exact.
	Largest uint32
	// Budget is the configured limit behind the reason: the byte burst,
	// the frame burst, or for Oversize the size limit the largest dropped
	// message exceeded (its channel's max size, or the max frame for a
	// message of no known kind; when the report carries no size, the
	// limit of the previous report's largest); 0 if none.
	Budget uint64
	At     int64 // the Step (or Close) that reported it
}

// StrikeEvent reports that a session's strike score rose into a higher
// stage. Score is in points.
type StrikeEvent struct {
	Session Session
	Account uint64
	Stage   StrikeStage
	Score   float64
	Reason  Reason // the reason of the strike that crossed the rung
	Shadow  bool
	At      int64
}

// GateObserver is a set of callbacks. Observers only observe: they are
// called synchronously after the decision is made, a panic in one is
// recovered and counted (GateStats.ObserverPanics) and the decision stands.
// They run on the caller's goroutine, on the deny path, so they should be
// quick and must be safe for concurrent use. Any field may be nil.
type GateObserver struct {
	RateLimited func(RateLimitedEvent)
	Flood       func(FloodEvent)
	Strike      func(StrikeEvent)
}

// observers is the copy-on-write list of registered observers: emitting
// reads it with one atomic load; registering copies it under a mutex.
type observers struct {
	mu   sync.Mutex
	list atomic.Pointer[[]*GateObserver]
}

func (o *observers) add(ob GateObserver) (remove func()) {
	p := &ob
	o.mu.Lock()
	defer o.mu.Unlock()
	var cur []*GateObserver
	if l := o.list.Load(); l != nil {
		cur = *l
	}
	next := append(append([]*GateObserver(nil), cur...), p)
	o.list.Store(&next)
	return func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		l := o.list.Load()
		if l == nil {
			return
		}
		out := make([]*GateObserver, 0, len(*l))
		for _, q := range *l {
			if q != p {
				out = append(out, q)
			}
		}
		if len(out) == 0 {
			o.list.Store(nil)
			return
		}
		o.list.Store(&out)
	}
}

// callObserver calls f(e), recovering a panic and counting it.
func callObserver[E any](g *Gate, stripe int, f func(E), e E) {
	defer func() {
		if recover() != nil {
			g.stats.stripe(stripe).panics.Add(1)
		}
	}()
	f(e)
}

// The three emitters are written out rather than one generic emit with a
// field selector: that version made every denial 8% slower (Gate/deny
// 94.7 → 103 ns in sluice bench ab), the event being passed to a call even
// with no observer registered.

func (g *Gate) emitRateLimited(stripe int, e RateLimitedEvent) {
	l := g.obs.list.Load()
	if l == nil {
		return
	}
	for _, o := range *l {
		if o.RateLimited != nil {
			callObserver(g, stripe, o.RateLimited, e)
		}
	}
}

func (g *Gate) emitFlood(stripe int, e FloodEvent) {
	l := g.obs.list.Load()
	if l == nil {
		return
	}
	for _, o := range *l {
		if o.Flood != nil {
			callObserver(g, stripe, o.Flood, e)
		}
	}
}

func (g *Gate) emitStrike(stripe int, e StrikeEvent) {
	l := g.obs.list.Load()
	if l == nil {
		return
	}
	for _, o := range *l {
		if o.Strike != nil {
			callObserver(g, stripe, o.Strike, e)
		}
	}
}

// Observe registers an observer and returns a function that removes it.
// Safe to call concurrently with Check.
func (g *Gate) Observe(o GateObserver) (remove func()) { return g.obs.add(o) }

// floodReasons are the reasons coalesced into FloodEvents, in slot order.
var floodReasons = [...]Reason{ByteLimit, FrameLimit, Oversize, Malformed, Duplicate, Replay}

const numFloodSlots = len(floodReasons)

// floodSlot maps a reason to its slot in a session's flood accumulators, or
// -1.
var floodSlot = func() (m [NumReasons]int8) {
	for i := range m {
		m[i] = -1
	}
	for i, r := range floodReasons {
		m[r] = int8(i)
	}
	return
}()

// floodAcc accumulates one session's drops of one flood reason until the
// next Step. Only the session's own messages write it.
type floodAcc struct {
	count atomic.Uint64
	bytes atomic.Uint64
	// largest is the largest dropped message's size in the high 32 bits
	// and the size limit it broke (Oversize; 0 otherwise) in the low 32:
	// one word, so that a report never pairs a size with another
	// message's limit. A report takes the size and leaves the limit (see
	// takeLargest).
	largest atomic.Uint64
}

func (a *floodAcc) note(size, limit uint32) {
	a.bytes.Add(uint64(size))
	w := uint64(size)<<32 | uint64(limit)
	for {
		old := a.largest.Load()
		if w <= old || a.largest.CompareAndSwap(old, w) {
			break
		}
	}
	// Counted last: a Step that takes the count then finds the size.
	a.count.Add(1)
}

// takeLargest takes the largest size for a report and returns it with its
// limit, which it leaves in place: a drop whose size a racing report took
// is counted in the next one, which then still has a budget.
func (a *floodAcc) takeLargest() (size, limit uint32) {
	old := a.largest.And(math.MaxUint32) // the size cleared, the limit kept
	return uint32(old >> 32), uint32(old)
}
