package server

import (
	"testing"
	"time"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// BenchmarkUDPDatagrams sends input datagrams on one UDP session over
// loopback, with limits they never reach, and waits until the server has
// counted them all: the listener's cost per datagram (the socket's
// system calls, the gate's Read and Check, the tally), as wall time and
// as the process's CPU per datagram (the client's send included). "gate"
// against "nolimits" is the gate's share.
func BenchmarkUDPDatagrams(b *testing.B) {
	for _, bc := range []struct {
		name     string
		noLimits bool
	}{{"gate", false}, {"nolimits", true}} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := udpConfig()
			cfg.Policy = floodPolicy()
			cfg.Policy.Transport.Bytes = core.Budget{Rate: new(1e9), Burst: new(1e9)}
			cfg.Policy.Transport.Frames = core.Budget{Rate: new(1e9), Burst: new(1e9)}
			cfg.Policy.Channels[kMove].Rate, cfg.Policy.Channels[kMove].Burst = new(1e9), new(1e9)
			cfg.Policy.Account = core.Budget{Rate: new(1e9), Burst: new(1e9)}
			cfg.NoLimits = bc.noLimits
			s := startServer(b, cfg)
			c := udpDial(b, s.UDPAddr())
			c.mustHello(b, "1", "bench")
			in, _ := wire.AppendInput(nil, kMove, []byte{1, 2, 3, 4})
			d := append(wire.AppendDatagramHeader(nil, wire.DatagramData, c.id), in...)
			base := s.Stats().Populations["bench"].Frames
			b.ResetTimer()
			cpu := processCPU()
			for i := range b.N {
				c.pc.WriteToUDPAddrPort(d, c.srv)
				if i%64 == 63 && i >= 256 { // keep the socket's buffer from overflowing
					for s.Stats().Populations["bench"].Frames < base+uint64(i)-256 {
						time.Sleep(10 * time.Microsecond)
					}
				}
			}
			deadline := time.Now().Add(10 * time.Second)
			for s.Stats().Populations["bench"].Frames < base+uint64(b.N) && time.Now().Before(deadline) {
				time.Sleep(50 * time.Microsecond)
			}
			b.StopTimer()
			got := s.Stats().Populations["bench"].Frames - base
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
			if got < uint64(b.N)*99/100 {
				b.Errorf("%d of %d datagrams counted", got, b.N)
			}
		})
	}
}
