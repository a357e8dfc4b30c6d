package harness

import (
	"fmt"
	"testing"

	"github.com/sluicedev/sluice/loadgen"
	"github.com/sluicedev/sluice/loadgen/drive"
)

// BenchmarkServerCPUWS is BenchmarkServerCPU over WebSocket: the same
// honest crowd against a child server that listens for WebSocket, its
// clients speaking the reference protocol one binary message per frame
// (spec.Transport ws), once with the gate on and once with NoLimits. Same
// metrics; the target is the same ratio, cpu-ratio ≤ 1.15.
func BenchmarkServerCPUWS(b *testing.B) {
	var cpu, svc [2]float64 // gate, nolimits
	var cpuRatio, svcRatio float64
	for i := 0; i < b.N; i++ {
		var c, s [2]float64
		for j := range 2 {
			k := (i + j) % 2 // 1: no limits
			mode := "gate-ws"
			if k == 1 {
				mode = "nolimits-ws"
			}
			_, st := runChild(b, loadgen.RunSpec{Plan: cpuPlan(), Transport: drive.TransportWS}, mode, false)
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
	target(b, cpuRatio/n <= targetCPURatio, "server CPU per frame over WebSocket with the gate ≤ %g× without (got %.2f×: %.0f vs %.0f ns/frame; service time alone %.2f×)",
		targetCPURatio, cpuRatio/n, cpu[0]/n, cpu[1]/n, svcRatio/n)
}

// BenchmarkTransports runs BenchmarkLoopbackSplit's mixed plan at 25k
// and 50k offered frames/s over each transport, the server in a child
// process at the lowest priority: frames/s over WebSocket beside TCP,
// measured the same way (BenchmarkLoopback's metrics; kept-up below 1, or
// above it with a send-lag p99 far beyond BenchmarkLoopback's 2ms, says
// the run did not keep up).
func BenchmarkTransports(b *testing.B) {
	for _, fps := range []int{25_000, 50_000} {
		for _, tr := range []string{drive.TransportTCP, drive.TransportWS} {
			b.Run(fmt.Sprintf("offered=%dk/transport=%s", fps/1000, tr), func(b *testing.B) {
				mode := "gate"
				if tr == drive.TransportWS {
					mode = "gate-ws"
				}
				benchLoopback(b, fps, func(spec loadgen.RunSpec) *loadgen.Result {
					spec.Transport = tr
					res, _ := runChild(b, spec, mode, true)
					return res
				})
			})
		}
	}
}
