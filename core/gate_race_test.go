package core

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Many goroutines check messages of sessions that share one account and
// one match, while others open, authenticate and close sessions and step
// the gate. The shared buckets never let through more than their burst
// plus their rate over the run, the per-session ones likewise, and a
// request id sent concurrently is admitted once. Run with -race.
func TestGateConcurrent(t *testing.T) {
	p := testPolicy()
	p.Account = Budget{Rate: new(1000.0), Burst: new(200.0)}
	p.Match = Budget{Rate: new(1500.0), Burst: new(300.0)}
	// The channel's bucket is the account's, shared by its sessions:
	// faster than the account's, so that the account's rate binds.
	p.Channels[kMove].Rate, p.Channels[kMove].Burst = new(4000.0), new(50.0)
	p.Strikes.Disabled = true
	g := mustGate(t, p)

	const workers, perWorker = 8, 4000
	const step = int64(10_000) // 10µs of the caller's clock per message
	sessions := make([]Session, workers)
	for i := range sessions {
		sessions[i] = mustOpen(t, g, netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, 0, byte(i)}), 1), 0)
		mustAuth(t, g, sessions[i], 77, 0)
	}
	var accepted [workers]int
	var clock atomic.Int64 // one shared clock, read by everyone
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perWorker {
				now := clock.Add(step)
				if g.Check(Message{Session: sessions[w], Kind: kMove, Size: 20, Match: 5}, now).OK() {
					accepted[w]++
				}
			}
		}()
	}
	stop := make(chan struct{})
	var churn sync.WaitGroup
	churn.Add(1)
	go func() { // lifecycle and steps alongside
		defer churn.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			now := clock.Load()
			s, v := g.Open(netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 2, byte(i >> 8), byte(i)}), 1), now)
			if v.OK() {
				g.Authenticate(s, uint64(1000+i%50), now)
				g.Check(Message{Session: s, Kind: kAsk, Size: 20, Request: 1}, now)
				g.Done(s, 1)
				g.Close(s, now)
			}
			g.Step(now)
		}
	}()
	wg.Wait()
	close(stop)
	churn.Wait()

	elapsed := float64(clock.Load()) / 1e9
	total := 0
	for w := range workers {
		total += accepted[w]
	}
	assert.LessOrEqual(t, float64(total), 50+4000*elapsed+1, "the account's channel bucket")
	assert.LessOrEqual(t, float64(total), 200+1000*elapsed+1, "the shared account bucket")
	assert.GreaterOrEqual(t, float64(total), 1000*elapsed-1, "demand above supply: the account's rate is reached")

	// A request id sent by several goroutines at once is admitted once.
	clock.Add(sec) // let the account refill
	for round := range 200 {
		id := uint64(round + 1)
		var ok atomic.Int32
		var dup atomic.Int32
		var start sync.WaitGroup
		start.Add(1)
		var done sync.WaitGroup
		for range 4 {
			done.Add(1)
			go func() {
				defer done.Done()
				start.Wait()
				v := g.Check(Message{Session: sessions[0], Kind: kAsk, Size: 10, Request: id}, clock.Load())
				switch {
				case v.OK():
					ok.Add(1)
				case v.Reason == Duplicate:
					dup.Add(1)
				}
			}()
		}
		start.Done()
		done.Wait()
		require.Equal(t, int32(1), ok.Load(), "round %d", round)
		require.Equal(t, int32(3), dup.Load(), "round %d", round)
		g.Done(sessions[0], id)
		clock.Add(sec / 10)
	}
}
