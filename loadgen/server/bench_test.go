package server

import (
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/sluicedev/sluice/atomicbucket"
	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// BenchmarkReadPath runs the reader's work for one read (decode, gate
// calls, tally, publish) on connections read in parallel, one per
// goroutine, all in one population, with limits the reads never reach:
// the cost per read of a loaded server's readers, which share the
// server's and the population's counters. Each read carries three pings,
// whose pongs are published; the benchmark then empties the outbound
// buffer as the writer would, without a socket. "nolimits" makes no gate
// call, so what the readers share weighs most there.
func BenchmarkReadPath(b *testing.B) {
	for _, bc := range []struct {
		name     string
		noLimits bool
	}{{"gate", false}, {"nolimits", true}} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := testConfig()
			cfg.Policy = floodPolicy()
			cfg.Policy.Transport.Bytes = core.Budget{Rate: new(1e9), Burst: new(1e9)}
			cfg.Policy.Transport.Frames = core.Budget{Rate: new(1e9), Burst: new(1e9)}
			cfg.Policy.Transport.MinCharge = new(uint32(1))
			cfg.Policy.Account = core.Budget{Rate: new(1e9), Burst: new(1e9)}
			cfg.Policy.Channels[kPing].Rate, cfg.Policy.Channels[kPing].Burst = new(1e9), new(1e9)
			cfg.NoLimits = bc.noLimits
			s, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			var data []byte
			for i := range 3 {
				data = wire.AppendPing(data, uint64(i))
			}
			var src atomic.Uint32
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			b.ResetTimer() // New's allocations are not the read path's
			cpu := processCPU()
			b.RunParallel(func(pb *testing.PB) {
				c := s.newConn(&fakeConn{data: data})
				now := atomicbucket.Nanotime()
				if !s.noLimits {
					n := src.Add(1)
					addr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 1, byte(n >> 8), byte(n)}), 1)
					h, v := s.gate.Open(addr, now)
					if v.Action != core.Accept {
						b.Errorf("Open: %v", v)
						return
					}
					c.h = h
					// Unauthenticated sessions are held to the pre-auth budget.
					if v := s.gate.Authenticate(h, uint64(n), now); v.Action != core.Accept {
						b.Errorf("Authenticate: %v", v)
						return
					}
					defer s.gate.Close(h, now)
				}
				fr, err := wire.NewFramer(c, s.maxFrame, s.readBuf)
				if err != nil {
					b.Error(err)
					return
				}
				c.framer = fr
				for pb.Next() {
					n, _ := fr.Fill()
					if _, stop := c.handleRead(n, atomicbucket.Nanotime()); stop {
						ps, _ := c.pop.Load().snapshot(s.rowNames)
						b.Errorf("the connection ended: %v", ps.Disconnects)
						return
					}
					c.mu.Lock()
					c.out = c.out[:0]
					c.mu.Unlock()
				}
			})
			// CPU time rather than wall time: what contention costs, not
			// what other processes take.
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
			if p := s.Stats().Populations[PopulationNone]; p.Frames != p.Accepted {
				b.Errorf("%d frames, %d accepted: the limits were reached", p.Frames, p.Accepted)
			}
		})
	}
}
