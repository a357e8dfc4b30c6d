//go:build !linux

package shardmap

import "testing"

type cpuTimer struct{}

func startCPU() cpuTimer           { return cpuTimer{} }
func (cpuTimer) stop(_ *testing.B) {}
