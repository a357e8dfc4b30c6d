package shardmap

// haveWritePrefetch reports that prefetchWrite asks for lines (amd64:
// PREFETCHW), so TakeBatchAt's first pass uses it instead of plain loads.
const haveWritePrefetch = true

// prefetchWrite asks for the cache line of each address of ls in the
// state a write needs (exclusive), waiting for none: PREFETCHW, a hint that
// neither faults (an address that maps nothing is dropped) nor is ordered
// by a locked instruction, so the requests overlap as plain loads' misses
// do, and a CompareAndSwap on the line later finds it owned.
//
//go:noescape
func prefetchWrite(ls []uintptr)
