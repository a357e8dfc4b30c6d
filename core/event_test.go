package core

import (
	"maps"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A panicking observer changes nothing: the decision stands, the panic is
// counted, and the other observers still hear about it.
func TestObserverPanicIsFailOpen(t *testing.T) {
	p := testPolicy()
	p.Transport.Bytes = Budget{Rate: new(8000.0), Burst: new(4000.0)} // five reads
	g := mustGate(t, p)
	g.Observe(GateObserver{
		RateLimited: func(RateLimitedEvent) { panic("observer bug") },
		Flood:       func(FloodEvent) { panic("observer bug") },
		Strike:      func(StrikeEvent) { panic("observer bug") },
	})
	var rec recorder
	g.Observe(rec.observer())
	s := mustOpen(t, g, addrA, 0)

	for id := uint64(1); id <= 2; id++ {
		require.True(t, g.Check(Message{Session: s, Kind: kChat, Size: 10, Request: id}, 0).OK())
	}
	v := g.Check(Message{Session: s, Kind: kChat, Size: 10, Request: 3}, 0)
	assert.Equal(t, ChannelLimit, v.Reason)
	assert.Equal(t, Reject, v.Action, "the decision stands")
	assert.Equal(t, 500*time.Millisecond, v.RetryAfter)
	for range 3 {
		require.True(t, g.Check(Message{Session: s, Kind: kMove, Size: 10}, 0).OK())
	}
	assert.Equal(t, ByteLimit, g.Check(Message{Session: s, Kind: kMove, Size: 10}, 0).Reason)
	for range 3 {
		v = g.Check(Message{Session: s, Kind: kMove, Size: 10, Flags: FlagMalformed}, 0)
	}
	assert.Equal(t, Disconnect, v.Action, "1 + 4 + 3×4 points: strikes escalate as usual")
	g.Step(sec)

	st := g.Stats()
	rec.mu.Lock()
	assert.Len(t, rec.limited, 1)
	assert.Len(t, rec.floods, 2) // ByteLimit, Malformed
	assert.NotEmpty(t, rec.strikes)
	n := uint64(len(rec.limited) + len(rec.floods) + len(rec.strikes))
	rec.mu.Unlock()
	assert.Equal(t, n, st.ObserverPanics, "every callback of the panicking observer was recovered and counted")

	// Removing an observer stops its callbacks.
	remove := g.Observe(GateObserver{RateLimited: func(RateLimitedEvent) { t.Error("removed observer called") }})
	remove()
	remove()
	g.Check(Message{Session: s, Kind: kChat, Size: 10, Request: 4}, sec)
}

// floodGate is a gate of policy p without strikes (so floods are dropped,
// never escalated), whose events rec records.
func floodGate(t *testing.T, p Policy) (*Gate, *recorder) {
	t.Helper()
	p.Strikes.Disabled = true
	g := mustGate(t, p)
	rec := &recorder{}
	g.Observe(rec.observer())
	return g, rec
}

// Transport floods are coalesced into one report per session and reason
// per Step, carrying the number of drops; other denials are reported once
// per message.
func TestFloodCoalescing(t *testing.T) {
	p := testPolicy()
	p.Transport.Bytes = Budget{Rate: new(800.0), Burst: new(800.0)}
	g, rec := floodGate(t, p)
	a := mustOpen(t, g, addrA, 0)
	b := mustOpen(t, g, netip.MustParseAddrPort("198.51.100.3:3"), 0)
	require.True(t, g.Check(Message{Session: a, Kind: kMove, Size: 10}, 0).OK())
	require.True(t, g.Check(Message{Session: b, Kind: kMove, Size: 10}, 0).OK())
	for i := range 50 {
		assert.Equal(t, ByteLimit, g.Check(Message{Session: a, Kind: kMove, Size: uint32(10 + i)}, 0).Reason)
	}
	for range 5 {
		assert.Equal(t, Malformed, g.Check(Message{Session: a, Kind: kMove, Size: 7, Flags: FlagMalformed}, 0).Reason)
	}
	for range 7 {
		assert.Equal(t, ByteLimit, g.Check(Message{Session: b, Kind: kMove, Size: 20}, 0).Reason)
	}
	rec.mu.Lock()
	assert.Empty(t, rec.floods, "nothing is reported before the step")
	assert.Empty(t, rec.limited, "flood reasons are not reported per message")
	rec.mu.Unlock()

	g.Step(1)
	rec.mu.Lock()
	got := map[Session]map[Reason]FloodEvent{}
	for _, f := range rec.floods {
		if got[f.Session] == nil {
			got[f.Session] = map[Reason]FloodEvent{}
		}
		_, dup := got[f.Session][f.Reason]
		assert.False(t, dup, "one report per session and reason")
		got[f.Session][f.Reason] = f
	}
	rec.floods = nil
	rec.mu.Unlock()
	require.Len(t, got, 2)
	fa := got[a][ByteLimit]
	assert.Equal(t, uint64(50), fa.Count)
	assert.Equal(t, uint64(50*10+49*50/2), fa.Bytes)
	assert.Equal(t, uint32(59), fa.Largest)
	assert.Equal(t, uint64(800), fa.Budget)
	assert.Equal(t, int64(1), fa.At)
	assert.Equal(t, uint64(5), got[a][Malformed].Count)
	assert.Equal(t, uint64(7), got[b][ByteLimit].Count)
	assert.Len(t, got[b], 1)

	st := g.Stats()
	assert.Equal(t, uint64(62), st.TransportFloods, "each drop counted")
	assert.Equal(t, uint64(fa.Bytes+35+140), st.TransportFloodBytes)

	g.Step(2)
	rec.mu.Lock()
	assert.Empty(t, rec.floods, "nothing new, nothing reported")
	rec.mu.Unlock()

	// Close reports what is pending.
	g.Check(Message{Session: b, Kind: kMove, Size: 20}, 2)
	g.Close(b, 3)
	rec.mu.Lock()
	require.Len(t, rec.floods, 1)
	assert.Equal(t, uint64(1), rec.floods[0].Count)
	rec.mu.Unlock()

	// A channel over its rate is reported per message, with the channel.
	g = mustGate(t, testPolicy())
	rec = &recorder{}
	g.Observe(rec.observer())
	s := mustOpen(t, g, addrA, 0)
	for range 12 {
		g.Check(Message{Session: s, Kind: kMove, Size: 10}, 0)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.limited, 2)
	for _, e := range rec.limited {
		assert.Equal(t, s, e.Session)
		assert.Equal(t, "move", e.Channel)
		assert.Equal(t, kMove, e.Kind)
		assert.Equal(t, ChannelLimit, e.Reason)
		assert.Equal(t, Drop, e.Action)
	}
}

// Shadow mode decides and records everything but enforces nothing.
func TestShadowMode(t *testing.T) {
	p := testPolicy()
	p.Shadow = true
	p.Strikes.Ladder = Ladder{Warn: new(1.0), Shed: new(2.0), Drop: new(3.0), Disconnect: new(4.0), Lockout: new(8.0)}
	g := mustGate(t, p)
	var rec recorder
	g.Observe(rec.observer())
	s := mustOpen(t, g, addrA, 0)
	mustAuth(t, g, s, 5, 0)

	var would []Verdict
	for id := uint64(1); id <= 5; id++ {
		v := g.Check(Message{Session: s, Kind: kChat, Size: 10, Request: id}, 0)
		assert.Equal(t, Accept, v.Action, "shadow mode never refuses")
		if v.Reason != None {
			assert.True(t, v.Shadow)
			would = append(would, v)
		} else {
			assert.False(t, v.Shadow)
		}
		g.Done(s, id)
	}
	require.Len(t, would, 3)
	assert.Equal(t, ChannelLimit, would[0].Reason)
	assert.Positive(t, would[0].RetryAfter, "with the retry-after it would have sent")

	for range 4 {
		v := g.Check(Message{Session: s, Kind: kMove, Size: 10, Flags: FlagMalformed}, 0)
		assert.Equal(t, Accept, v.Action)
	}
	// The account would now be locked out; it is not refused.
	v := g.Authenticate(mustOpen(t, g, netip.MustParseAddrPort("198.51.100.8:1"), 0), 5, 0)
	assert.Equal(t, Accept, v.Action)
	assert.True(t, v.Shadow)
	assert.Equal(t, Lockout, v.Reason)

	st := g.Stats()
	assert.True(t, st.Shadow)
	assert.Equal(t, uint64(3), st.Count("chat", ChannelLimit), "counts what it would have done")
	assert.Equal(t, uint64(2), st.Count("chat", None))
	assert.Equal(t, uint64(4), st.Count("move", Malformed))
	assert.Equal(t, uint64(3+4+1), st.Shadowed)
	assert.Equal(t, uint64(3), st.Actions[Reject])
	assert.Positive(t, st.Actions[Disconnect], "it would have disconnected")
	assert.Equal(t, uint64(1), st.Lockouts)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.NotEmpty(t, rec.limited)
	assert.True(t, rec.limited[0].Shadow)
	assert.Equal(t, Reject, rec.limited[0].Action, "events carry the action it would have taken")
	require.NotEmpty(t, rec.strikes)
	assert.True(t, rec.strikes[0].Shadow)
}

func TestStatsStripes(t *testing.T) {
	g := mustGate(t, testPolicy())
	require.GreaterOrEqual(t, len(g.stats.stripes), 4)
	assert.Equal(t, len(g.stats.stripes)-1, g.stats.mask)
	// Sessions in consecutive slots count on different stripes.
	a := mustOpen(t, g, addrA, 0)
	b := mustOpen(t, g, addrA, 0)
	g.Check(Message{Session: a, Kind: kMove, Size: 10}, 0)
	g.Check(Message{Session: b, Kind: kMove, Size: 10}, 0)
	sa, sb := g.stats.stripe(g.lookup(a).stripe), g.stats.stripe(g.lookup(b).stripe)
	assert.NotSame(t, sa, sb)
	assert.Equal(t, uint64(1), sa.decisions[kMove*NumReasons].Load())
	assert.Equal(t, uint64(1), sb.decisions[kMove*NumReasons].Load())
	st := g.Stats()
	assert.Equal(t, uint64(2), st.Count("move", None))
	assert.Equal(t, uint64(2), st.Total(None)-st.Count("(session)", None))
	assert.Equal(t, "(unknown)", st.Kinds[len(st.Kinds)-3].Name)
}

// An Oversize report's budget is the limit the largest dropped message
// broke: its channel's max size, or the max frame for a message of no
// known kind, never the max frame for a channel's own smaller cap.
func TestOversizeFloodBudgetIsTheLimitBroken(t *testing.T) {
	g, rec := floodGate(t, testPolicy())
	a := mustOpen(t, g, addrA, 0)
	b := mustOpen(t, g, netip.MustParseAddrPort("198.51.100.3:3"), 0)
	c := mustOpen(t, g, netip.MustParseAddrPort("198.51.100.4:4"), 0)
	require.True(t, g.Check(Message{Session: a, Kind: kMove, Size: 10}, 0).OK())
	for _, size := range []uint32{200, 300, 250} {
		assert.Equal(t, Oversize, g.Check(Message{Session: a, Kind: kMove, Size: size}, 0).Reason)
	}
	assert.Equal(t, Oversize, g.Check(Message{Session: b, Kind: 99, Size: 5000}, 0).Reason)
	// Two channels in one report: the largest message, with its own limit.
	assert.Equal(t, Oversize, g.Check(Message{Session: c, Kind: kChat, Size: 300, Request: 1}, 0).Reason)
	assert.Equal(t, Oversize, g.Check(Message{Session: c, Kind: kMove, Size: 290}, 0).Reason)
	g.Step(1)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	got := map[Session]FloodEvent{}
	for _, f := range rec.floods {
		if f.Reason == Oversize {
			got[f.Session] = f
		}
	}
	require.Len(t, got, 3)
	assert.Equal(t, uint64(3), got[a].Count)
	assert.Equal(t, uint32(300), got[a].Largest)
	assert.Equal(t, uint64(128), got[a].Budget, "move's max size")
	assert.Equal(t, uint32(5000), got[b].Largest)
	assert.Equal(t, uint64(4096), got[b].Budget, "the max frame")
	assert.Equal(t, uint32(300), got[c].Largest)
	assert.Equal(t, uint64(256), got[c].Budget, "chat's max size, the limit of the largest")
}

// takeLargest takes the size and leaves the limit: a drop counted after a
// report took the size (a racing Step) still has a budget in the next.
func TestTakeLargestKeepsTheLimit(t *testing.T) {
	var a floodAcc
	a.note(200, 128)
	size, limit := a.takeLargest()
	assert.Equal(t, uint32(200), size)
	assert.Equal(t, uint32(128), limit)
	size, limit = a.takeLargest()
	assert.Equal(t, uint32(0), size, "the size is taken")
	assert.Equal(t, uint32(128), limit, "the limit stays")
}

// Under drops racing Steps, every Oversize report names the limit broken,
// and the totals over all reports are exact, whichever report a racing
// drop's size and count land in. Whether a round catches takeLargest
// losing the limit depends on the scheduling (TestTakeLargestKeepsTheLimit
// pins that deterministically); the rounds check the whole under the
// race. The other half, note counting last, matters only for a session's
// first report (before it the limit is 0); no test here makes that window
// reliably, so it rests on the reasoning in note.
func TestOversizeReportsRacingSteps(t *testing.T) {
	for round := range 10 {
		if !oversizeRacingStepsRound(t) {
			t.Fatalf("round %d", round)
		}
	}
}

// oversizeRacingStepsRound is one round of TestOversizeReportsRacingSteps;
// it reports whether every check held.
func oversizeRacingStepsRound(t *testing.T) bool {
	g, rec := floodGate(t, testPolicy())
	s := mustOpen(t, g, addrA, 0)
	const drops = 50_000
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range drops {
			g.Check(Message{Session: s, Kind: kMove, Size: 200}, 0)
		}
	}()
	now := int64(1)
	for running := true; running; now++ {
		select {
		case <-done:
			running = false
		default:
		}
		g.Step(now)
	}
	g.Step(now)
	var count, bytes uint64
	budgets := map[uint64]int{}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, e := range rec.floods {
		if e.Reason == Oversize {
			count += e.Count
			bytes += e.Bytes
			budgets[e.Budget]++
		}
	}
	return assert.Equal(t, uint64(drops), count) &&
		assert.Equal(t, uint64(drops*200), bytes) &&
		assert.Equal(t, []uint64{128}, slices.Collect(maps.Keys(budgets)), "move's max size in every report")
}
