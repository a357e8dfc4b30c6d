package bench

import (
	"context"
	"testing"
	"time"

	"github.com/sluicedev/sluice/loadgen"
)

// simPlan is a small mixed crowd: honest and laggy players beside tiny
// floods and bad lengths, for ten seconds of virtual time (about 12,000
// frames).
func simPlan() loadgen.Plan {
	return loadgen.Plan{Seed: 1, Duration: 10 * time.Second, Populations: []loadgen.Population{
		{Name: "honest", Clients: 50, Behaviour: &loadgen.Honest{}},
		{Name: "laggy", Clients: 5, Behaviour: &loadgen.Laggy{}},
		{Name: "tiny", Clients: 2, Behaviour: &loadgen.TinyFlood{}, Hostile: true},
		{Name: "bad", Clients: 2, Behaviour: &loadgen.BadLength{}, Hostile: true},
	}}
}

// BenchmarkSim measures the sim driver's throughput: one op is a whole
// loadgen.RunSim of simPlan against loadgen.DefaultPolicy (behaviours,
// worker, the simulated server's decoding and every gate call, recording),
// deterministic for its seed. It reports frames/op, the frames the server
// decoded per run, and ns/frame.
func BenchmarkSim(b *testing.B) {
	b.Run("run", func(b *testing.B) {
		ctx, plan, pol := context.Background(), simPlan(), loadgen.DefaultPolicy()
		var frames int64
		b.ReportAllocs()
		b.ResetTimer()
		m := parallelCPU() // the process's CPU time: it counts the garbage collector's background work
		for i := 0; i < b.N; i++ {
			r, err := loadgen.RunSim(ctx, loadgen.RunSpec{Plan: plan}, pol)
			if err != nil {
				b.Fatal(err)
			}
			frames = r.Frames
		}
		m.stop(b)
		b.ReportMetric(float64(frames), "frames/op")
		if frames > 0 {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(int64(b.N)*frames), "ns/frame")
		}
	})
}
