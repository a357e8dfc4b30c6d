package harness

import (
	"testing"

	"github.com/sluicedev/sluice/loadgen/drive"
)

// BenchmarkServerCPUWS is BenchmarkServerCPU over WebSocket: the same
// honest crowd against a child server that listens for WebSocket, its
// clients speaking the reference protocol one binary message per frame
// (spec.Transport ws), once with the gate on and once with NoLimits. Same
// metrics; the target is the same ratio, cpu-ratio ≤ 1.15.
func BenchmarkServerCPUWS(b *testing.B) {
	benchServerCPU(b, drive.TransportWS, " over WebSocket")
}

// BenchmarkTransports runs BenchmarkLoopbackSplit's mixed plan at 25k
// and 50k offered frames/s over each transport, the server in a child
// process at the lowest priority: frames/s over WebSocket beside TCP,
// measured the same way (BenchmarkLoopback's metrics; kept-up below 1, or
// above it with a send-lag p99 far beyond BenchmarkLoopback's 2ms, says
// the run did not keep up).
func BenchmarkTransports(b *testing.B) {
	benchTransports(b, drive.TransportTCP, drive.TransportWS)
}
