//go:build !linux

package shardmap

import "unsafe"

// haveHugePageAdvice reports that no advice is wired here: New gives
// every shard a table of its own.
const haveHugePageAdvice = false

// adviseHugePages does nothing where madvise is not wired.
func adviseHugePages(p unsafe.Pointer, n uintptr) {}

// thpDisabled is GODEBUG=disablethp=1's flag, which only Linux has.
const thpDisabled = false
