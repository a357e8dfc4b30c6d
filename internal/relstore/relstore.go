// Package relstore publishes a value to another goroutine with a release
// store: every write the storing goroutine made before it is visible to a
// goroutine that reads the value with an atomic Load and sees it. That is
// all a single-writer publication (a ring's slot filled, then its sequence
// number stored) needs, and less than sync/atomic's Store gives: on amd64
// Go compiles that Store to XCHG, a locked instruction that drains the
// store buffer and costs as much as a CompareAndSwap, while under x86's
// memory model (total store order) a plain MOV already keeps every
// earlier store before it, and a Load is a plain MOV too.
//
// On amd64 (gc) without the race detector, Store is such a MOV in assembly: a
// call the compiler cannot move a memory access across, whose store the
// CPU does not reorder with earlier ones. Everywhere else (other
// architectures, where sync/atomic's Store is already a release store or
// cheaper than a fence; builds with -race, whose detector does not see
// assembly and must see the synchronization) it is sync/atomic's Store.
//
// Use it only where the stored word has one writer at a time and the
// readers use atomic.Uint64.Load: it is not a fence for loads after it
// (a Store followed by a Load of another word may see that word's old
// value, which sync/atomic's Store forbids). It is safe for concurrent
// use in that sense.
package relstore
