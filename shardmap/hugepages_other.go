//go:build !linux

package shardmap

import "unsafe"

// hugePage is the size below which a table is not advised.
const hugePage = 2 << 20

// adviseHugePages does nothing where madvise is not wired.
func adviseHugePages(p unsafe.Pointer, n uintptr) {}
