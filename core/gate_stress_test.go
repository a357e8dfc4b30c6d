package core

import (
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// The first messages of a new account race each other and are all refused
// by the match layer after taking from the account: every token they took
// is given back, so the account's bucket is full again, even while its key
// is still being inserted into the account table. Run with GOMAXPROCS well
// above the core count so that insertions are preempted.
func TestGateRefundsExactWhileAccountKeyIsInserted(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(16))
	p := testPolicy()
	p.Account = Budget{Rate: new(1.0), Burst: new(100.0)}
	p.Match = Budget{Rate: new(1.0), Burst: new(1.0)}
	p.Strikes.Disabled = true
	g := mustGate(t, p)
	const now = 5 * sec
	const match = 1
	s0 := mustOpen(t, g, addrA, now)
	require := func(ok bool, f string, a ...any) {
		t.Helper()
		if !ok {
			t.Fatalf(f, a...)
		}
	}
	require(g.Check(Message{Session: s0, Kind: kMove, Size: 10, Match: match}, now).OK(), "draining the match")
	const senders = 16
	for round := range 300 {
		account := uint64(1000 + round)
		ss := make([]Session, senders)
		for i := range ss {
			ss[i] = mustOpen(t, g, netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 9, byte(round), byte(i)}), 1), now)
			mustAuth(t, g, ss[i], account, now)
		}
		var start, wg sync.WaitGroup
		start.Add(1)
		for _, s := range ss {
			wg.Go(func() {
				start.Wait()
				for range 4 {
					if v := g.Check(Message{Session: s, Kind: kMove, Size: 10, Match: match}, now); v.Reason != MatchLimit {
						t.Errorf("round %d: %v", round, v)
					}
				}
			})
		}
		start.Done()
		wg.Wait()
		lv, _ := g.account.levelAt(account, now)
		require(lv == 100, "round %d: account level %v after only refused messages, want 100 (full)", round, lv)
		for _, s := range ss {
			g.Close(s, now)
		}
	}
}

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
