//go:build !linux

package bench

const (
	clockProcessCPU = 2
	clockThreadCPU  = 3
)

// cpuNow is not implemented here: no cpu-ns/op metric is reported.
func cpuNow(clock int) int64 { return -1 }
