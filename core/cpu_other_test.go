//go:build !linux

package core

import "testing"

// cpuPerOp reports nothing where the thread's CPU clock is not read.
func cpuPerOp(*testing.B) func() { return func() {} }
