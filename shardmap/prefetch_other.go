//go:build !amd64

package shardmap

// haveWritePrefetch reports that no write prefetch is wired here:
// TakeBatchAt's first pass loads its lines instead.
const haveWritePrefetch = false

// prefetchWrite does nothing where no write prefetch is wired; touch does
// not call it there.
func prefetchWrite(ls []uintptr) {}
