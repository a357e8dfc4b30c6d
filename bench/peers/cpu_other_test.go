//go:build !linux

package peers

import "testing"

type cpuTimer struct{}

func startCPU() cpuTimer           { return cpuTimer{} }
func (cpuTimer) stop(_ *testing.B) {}

func processCPU() int64 { return -1 }
