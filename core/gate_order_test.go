package core

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gateFootprint is everything a message could create.
type gateFootprint struct {
	accounts, addresses, accountKeys, addressKeys, matchKeys int
}

func footprint(g *Gate) gateFootprint {
	g.mu.Lock()
	f := gateFootprint{accounts: len(g.accounts.m), addresses: len(g.addresses.m)}
	g.mu.Unlock()
	f.accountKeys, f.addressKeys, f.matchKeys = g.account.size(), g.address.size(), g.match.size()
	return f
}

// A message for a session that is not open (closed, never opened, a stale
// handle of a reused slot) is dropped before any state exists: no bucket,
// no table entry, no strike, no event.
func TestGateNoStateForDepartedSession(t *testing.T) {
	g := mustGate(t, testPolicy())
	var rec recorder
	g.Observe(rec.observer())
	s := mustOpen(t, g, addrA, 0)
	mustAuth(t, g, s, 5, 0)
	require.True(t, g.Check(Message{Session: s, Kind: kMove, Size: 20, Match: 1}, 0).OK())
	g.Close(s, 0)
	// The slot is reused by a new session: the old handle must not reach it.
	s2 := mustOpen(t, g, netip.MustParseAddrPort("198.51.100.9:1"), 0)
	require.Equal(t, s.index(), s2.index())
	require.NotEqual(t, s, s2)
	before := footprint(g)
	words := g.lookup(s2).kinds[kMove].Load()

	msgs := []Message{
		{Session: s, Kind: kMove, Size: 20, Match: 999},            // departed, new match id
		{Session: s, Kind: kAsk, Size: 20, Request: 1, Match: 998}, // departed request
		{Session: s, Kind: kChat, Size: 9999},                      // departed, oversize
		{Session: s, Kind: kMove, Size: 20, Flags: FlagMalformed},  // departed, malformed
		{Session: Session(1<<32 | 4000), Kind: kMove, Size: 20},    // never opened
		{Session: Session(1<<32 | 1<<31), Kind: kMove, Size: 20},   // out of the table
		{Kind: kMove, Size: 20},                                    // zero handle
	}
	for i, m := range msgs {
		for range 100 { // a flood of them, enough to escalate a real session
			v := g.Check(m, sec)
			assert.Equal(t, Drop, v.Action, "message %d", i)
			assert.NotEqual(t, None, v.Reason)
			assert.Equal(t, StageNone, v.Stage)
		}
	}
	assert.Equal(t, NoSession, g.Check(msgs[0], sec).Reason)
	assert.Equal(t, Oversize, g.Check(msgs[2], sec).Reason, "format is judged first, still without state")
	g.Done(s, 1)
	g.Close(s, sec)
	assert.Equal(t, NoSession, g.Read(s, 100, sec).Reason)

	after := footprint(g)
	assert.Equal(t, before.accounts, after.accounts)
	assert.Equal(t, before.addresses, after.addresses)
	assert.Equal(t, before.accountKeys, after.accountKeys)
	assert.Equal(t, before.addressKeys, after.addressKeys)
	assert.Equal(t, before.matchKeys, after.matchKeys, "no match bucket keyed to a departed session")
	assert.Equal(t, words, g.lookup(s2).kinds[kMove].Load(), "the slot's new owner is untouched")
	assert.NotNil(t, g.lookup(s2), "closing a stale handle does not close the slot's new owner")
	g.Step(2 * sec)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.Empty(t, rec.limited)
	assert.Empty(t, rec.floods)
	assert.Empty(t, rec.strikes)
}

// bucketState is the raw state of every bucket a message of s could touch.
type bucketState struct {
	bytes, frames uint64
	kinds         []uint64
	account       float64
	address       float64
	match         float64
}

func snapshot(g *Gate, s Session, account, match uint64, now int64) bucketState {
	ss := g.lookup(s)
	b := bucketState{bytes: ss.bytes.Load(), frames: ss.frames.Load()}
	for i := range ss.kinds {
		b.kinds = append(b.kinds, ss.kinds[i].Load())
	}
	b.account, _ = g.account.levelAt(account, now)
	b.address, _ = g.address.levelAt(ss.addrKey, now)
	b.match, _ = g.match.levelAt(match, now)
	return b
}

// A transaction-locked profile is refused before any bucket: even with its
// byte budget spent, the reason is Locked and nothing is charged.
func TestGateLockedBeforeAnyBucket(t *testing.T) {
	locked := map[uint64]bool{42: true}
	p := testPolicy()
	p.Transport.Bytes = Budget{Rate: new(1000.0), Burst: new(1000.0)}
	g := mustGate(t, p, WithLockedHook(func(a uint64) bool { return locked[a] }))
	s := mustOpen(t, g, addrA, 0)
	mustAuth(t, g, s, 42, 0)
	locked[42] = false
	require.True(t, g.Check(Message{Session: s, Kind: kMove, Size: 100, Match: 3}, 0).OK()) // 800 of 1,000 bytes
	locked[42] = true
	before := snapshot(g, s, 42, 3, 0)
	for _, m := range []Message{
		{Session: s, Kind: kAsk, Size: 900, Request: 1, Match: 3}, // would also be over the byte budget
		{Session: s, Kind: kMove, Size: 20, Match: 3},
	} {
		v := g.Check(m, 0)
		assert.Equal(t, Locked, v.Reason)
	}
	assert.Equal(t, before, snapshot(g, s, 42, 3, 0), "no bucket was touched")
	assert.Zero(t, g.lookup(s).queued.Load(), "nor the request queue")
	locked[42] = false
	assert.Equal(t, ByteLimit, g.Check(Message{Session: s, Kind: kAsk, Size: 900, Request: 1}, 0).Reason)
}

// A message denied at the kind layer, or later at the match layer, leaves
// the transport, address/account and kind buckets exactly as they were.
func TestGateRefundsAreExact(t *testing.T) {
	p := testPolicy()
	p.Transport.Bytes = Budget{Rate: new(100_000.0), Burst: new(10_000.0)}
	p.Transport.Frames = Budget{Rate: new(240.0), Burst: new(128.0)}
	p.Account = Budget{Rate: new(100.0), Burst: new(50.0)}
	p.Match = Budget{Rate: new(10.0), Burst: new(4.0)}
	g := mustGate(t, p)
	s := mustOpen(t, g, addrA, 0)
	mustAuth(t, g, s, 9, 0)

	now := 3 * ms
	// Partly drain everything so that no bucket is full (a full bucket is
	// restored to the same level under a re-anchored word).
	for i := range 2 {
		require.True(t, g.Check(Message{Session: s, Kind: kChat, Size: 200, Request: uint64(i + 1), Match: 5}, now).OK())
	}
	require.True(t, g.Check(Message{Session: s, Kind: kMove, Size: 100, Match: 5}, now).OK())

	t.Run("kind layer", func(t *testing.T) {
		before := snapshot(g, s, 9, 5, now)
		v := g.Check(Message{Session: s, Kind: kChat, Size: 200, Request: 3, Match: 5}, now)
		require.Equal(t, ChannelLimit, v.Reason)
		after := snapshot(g, s, 9, 5, now)
		assert.Equal(t, before.bytes, after.bytes, "byte word restored bit for bit")
		assert.Equal(t, before.frames, after.frames, "frame word restored bit for bit")
		assert.Equal(t, before.kinds, after.kinds)
		assert.Equal(t, before.account, after.account)
		assert.Equal(t, before.match, after.match)
		assert.Zero(t, g.lookup(s).pending[3&g.pendMask].Load(), "the request left no pending entry")
		assert.Equal(t, int32(2), g.lookup(s).queued.Load())
	})
	t.Run("match layer", func(t *testing.T) {
		require.True(t, g.Check(Message{Session: s, Kind: kMove, Size: 20, Match: 5}, now).OK()) // match: 0 left
		before := snapshot(g, s, 9, 5, now)
		v := g.Check(Message{Session: s, Kind: kMove, Size: 100, Match: 5}, now)
		require.Equal(t, MatchLimit, v.Reason)
		assert.Equal(t, before, snapshot(g, s, 9, 5, now), "account and kind tokens taken before the match denied were returned")
	})
	t.Run("frame layer returns bytes", func(t *testing.T) {
		ss := g.lookup(s)
		later := now + 10*ms
		for g.framesLim.LevelAt(&ss.frames, later) >= 1 {
			require.True(t, g.framesLim.TakeAt(&ss.frames, later, 1).OK())
		}
		before := snapshot(g, s, 9, 5, later)
		v := g.Check(Message{Session: s, Kind: kMove, Size: 10, Match: 5}, later)
		require.Equal(t, FrameLimit, v.Reason)
		assert.Equal(t, before, snapshot(g, s, 9, 5, later))
	})
	t.Run("full buckets stay full", func(t *testing.T) {
		at := 10 * sec // everything has refilled
		for range 4 {
			require.True(t, g.Check(Message{Session: s, Kind: kMove, Size: 10, Match: 6}, at).OK())
		}
		s2 := mustOpen(t, g, netip.MustParseAddrPort("198.51.100.2:1"), at)
		v := g.Check(Message{Session: s2, Kind: kMove, Size: 10, Match: 6}, at)
		require.Equal(t, MatchLimit, v.Reason)
		ss := g.lookup(s2)
		assert.True(t, g.bytesLim.IsFull(ss.bytes.Load(), at))
		assert.True(t, g.framesLim.IsFull(ss.frames.Load(), at))
		for k := range ss.kinds {
			assert.True(t, g.chans[k].lim.IsFull(ss.kinds[k].Load(), at))
		}
		lvl, _ := g.address.levelAt(ss.addrKey, at)
		assert.Equal(t, 999.0, lvl, "the address bucket holds what Open left")
	})
}

// The refunds the gate relies on (atomicbucket's Limit.RefundAt) are exact
// against takes at the same instant, whatever the level, and never fill a
// bucket above its burst.
func TestRefundExact(t *testing.T) {
	for _, tc := range []struct{ rate, burst float64 }{{30, 30}, {480_000, 8_000}, {1, 1}, {1e9, 1e9}, {0.5, 3}} {
		t.Run(fmt.Sprint(tc), func(t *testing.T) {
			p := Budget{Rate: new(tc.rate), Burst: new(tc.burst)}
			g := mustGate(t, Policy{Channels: []Channel{{Name: "c", Class: ClassInput, Rate: p.Rate, Burst: p.Burst}}})
			lim := g.chans[0].lim
			s := mustOpen(t, g, addrA, 0)
			w := &g.lookup(s).kinds[0]
			now := int64(0)
			for step := range 50 {
				now += int64(step%7) * int64(time.Millisecond) * 37
				n := uint64(1 + step%int(tc.burst))
				before := w.Load()
				lvl := lim.LevelAt(w, now)
				if !lim.TakeAt(w, now, n).OK() {
					continue
				}
				lim.RefundAt(w, now, n)
				assert.Equal(t, lvl, lim.LevelAt(w, now))
				if lvl < tc.burst {
					assert.Equal(t, before, w.Load(), "bit-exact when not full")
				}
				lim.TakeAt(w, now, 1) // and move on from a different level
			}
			// Refunding more than was taken caps at the burst.
			lim.RefundAt(w, now, uint64(tc.burst))
			lim.RefundAt(w, now, uint64(tc.burst))
			assert.Equal(t, tc.burst, lim.LevelAt(w, now))
			assert.True(t, lim.IsFull(w.Load(), now))
		})
	}
}

// Account state outlives the connection: reconnecting with the same
// account does not reset its bucket (or its strikes).
func TestGateReconnectKeepsAccountBucket(t *testing.T) {
	p := testPolicy()
	p.Account = Budget{Rate: new(0.1), Burst: new(5.0)}
	g := mustGate(t, p)
	s1 := mustOpen(t, g, addrA, 0)
	mustAuth(t, g, s1, 7, 0)
	for range 5 {
		require.True(t, g.Check(Message{Session: s1, Kind: kMove, Size: 20}, 0).OK())
	}
	require.Equal(t, AccountLimit, g.Check(Message{Session: s1, Kind: kMove, Size: 20}, 0).Reason)
	w := g.ladder.weight[AccountLimit]
	require.Equal(t, w, g.accounts.m[7].strikes.score(0))
	g.Close(s1, 0)

	at := sec
	g.Step(at) // a sweep must not forget a throttled account
	s2 := mustOpen(t, g, netip.MustParseAddrPort("203.0.113.5:9"), at)
	mustAuth(t, g, s2, 7, at)
	v := g.Check(Message{Session: s2, Kind: kAsk, Size: 20, Request: 1}, at)
	assert.Equal(t, AccountLimit, v.Reason, "a fresh connection does not bring a fresh account bucket")
	assert.Equal(t, 9*time.Second, v.RetryAfter, "0.1 of a token back after 1s at 0.1/s")
	assert.Equal(t, w-at+w, g.accounts.m[7].strikes.score(at), "strikes persist too")

	s3 := mustOpen(t, g, netip.MustParseAddrPort("203.0.113.6:9"), at)
	mustAuth(t, g, s3, 8, at)
	assert.True(t, g.Check(Message{Session: s3, Kind: kMove, Size: 20}, at).OK(), "another account is unaffected")

	assert.True(t, g.Check(Message{Session: s2, Kind: kMove, Size: 20}, 10*sec).OK(), "the bucket refills at its rate")
}

// A player hopping across K channels, each within its own limit, is
// stopped by the aggregate layers: the account bucket for one player, the
// match bucket for a party of them.
func TestGateChannelHoppingStoppedByAggregates(t *testing.T) {
	const K = 20
	p := Policy{
		Transport: Transport{Bytes: Budget{Rate: new(1e8), Burst: new(1e8)}, Frames: Budget{Rate: new(1e6), Burst: new(1e6)}},
		Account:   Budget{Rate: new(120.0), Burst: new(240.0)},
		Match:     Budget{Rate: new(400.0), Burst: new(500.0)},
	}
	for i := range K {
		p.Channels = append(p.Channels, Channel{Name: fmt.Sprintf("c%d", i), Class: ClassInput, Rate: new(30.0), Burst: new(30.0)})
	}
	p.Strikes.Disabled = true

	hop := func(g *Gate, sessions []Session, from, to int64, perChannelRate int, match uint64) (ok int, reasons map[Reason]int) {
		reasons = map[Reason]int{}
		step := sec / int64(perChannelRate)
		for at := from; at < to; at += step {
			for _, s := range sessions {
				for k := range K {
					v := g.Check(Message{Session: s, Kind: uint16(k), Size: 20, Match: match}, at)
					if v.OK() {
						ok++
					} else {
						reasons[v.Reason]++
					}
				}
			}
		}
		return ok, reasons
	}

	t.Run("per-channel buckets alone let it through", func(t *testing.T) {
		q := p
		q.Account = Budget{Disabled: true}
		q.Match = Budget{Disabled: true}
		g := mustGate(t, q)
		s := mustOpen(t, g, addrA, 0)
		mustAuth(t, g, s, 1, 0)
		ok, reasons := hop(g, []Session{s}, 0, 10*sec, 60, 0)
		assert.InDelta(t, K*(30+30*10), ok, K, "every channel gives its burst and its rate")
		assert.Positive(t, reasons[ChannelLimit])
	})
	t.Run("the account bucket stops one player", func(t *testing.T) {
		q := p
		q.Match = Budget{Disabled: true}
		g := mustGate(t, q)
		s := mustOpen(t, g, addrA, 0)
		mustAuth(t, g, s, 1, 0)
		ok, reasons := hop(g, []Session{s}, 0, 10*sec, 30, 0) // 600 messages a second, 30 per channel
		assert.LessOrEqual(t, ok, 240+120*10+1)
		assert.GreaterOrEqual(t, ok, 240+120*10-1)
		assert.Zero(t, reasons[ChannelLimit], "no single channel was over its rate")
		assert.Positive(t, reasons[AccountLimit])
		// Reconnecting to hop on does not help either.
		g.Close(s, 10*sec)
		s = mustOpen(t, g, addrA, 10*sec)
		mustAuth(t, g, s, 1, 10*sec)
		ok, _ = hop(g, []Session{s}, 10*sec, 11*sec, 30, 0)
		assert.LessOrEqual(t, ok, 121)
	})
	t.Run("the match bucket stops a party", func(t *testing.T) {
		g := mustGate(t, p)
		var party []Session
		for i := range 4 {
			s := mustOpen(t, g, netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(i + 1)}), 1), 0)
			mustAuth(t, g, s, uint64(100+i), 0)
			party = append(party, s)
		}
		ok, reasons := hop(g, party, 0, 5*sec, 30, 77)
		assert.LessOrEqual(t, ok, 500+400*5+1, "the party shares one match budget")
		assert.Positive(t, reasons[MatchLimit])
		assert.Zero(t, reasons[ChannelLimit])
	})
}

func TestGateDuplicateAndReplay(t *testing.T) {
	p := testPolicy()
	p.Queue.ReplayWindow = new(uint32(4))
	g := mustGate(t, p)
	s := mustOpen(t, g, addrA, 0)
	ask := func(id uint64) Verdict { return g.Check(Message{Session: s, Kind: kAsk, Size: 10, Request: id}, 0) }
	require.True(t, ask(1).OK())
	assert.Equal(t, Duplicate, ask(1).Reason)
	g.Done(s, 1)
	g.Done(s, 1) // twice is harmless
	assert.Equal(t, int32(0), g.lookup(s).queued.Load())
	assert.Equal(t, Replay, ask(1).Reason)
	// The replay window is bounded: four later ids push id 1 out.
	for id := uint64(2); id <= 5; id++ {
		require.True(t, ask(id).OK())
		g.Done(s, id)
	}
	assert.True(t, ask(1).OK(), "outside the window a completed id is no longer remembered")
	g.Done(s, 1)
	assert.Equal(t, Replay, ask(4).Reason)
	g.Done(s, 999) // unknown ids are ignored
	assert.Equal(t, int32(0), g.lookup(s).queued.Load())
}

func TestGateInFlightPerAccount(t *testing.T) {
	g := mustGate(t, testPolicy())
	s1 := mustOpen(t, g, addrA, 0)
	s2 := mustOpen(t, g, netip.MustParseAddrPort("198.51.100.1:1"), 0)
	mustAuth(t, g, s1, 3, 0)
	mustAuth(t, g, s2, 3, 0)
	buy := func(s Session, id uint64) Verdict {
		return g.Check(Message{Session: s, Kind: kBuy, Size: 10, Request: id}, 0)
	}
	require.True(t, buy(s1, 1).OK())
	v := buy(s2, 1)
	assert.Equal(t, InFlightLimit, v.Reason, "the cap is per account, across its connections")
	assert.Equal(t, Reject, v.Action)
	g.Done(s1, 1)
	require.True(t, buy(s2, 1).OK())
	g.Close(s2, 0) // closing releases what the session held
	require.True(t, buy(s1, 2).OK())
}

func TestGateMinimumChargeAndReads(t *testing.T) {
	p := testPolicy()
	p.Transport.Bytes = Budget{} // 480,000 B/s, burst 8,000, minimum 800
	g := mustGate(t, p)
	s := mustOpen(t, g, addrA, 0)
	// Ten tiny reads cap the heartbeat.
	for range 10 {
		require.True(t, g.Read(s, 5, 0).OK())
	}
	v := g.Read(s, 5, 0)
	assert.Equal(t, ByteLimit, v.Reason)
	assert.Equal(t, Drop, v.Action)
	// One read of many frames is charged once; its frames pass on frames alone.
	at := sec / 60 // one heartbeat refills 8,000 bytes
	require.True(t, g.Read(s, 3000, at).OK())
	for range 9 {
		require.True(t, g.Check(Message{Session: s, Kind: kMove, Size: 100, Flags: FlagCharged}, at).OK())
	}
	assert.InDelta(t, 5000, g.bytesLim.LevelAt(&g.lookup(s).bytes, at), 1)
}

// Tokens are size-blind; a channel's cost says what one of its messages is
// worth, to its own bucket and to the account and match buckets.
func TestGateCost(t *testing.T) {
	p := testPolicy()
	p.Channels[kBuy].Cost = new(uint64(4))
	p.Account = Budget{Rate: new(1.0), Burst: new(10.0)}
	p.Match = Budget{Rate: new(1.0), Burst: new(100.0)}
	g := mustGate(t, p)
	s := mustOpen(t, g, addrA, 0)
	mustAuth(t, g, s, 3, 0)
	require.True(t, g.Check(Message{Session: s, Kind: kBuy, Size: 10, Request: 1, Match: 8}, 0).OK())
	st := snapshot(g, s, 3, 8, 0)
	assert.Equal(t, 6.0, st.account)
	assert.Equal(t, 96.0, st.match)
	assert.Equal(t, 6.0, g.chans[kBuy].lim.LevelAt(&g.lookup(s).acct.Load().kinds[kBuy], 0), "the account's channel bucket")
	g.Done(s, 1)
	require.True(t, g.Check(Message{Session: s, Kind: kBuy, Size: 10, Request: 2}, 0).OK())
	g.Done(s, 2)
	v := g.Check(Message{Session: s, Kind: kBuy, Size: 10, Request: 3}, 0)
	assert.Equal(t, AccountLimit, v.Reason, "2 tokens left, 4 needed")
	assert.Equal(t, 2*time.Second, v.RetryAfter)
	assert.True(t, g.Check(Message{Session: s, Kind: kMove, Size: 10}, 0).OK(), "a cost-1 message still fits")
}
