package harness

import (
	"fmt"
	"testing"

	"github.com/sluicedev/sluice/loadgen"
	"github.com/sluicedev/sluice/loadgen/drive"
)

// BenchmarkServerCPUUDP is BenchmarkServerCPU over UDP: the same honest
// crowd against a child server that listens for UDP, its clients
// speaking the reference protocol one frame per datagram (spec.Transport
// udp), once with the gate on and once with NoLimits. Same metrics; the
// target is the same ratio, cpu-ratio ≤ 1.15.
func BenchmarkServerCPUUDP(b *testing.B) {
	var cpu, svc [2]float64 // gate, nolimits
	var cpuRatio, svcRatio float64
	for i := 0; i < b.N; i++ {
		var c, s [2]float64
		for j := range 2 {
			k := (i + j) % 2 // 1: no limits
			mode := "gate-udp"
			if k == 1 {
				mode = "nolimits-udp"
			}
			_, st := runChild(b, loadgen.RunSpec{Plan: cpuPlan(), Transport: drive.TransportUDP}, mode, false)
			if st.Refused != 0 {
				b.Fatalf("the server refused %d honest frames (no-limits %v): the runs would not do the same work", st.Refused, k == 1)
			}
			if st.Frames == 0 || st.ProcessCPU <= 0 {
				b.Fatalf("the server counted %d frames and %v of CPU", st.Frames, st.ProcessCPU)
			}
			c[k] = float64(st.ProcessCPU.Nanoseconds()) / float64(st.Frames)
			s[k] = float64(st.Service.Nanoseconds()) / float64(st.Frames)
		}
		for k := range 2 {
			cpu[k] += c[k]
			svc[k] += s[k]
		}
		cpuRatio += c[0] / c[1]
		svcRatio += s[0] / s[1]
	}
	n := float64(b.N)
	b.ReportMetric(cpu[0]/n, "gate-cpu-ns/frame")
	b.ReportMetric(cpu[1]/n, "nolimits-cpu-ns/frame")
	b.ReportMetric(cpuRatio/n, "cpu-ratio")
	b.ReportMetric(svc[0]/n, "gate-service-ns/frame")
	b.ReportMetric(svc[1]/n, "nolimits-service-ns/frame")
	b.ReportMetric(svcRatio/n, "service-ratio")
	target(b, cpuRatio/n <= targetCPURatio, "server CPU per frame over UDP with the gate ≤ %g× without (got %.2f×: %.0f vs %.0f ns/frame; service time alone %.2f×)",
		targetCPURatio, cpuRatio/n, cpu[0]/n, cpu[1]/n, svcRatio/n)
}

// BenchmarkTransportsUDP is BenchmarkTransports over UDP: the mixed plan
// at 25k and 50k offered frames/s, the server in a child process at the
// lowest priority, to read beside BenchmarkTransports' TCP and WebSocket
// figures.
func BenchmarkTransportsUDP(b *testing.B) {
	for _, fps := range []int{25_000, 50_000} {
		b.Run(fmt.Sprintf("offered=%dk/transport=udp", fps/1000), func(b *testing.B) {
			benchLoopback(b, fps, func(spec loadgen.RunSpec) *loadgen.Result {
				spec.Transport = drive.TransportUDP
				res, _ := runChild(b, spec, "gate-udp", true)
				return res
			})
		})
	}
}
