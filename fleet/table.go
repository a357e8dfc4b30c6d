package fleet

import (
	"sync/atomic"
)

// Bits of a slot's word: live says the server holds a lease on the key
// (the low bits are its unspent tokens); a word without it is a key whose
// lease was returned, or never taken.
const (
	live      = uint64(1) << 63
	stockMask = live - 1
)

// slot is one key's lease on one server. key and word are read and
// written by takes, lock-free; the rest belongs to the refresher alone.
type slot struct {
	key    atomic.Uint64        // 0: free (key 0 lives in table.zero)
	word   atomic.Uint64        // live | unspent tokens
	credit atomic.Uint64        // tokens the first take after a return spent on credit
	retry  atomic.Int64         // ns a denied take is told to wait, set by the refresher
	next   atomic.Pointer[slot] // the next slot of table.fresh

	// The refresher's own.
	leased    bool     // the credit has been charged to the fleet bucket
	last      uint64   // the word as the refresher last left it
	idleSince int64    // refresher clock: when the word last changed
	name      string   // the Redis key
	_         [48]byte // to 128 bytes: two slots never share a cache line
}

// table maps keys to slots by open addressing (linear probing) in a fixed
// array: lock-free lookups, and inserts that claim a free slot with one
// CompareAndSwap of its key, so two servers' goroutines inserting one key
// agree on its slot. A key is never removed (its lease is returned, and
// its slot keeps the key), so a probe never meets a hole left by a
// delete: the table bounds the keys a layer tracks over its life.
type table struct {
	slots []slot
	mask  uint64
	max   int64 // keys tracked at most
	n     atomic.Int64
	zero  slot // key 0
	zeroU atomic.Bool
	// fresh is a lock-free stack (pushed by takes, emptied at once by the
	// refresher, so no ABA) of the slots that just took a lease on credit:
	// the refresher visits only the slots it has popped, not the table.
	fresh atomic.Pointer[slot]
}

// push puts s on the fresh stack. A slot is pushed only when its word
// becomes live, and only the refresher makes it not live again, after
// popping it: so a slot is on the stack at most once.
func (t *table) push(s *slot) {
	for {
		h := t.fresh.Load()
		s.next.Store(h)
		if t.fresh.CompareAndSwap(h, s) {
			return
		}
	}
}

// popAll empties the fresh stack, returning its slots.
func (t *table) popAll(into []*slot) []*slot {
	for s := t.fresh.Swap(nil); s != nil; {
		n := s.next.Load()
		s.next.Store(nil)
		into = append(into, s)
		s = n
	}
	return into
}

func newTable(maxKeys int) *table {
	size := 16
	for size < 2*maxKeys {
		size <<= 1
	}
	return &table{slots: make([]slot, size), mask: uint64(size - 1), max: int64(maxKeys)}
}

// mix is a 64-bit finalizer (murmur3's): spreads sequential ids over the
// table.
func mix(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

// find returns key's slot, or nil when it is not tracked.
func (t *table) find(key uint64) *slot {
	if key == 0 {
		if t.zeroU.Load() {
			return &t.zero
		}
		return nil
	}
	for i, n := mix(key)&t.mask, uint64(0); n <= t.mask; i, n = (i+1)&t.mask, n+1 {
		s := &t.slots[i]
		switch s.key.Load() {
		case key:
			return s
		case 0:
			return nil
		}
	}
	return nil
}

// insert returns key's slot, claiming a free one if the key is new; nil
// when the table is full.
func (t *table) insert(key uint64) *slot {
	if key == 0 {
		t.zeroU.Store(true)
		return &t.zero
	}
	for i, n := mix(key)&t.mask, uint64(0); n <= t.mask; i, n = (i+1)&t.mask, n+1 {
		s := &t.slots[i]
		k := s.key.Load()
		if k == key {
			return s
		}
		if k != 0 {
			continue
		}
		if t.n.Add(1) > t.max {
			t.n.Add(-1)
			return nil
		}
		if s.key.CompareAndSwap(0, key) {
			return s
		}
		t.n.Add(-1)
		if s.key.Load() == key {
			return s
		}
	}
	return nil
}
