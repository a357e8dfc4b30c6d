package shardmap

import "unsafe"

// prefetchWrite asks for the cache line of each of ps in the state a write
// needs (exclusive), without waiting for any: PREFETCHW, a hint that
// neither faults nor orders anything, so the requests overlap as plain
// loads' misses do, and a CompareAndSwap on the line later finds it owned.
//
//go:noescape
func prefetchWrite(ps []unsafe.Pointer)
