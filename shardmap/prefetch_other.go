//go:build !amd64

package shardmap

import (
	"sync/atomic"
	"unsafe"
)

// prefetchWrite loads the first word of each of ps: where no write
// prefetch is wired (amd64 has PREFETCHW), plain loads bring the lines in.
func prefetchWrite(ps []unsafe.Pointer) {
	var sink uint64
	for _, p := range ps {
		sink += (*atomic.Uint64)(p).Load()
	}
	touchSink(sink)
}
