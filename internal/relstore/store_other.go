//go:build !amd64 || !gc || race

package relstore

import "sync/atomic"

// Store stores v in *p with release ordering (see the package doc): here
// sync/atomic's Store, which is at least that.
func Store(p *atomic.Uint64, v uint64) { p.Store(v) }
