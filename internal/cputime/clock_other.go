//go:build !linux

package cputime

// Thread returns -1: there is no thread CPU clock read here.
func Thread() int64 { return -1 }

// Process returns -1: there is no process CPU clock read here.
func Process() int64 { return -1 }
