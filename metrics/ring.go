package metrics

import "sync/atomic"

// ring is a bounded lock-free queue of security-log reports: many
// producers (the gate's observers, on the goroutines that call the gate)
// and one consumer (the log's writer). It is Vyukov's bounded queue: each
// cell carries a sequence number that says whose turn it is, so a producer
// claims a cell with one CompareAndSwap of the tail and never waits for
// another producer or for the consumer; a full ring refuses the report at
// once. The zero value is not usable: make one with newRing.
type ring struct {
	_     [64]byte
	tail  atomic.Uint64 // the next position a producer claims
	_     [56]byte
	head  uint64 // the next position the consumer reads; the consumer's alone
	mask  uint64
	cells []cell
}

type cell struct {
	// seq is pos when the cell is free for the producer of position pos,
	// pos+1 once that producer has written it, and pos+len when the
	// consumer has read it (free for the next lap).
	seq atomic.Uint64
	e   SecurityEvent
}

// newRing returns a ring holding at least n reports (a power of two).
func newRing(n int) *ring {
	size := 1
	for size < n {
		size <<= 1
	}
	r := &ring{mask: uint64(size - 1), cells: make([]cell, size)}
	for i := range r.cells {
		r.cells[i].seq.Store(uint64(i))
	}
	return r
}

// push adds e, or returns false at once when the ring is full. Safe for
// concurrent use by any number of producers.
func (r *ring) push(e *SecurityEvent) bool {
	for {
		pos := r.tail.Load()
		c := &r.cells[pos&r.mask]
		seq := c.seq.Load()
		switch {
		case seq == pos: // free for this position: claim it
			if r.tail.CompareAndSwap(pos, pos+1) {
				c.e = *e
				c.seq.Store(pos + 1) // publishes e to the consumer
				return true
			}
		case seq < pos: // the consumer has not read this cell's last lap: full
			return false
		}
		// Another producer claimed pos first: try the next position.
	}
}

// pop takes the oldest report into e, or returns false when none is
// ready. Only the consumer calls it.
func (r *ring) pop(e *SecurityEvent) bool {
	c := &r.cells[r.head&r.mask]
	if c.seq.Load() != r.head+1 {
		return false
	}
	*e = c.e
	c.e = SecurityEvent{}
	c.seq.Store(r.head + r.mask + 1)
	r.head++
	return true
}
