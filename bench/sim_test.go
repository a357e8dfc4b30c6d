package bench

import (
	"context"
	"testing"
	"time"

	"github.com/sluicedev/sluice/internal/cputime"
	"github.com/sluicedev/sluice/loadgen"
	"github.com/sluicedev/sluice/loadgen/behave"
)

// simPlan is a small mixed crowd: honest and laggy players beside tiny
// floods and bad lengths, for ten seconds of virtual time (about 12,000
// frames).
func simPlan() behave.Plan {
	return behave.Plan{Seed: 1, Duration: 10 * time.Second, Populations: []behave.Population{
		{Name: "honest", Clients: 50, Behaviour: &behave.Honest{}},
		{Name: "laggy", Clients: 5, Behaviour: &behave.Laggy{}},
		{Name: "tiny", Clients: 2, Behaviour: &behave.TinyFlood{}, Hostile: true},
		{Name: "bad", Clients: 2, Behaviour: &behave.BadLength{}, Hostile: true},
	}}
}

// BenchmarkSim measures the sim driver's throughput: one op is a whole
// loadgen.RunSim of simPlan against behave.DefaultPolicy (behaviours,
// worker, the simulated server's decoding and every gate call, recording),
// deterministic for its seed. It reports frames/op, the frames the server
// decoded per run, and ns/frame.
func BenchmarkSim(b *testing.B) {
	b.Run("run", func(b *testing.B) {
		ctx, plan, pol := context.Background(), simPlan(), behave.DefaultPolicy()
		var frames int64
		b.ReportAllocs()
		b.ResetTimer()
		m := cputime.Parallel() // the process's CPU time: it counts the garbage collector's background work
		for i := 0; i < b.N; i++ {
			r, err := loadgen.RunSim(ctx, loadgen.RunSpec{Plan: plan}, pol)
			if err != nil {
				b.Fatal(err)
			}
			frames = r.Frames
		}
		m.Stop(b)
		b.ReportMetric(float64(frames), "frames/op")
		if frames > 0 {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(int64(b.N)*frames), "ns/frame")
		}
	})
}
