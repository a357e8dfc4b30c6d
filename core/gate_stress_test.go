package core

import (
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// Malformed frames of one session sent from several goroutines while
// another closes it: every drop counted as a transport flood is in a
// FloodEvent, including a drop whose check found the session open and
// noted it after Close emitted the session's reports.
func TestGateFloodRacingCloseIsReported(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(16))
	p := testPolicy()
	p.Strikes.Disabled = true
	g := mustGate(t, p)
	var reported atomic.Uint64
	g.Observe(GateObserver{Flood: func(e FloodEvent) { reported.Add(e.Count) }})
	const now = 5 * sec
	for round := range 200 {
		s := mustOpen(t, g, netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 8, byte(round >> 8), byte(round)}), 1), now)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 50 {
					g.Check(Message{Session: s, Size: 10, Kind: kMove, Flags: FlagMalformed}, now)
				}
			})
		}
		wg.Go(func() {
			runtime.Gosched()
			g.Close(s, now)
		})
		wg.Wait()
		g.Step(now)
	}
	if st := g.Stats(); st.TransportFloods != reported.Load() {
		t.Fatalf("%d drops counted as transport floods, %d in FloodEvents", st.TransportFloods, reported.Load())
	}
}
