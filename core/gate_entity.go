package core

import (
	"container/heap"
	"sync/atomic"
)

// entity is the state an account or a source address keeps across its
// sessions: strikes, lockout and (accounts) requests in flight per capped
// kind, and the channel buckets with their lag credit. Its hot fields are
// atomic; refs, idleSince, owner, idleAt and forgetAt are guarded by the
// gate's mutex.
type entity struct {
	key      uint64
	strikes  strikeRecord
	lock     lockState
	inflight []atomic.Int32
	// kinds and lag are an account's channel buckets and their lag credit
	// (nil for an address): an authenticated session takes from these,
	// not from its own, so reconnecting never resets a channel's limit.
	kinds     []atomic.Uint64
	lag       lagWords
	conns     entityConns // addresses: see Connections
	refs      int
	idleSince int64
	owner     uint64 // accounts: the address key of the session that last left it idle
	idleAt    int    // index in the table's idle heap; -1 while a session holds it
	forgetAt  int64  // while idle: a time before which it cannot be forgotten
}

// entityTable is the bounded table of accounts or addresses. It is only
// touched by Open, Authenticate, Close and Step, under the gate's mutex;
// sessions keep a pointer to their entities, so messages never look one up.
//
// Entities no session holds wait in a min-heap by the earliest time they
// could be forgotten (forgetAt: their strikes drained, their lockout over,
// their buckets full again, nothing in flight). Nothing but a session can
// add to an entity's state, so that time only moves later while it is
// idle, and the heap's top says whether anything can be forgotten at all:
// an insert into a full table looks at the top only (and forgets it, if
// its time has come), never the whole table, and a refused insert costs
// O(1). Step forgets the due entities from the top the same way.
//
// For accounts, the idle entities that cannot be forgotten yet are also
// counted per source address (the address of the session that left each
// one idle), and a new account from an address at perOwnerMax is refused:
// churn from a few addresses cannot fill the table with entries it must
// keep.
type entityTable struct {
	m           map[uint64]*entity
	max         int
	nInflight   int
	chans       []chanSpec // accounts: the channels their buckets follow; nil for addresses
	idle        idleHeap
	perOwner    map[uint64]uint32 // idle entities by owner address; nil without a bound
	perOwnerMax uint32
}

// maxForgetTries bounds how many idle entities one insert examines: an
// entity at the top whose time has come but which turns out to be held
// (a racing admission after its session closed) is moved down, once.
const maxForgetTries = 4

func newEntityTable(bound, nInflight int, chans []chanSpec, perOwner uint32) entityTable {
	t := entityTable{m: map[uint64]*entity{}, max: bound, nInflight: nInflight, chans: chans, perOwnerMax: perOwner}
	if perOwner > 0 {
		t.perOwner = map[uint64]uint32{}
	}
	return t
}

// acquire returns key's entity with one more reference, creating it if
// needed; nil if the table is full of entities that cannot be forgotten,
// or (accounts) if owner, the address of the session asking, already left
// perOwnerMax entities behind that cannot be forgotten yet.
func (t *entityTable) acquire(key, owner uint64, now int64) *entity {
	e := t.m[key]
	if e == nil {
		if t.perOwner != nil && t.perOwner[owner] >= t.perOwnerMax {
			t.forgetDue(now)
			if t.perOwner[owner] >= t.perOwnerMax {
				return nil
			}
		}
		if len(t.m) >= t.max && !t.forgetOne(now) {
			return nil
		}
		e = &entity{key: key, idleAt: -1, inflight: make([]atomic.Int32, t.nInflight)}
		e.strikes.zeroAt.Store(now)
		if len(t.chans) > 0 {
			n := len(t.chans)
			w := make([]atomic.Uint64, 3*n) // one allocation for the buckets and their lag credit
			e.kinds, e.lag = w[:n:n], lagWords(w[n:])
			for i := range t.chans {
				e.kinds[i].Store(t.chans[i].lim.FullWord(now))
			}
			e.lag.start(now)
		}
		t.m[key] = e
	} else if e.idleAt >= 0 {
		t.unidle(e)
	}
	e.refs++
	return e
}

// release drops one reference; owner is the address key of the session
// that held it.
func (t *entityTable) release(e *entity, owner uint64, now int64) {
	e.refs--
	if e.refs > 0 {
		return
	}
	e.idleSince, e.owner = now, owner
	e.forgetAt = t.forgetTime(e, now)
	heap.Push(&t.idle, e)
	if t.perOwner != nil {
		t.perOwner[owner]++
	}
}

// unidle takes an idle entity out of the heap and its owner's count.
func (t *entityTable) unidle(e *entity) {
	heap.Remove(&t.idle, e.idleAt)
	if t.perOwner != nil {
		if n := t.perOwner[e.owner]; n <= 1 {
			delete(t.perOwner, e.owner)
		} else {
			t.perOwner[e.owner] = n - 1
		}
	}
}

// forgetOne forgets the idle entity at the top of the heap if it can be
// forgotten at now, and reports whether one was.
func (t *entityTable) forgetOne(now int64) bool {
	for range maxForgetTries {
		if len(t.idle) == 0 || t.idle[0].forgetAt > now {
			return false
		}
		e := t.idle[0]
		if e.forgettable(t.chans, now) {
			t.unidle(e)
			delete(t.m, e.key)
			return true
		}
		e.forgetAt = max(t.forgetTime(e, now), now+1)
		heap.Fix(&t.idle, 0)
	}
	return false
}

// forgetDue forgets every idle entity whose time has come: each entity is
// forgotten once, so over a table's life this is O(1) per entity.
func (t *entityTable) forgetDue(now int64) {
	for t.forgetOne(now) {
	}
}

// forgetTime returns the earliest time at which an idle entity could be
// forgotten: its score drained, its lockout over, its buckets full again.
// Something in flight (released soon by its session's Close) counts as
// now.
func (t *entityTable) forgetTime(e *entity, now int64) int64 {
	at := max(now, e.strikes.zeroAt.Load(), int64(e.lock.until.Load()^1<<63))
	for i := range e.kinds {
		if d := t.chans[i].lim.FullIn(e.kinds[i].Load(), now); d > 0 {
			at = max(at, now+int64(d))
		}
	}
	return at
}

// forgettable reports whether an entity holds nothing a fresh one would
// not: no session, no strikes, no lockout, nothing in flight, every bucket
// full.
func (e *entity) forgettable(chans []chanSpec, now int64) bool {
	if e.refs > 0 || e.strikes.score(now) > 0 || e.lock.locked(now) {
		return false
	}
	for i := range e.inflight {
		if e.inflight[i].Load() != 0 {
			return false
		}
	}
	for i := range e.kinds {
		if !chans[i].lim.IsFull(e.kinds[i].Load(), now) {
			return false
		}
	}
	return true
}

// sweep forgets every idle entity whose time has come.
func (t *entityTable) sweep(now int64) { t.forgetDue(now) }

// idleHeap is a min-heap of idle entities by forgetAt (container/heap).
type idleHeap []*entity

func (h idleHeap) Len() int           { return len(h) }
func (h idleHeap) Less(i, j int) bool { return h[i].forgetAt < h[j].forgetAt }
func (h idleHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idleAt, h[j].idleAt = i, j
}
func (h *idleHeap) Push(x any) {
	e := x.(*entity)
	e.idleAt = len(*h)
	*h = append(*h, e)
}
func (h *idleHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.idleAt = -1
	return e
}
