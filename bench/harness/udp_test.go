package harness

import (
	"testing"

	"github.com/sluicedev/sluice/loadgen/drive"
)

// BenchmarkServerCPUUDP is BenchmarkServerCPU over UDP: the same honest
// crowd against a child server that listens for UDP, its clients
// speaking the reference protocol one frame per datagram (spec.Transport
// udp), once with the gate on and once with NoLimits. Same metrics; the
// target is the same ratio, cpu-ratio ≤ 1.15.
func BenchmarkServerCPUUDP(b *testing.B) {
	benchServerCPU(b, drive.TransportUDP, " over UDP")
}

// BenchmarkTransportsUDP is BenchmarkTransports over UDP: the mixed plan
// at 25k and 50k offered frames/s, the server in a child process at the
// lowest priority, to read beside BenchmarkTransports' TCP and WebSocket
// figures.
func BenchmarkTransportsUDP(b *testing.B) {
	benchTransports(b, drive.TransportUDP)
}
