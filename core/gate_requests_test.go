package core

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func askMsg(s Session, id uint64) Message {
	return Message{Session: s, Kind: kAsk, Size: 20, Request: id}
}

// Ids that share their low bits are told apart: 1 and 65 (and 129...) are
// in flight together without QueueFull, each is a duplicate of itself
// only, and after 1 and 65 complete, 1 again is a replay.
func TestGateRequestIdsCollidingLowBits(t *testing.T) {
	p := testPolicy()
	p.Strikes.Disabled = true // the duplicates and replays checked here would escalate
	g := mustGate(t, p)
	s := mustOpen(t, g, addrA, 0)
	mustAuth(t, g, s, 1, 0)
	for _, id := range []uint64{1, 65, 129, 1 << 40, 1<<40 | 1} {
		v := g.Check(askMsg(s, id), 0)
		require.True(t, v.OK(), "id %d: %v", id, v)
	}
	for _, id := range []uint64{1, 65, 129, 1<<40 | 1} {
		assert.Equal(t, Duplicate, g.Check(askMsg(s, id), 0).Reason, "id %d", id)
	}
	for _, id := range []uint64{1, 65, 129, 1 << 40, 1<<40 | 1} {
		g.Done(s, id)
	}
	for _, id := range []uint64{1, 65, 129, 1 << 40, 1<<40 | 1} {
		assert.Equal(t, Replay, g.Check(askMsg(s, id), 0).Reason, "id %d", id)
	}
	// 1, 65, 1 with each answered before the next: the replay of 1 is seen.
	g2 := mustGate(t, testPolicy())
	s2 := mustOpen(t, g2, addrA, 0)
	mustAuth(t, g2, s2, 1, 0)
	require.True(t, g2.Check(askMsg(s2, 1), 0).OK())
	g2.Done(s2, 1)
	require.True(t, g2.Check(askMsg(s2, 65), 0).OK())
	g2.Done(s2, 65)
	assert.Equal(t, Replay, g2.Check(askMsg(s2, 1), 0).Reason)
	st := g2.Stats()
	assert.Zero(t, st.Count("ask", QueueFull))
}

// A client with random 64-bit ids, queue.commands of them in flight at
// once, answered in random order: nothing is refused, every release is
// exact (the queue empties), and every id of the last replayWindow
// completions is a replay.
func TestGateRequestIdsRandom(t *testing.T) {
	p := testPolicy()
	p.Queue.Commands = new(uint32(32))
	p.Queue.ReplayWindow = new(uint32(64))
	p.Strikes.Disabled = true
	g := mustGate(t, p)
	s := mustOpen(t, g, addrA, 0)
	mustAuth(t, g, s, 1, 0)
	rng := rand.New(rand.NewPCG(1, 2))
	var inflight, completed []uint64
	now := int64(0)
	next := uint64(0)
	for round := range 200 {
		for len(inflight) < 32 {
			id := rng.Uint64() | 1
			if round%3 == 0 {
				next++
				id = next<<6 | 1 // all on one home slot
			}
			now += 20 * ms // within ask's rate
			v := g.Check(askMsg(s, id), now)
			if v.Reason == Replay || v.Reason == Duplicate {
				continue // the low-bit ids repeat across rounds
			}
			require.True(t, v.OK(), "round %d id %d: %v", round, id, v)
			inflight = append(inflight, id)
		}
		rng.Shuffle(len(inflight), func(i, j int) { inflight[i], inflight[j] = inflight[j], inflight[i] })
		for _, id := range inflight[:16] {
			g.Done(s, id)
			completed = append(completed, id)
		}
		inflight = append(inflight[:0], inflight[16:]...)
	}
	for _, id := range inflight {
		assert.Equal(t, Duplicate, g.Check(askMsg(s, id), now).Reason)
	}
	for _, id := range completed[len(completed)-64:] {
		assert.Equal(t, Replay, g.Check(askMsg(s, id), now).Reason, "id %d", id)
	}
	for _, id := range inflight {
		g.Done(s, id)
	}
	ss := g.lookup(s)
	assert.Zero(t, ss.queued.Load(), "every request released")
	assert.Zero(t, ss.displaced.Load())
}

// Close releases displaced requests too, and a Done after it is ignored.
func TestGateRequestIdsDisplacedClose(t *testing.T) {
	p := testPolicy()
	g := mustGate(t, p)
	s := mustOpen(t, g, addrA, 0)
	mustAuth(t, g, s, 3, 0)
	for _, id := range []uint64{5, 5 + 64, 5 + 128} {
		require.True(t, g.Check(Message{Session: s, Kind: kBuy, Size: 20, Request: id}, 0).OK() || id != 5)
	}
	ss := g.lookup(s)
	g.Close(s, 0)
	assert.Zero(t, ss.queued.Load())
	assert.Zero(t, ss.displaced.Load())
	// The account's in-flight count (buy is capped at 1) came back.
	s2 := mustOpen(t, g, addrA, 0)
	mustAuth(t, g, s2, 3, 0)
	assert.True(t, g.Check(Message{Session: s2, Kind: kBuy, Size: 20, Request: 69}, 0).OK())
	g.Done(s, 69)
}
