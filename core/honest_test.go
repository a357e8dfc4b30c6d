package core

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lagPolicy is the reference game's move channel (20 Hz input, rate and
// burst 30) with the default strikes and lag credit (5s).
func lagPolicy() Policy {
	p := testPolicy()
	p.Channels[kMove].Rate, p.Channels[kMove].Burst = new(30.0), new(30.0)
	return p
}

// play sends 20 Hz movement from `from` (inclusive) to `to` (exclusive) and
// returns how many were accepted.
func play(t *testing.T, g *Gate, s Session, from, to int64) int {
	t.Helper()
	n := 0
	for at := from; at < to; at += 50 * ms {
		if g.Check(Message{Session: s, Kind: kMove, Size: 12}, at).OK() {
			n++
		}
	}
	return n
}

// flush sends n held inputs at one instant, as one read of a client that
// has just come back, and returns the verdicts' counts.
func flush(g *Gate, s Session, n int, at int64) (accepted, dropped int, worst StrikeStage) {
	for range n {
		v := g.Check(Message{Session: s, Kind: kMove, Size: 12}, at)
		if v.OK() {
			accepted++
		} else {
			dropped++
		}
		worst = max(worst, v.Stage)
	}
	return
}

func score(g *Gate, s Session, now int64) float64 {
	rec, _ := g.lookup(s).strikeTarget()
	return g.ladder.points(rec.score(now))
}

// A 2 s freeze at 20 Hz flushes 40 inputs into a bucket of 30: the 10
// that overflow are dropped (inputs are replaceable) and earn no strike, and
// play goes on. The same flush without the credit climbs the ladder.
func TestLagFlushAfterTwoSecondsEarnsNoStrike(t *testing.T) {
	for _, credit := range []bool{true, false} {
		p := lagPolicy()
		if !credit {
			p.Channels[kMove].LagCredit = new(Duration(0))
		}
		g := mustGate(t, p)
		s := mustOpen(t, g, addrA, 0)
		mustAuth(t, g, s, 7, 0)
		require.Equal(t, 40, play(t, g, s, 0, 2*sec))
		acc, drop, worst := flush(g, s, 40, 4*sec)
		assert.Equal(t, 30, acc, "credit %v: the bucket's burst", credit)
		assert.Equal(t, 10, drop, "credit %v: the overflow is dropped either way", credit)
		if !credit {
			assert.GreaterOrEqual(t, worst, StageShed, "without the credit the flush climbs the ladder")
			assert.InDelta(t, 10, score(g, s, 4*sec), 0.01)
			continue
		}
		assert.Equal(t, StageNone, worst)
		assert.Zero(t, score(g, s, 4*sec), "no strike")
		st := g.Stats()
		assert.Equal(t, uint64(10), st.LagForgiven)
		assert.Equal(t, uint64(10), st.Count("move", ChannelLimit), "still counted as drops")
		assert.Equal(t, 40, play(t, g, s, 4*sec+50*ms, 6*sec+50*ms), "normal play after the flush")
		assert.Zero(t, score(g, s, 6*sec))
	}
}

// A 3 s freeze (60 inputs) and one of 4.5 s (90), the longest of a 3 s
// mean freeze in lag-storm, are forgiven too; a silence beyond the cap
// (5 s) earns only the cap's credit.
func TestLagCreditGrowsWithTheSilenceUpToTheCap(t *testing.T) {
	for _, tc := range []struct {
		silence  int64
		sent     int
		forgiven uint64
	}{
		{3 * sec, 60, 30},
		{4500 * ms, 90, 60},
		{60 * sec, 200, 5*30 - 30}, // capped: min(60 s, 5 s) × 30 − 30
		{900 * ms, 40, 0},          // shorter than the fill time (1 s): no credit
	} {
		g := mustGate(t, lagPolicy())
		s := mustOpen(t, g, addrA, 0)
		mustAuth(t, g, s, 7, 0)
		require.True(t, g.Check(Message{Session: s, Kind: kMove, Size: 12}, 0).OK())
		acc, drop, _ := flush(g, s, tc.sent, tc.silence)
		assert.Equal(t, 30, acc, "silence %v", time.Duration(tc.silence))
		assert.Equal(t, tc.sent-30, drop)
		assert.Equal(t, tc.forgiven, g.Stats().LagForgiven, "silence %v", time.Duration(tc.silence))
		wantScore := float64(uint64(tc.sent-30) - tc.forgiven) // one point per ChannelLimit not forgiven, before the drop stage
		if wantScore < 12 {
			assert.InDelta(t, wantScore, score(g, s, tc.silence), 0.01, "silence %v", time.Duration(tc.silence))
		}
	}
}

// A flooder cannot pose as a laggard for free: with no silence there is
// no credit; after a silence the credit is what the silence carried at the
// channel's rate and is spent once; it admits nothing the bucket would have
// refused; it lasts one fill time; and a session already at the shed stage
// gets none.
func TestLagCreditCannotBeExploited(t *testing.T) {
	t.Run("no silence, no credit", func(t *testing.T) {
		g := mustGate(t, lagPolicy())
		s := mustOpen(t, g, addrA, 0)
		mustAuth(t, g, s, 7, 0)
		// 100 messages a second against a rate of 30: the bucket admits one
		// every 33 ms, so the channel never falls silent.
		for at := int64(0); at < 2*sec; at += 10 * ms {
			g.Check(Message{Session: s, Kind: kMove, Size: 12}, at)
		}
		assert.Zero(t, g.Stats().LagForgiven)
		assert.GreaterOrEqual(t, score(g, s, 2*sec), 12.0, "struck to the drop stage")
	})
	t.Run("a burst after a silence is forgiven once, and admits nothing more", func(t *testing.T) {
		g := mustGate(t, lagPolicy())
		s := mustOpen(t, g, addrA, 0)
		mustAuth(t, g, s, 7, 0)
		acc, _, _ := flush(g, s, 1000, 2*sec) // silent since the session opened
		assert.Equal(t, 30, acc, "the bucket's burst and not one more")
		// What 2 s carried at 30/s, counted a grain (a sixteenth of the
		// 1 s fill time) short, less the burst the bucket gave:
		// floor(1.9375 × 30) − 30.
		assert.Equal(t, uint64(28), g.Stats().LagForgiven)
		// A second burst right after, with no new silence: struck.
		before := score(g, s, 2*sec+10*ms)
		g.Check(Message{Session: s, Kind: kMove, Size: 12}, 2*sec+10*ms)
		assert.Equal(t, uint64(28), g.Stats().LagForgiven)
		assert.Greater(t, score(g, s, 2*sec+10*ms), before-0.01)
	})
	t.Run("the credit lasts one fill time", func(t *testing.T) {
		g := mustGate(t, lagPolicy())
		s := mustOpen(t, g, addrA, 0)
		mustAuth(t, g, s, 7, 0)
		// A silence of 3 s ends with one message: 60 credit, unused.
		require.True(t, g.Check(Message{Session: s, Kind: kMove, Size: 12}, 3*sec).OK())
		// 1.1 s later (past the fill time, 1 s) the bucket is drained by
		// play at 40/s, never silent for a fill time: its overflow is struck.
		for at := 3*sec + 25*ms; at < 6*sec; at += 25 * ms {
			g.Check(Message{Session: s, Kind: kMove, Size: 12}, at)
		}
		assert.Zero(t, g.Stats().LagForgiven)
		assert.Positive(t, score(g, s, 6*sec))
	})
	t.Run("no credit at the shed stage", func(t *testing.T) {
		g := mustGate(t, lagPolicy())
		s := mustOpen(t, g, addrA, 0)
		mustAuth(t, g, s, 7, 0)
		rec, _ := g.lookup(s).strikeTarget()
		rec.add(g.ladder.rung[StageShed], g.ladder.ceiling, 3*sec)
		// At the shed stage a message costs 2: 15 pass, then drops, struck.
		acc, _, _ := flush(g, s, 40, 3*sec)
		assert.Equal(t, 15, acc)
		assert.Zero(t, g.Stats().LagForgiven)
	})
	t.Run("request channels get no credit", func(t *testing.T) {
		p := lagPolicy()
		p.Channels[kAsk].LagCredit = new(Duration(time.Second))
		_, err := NewGate(p, 0)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "channels[4].lagCredit")
	})
}

// Forgiving a drop and granting a credit allocate nothing.
func TestLagCreditAllocatesNothing(t *testing.T) {
	g := mustGate(t, lagPolicy())
	s := mustOpen(t, g, addrA, 0)
	mustAuth(t, g, s, 7, 0)
	now := int64(0)
	allocs := testing.AllocsPerRun(200, func() {
		now += 2 * sec // a silence, then a flush that overflows
		for range 40 {
			g.Check(Message{Session: s, Kind: kMove, Size: 12}, now)
		}
	})
	assert.Zero(t, allocs)
	assert.Positive(t, g.Stats().LagForgiven)
}

// After a disconnect the account is admitted again only once its score is
// below the shed rung, where its own honest inputs cost what its channels
// say and earn nothing: a session admitted at the drop stage (as before)
// had its first inputs dropped with Lockout strikes, straight back to the
// disconnect rung, and was refused again: a ban loop.
func TestReadmissionAfterDisconnectIsNotALoop(t *testing.T) {
	p := lagPolicy()
	p.Channels[kMove].LagCredit = new(Duration(0)) // the ladder alone
	g := mustGate(t, p)
	s := mustOpen(t, g, addrA, 0)
	mustAuth(t, g, s, 7, 0)
	rec, _ := g.lookup(s).strikeTarget()
	rec.add(g.ladder.rung[StageDisconnect], g.ladder.ceiling, 0) // 16 points
	v := g.Check(Message{Session: s, Kind: kMove, Size: 12}, 0)  // dropped at the drop stage: +1, 17
	require.Equal(t, Disconnect, v.Action)
	g.Close(s, 0)

	// Window 30 s, 16 points per window: a point drains in 1.875 s.
	point := int64(1875 * ms)
	at := 6 * point // score 11: the drop stage, below the disconnect rung
	s = mustOpen(t, g, addrA, at)
	v = g.Authenticate(s, 7, at)
	assert.Equal(t, Lockout, v.Reason, "refused at the drop stage")
	assert.Equal(t, time.Duration(3*point+1), v.RetryAfter, "until the score is below the shed rung (8)")
	at = 10 * point // score 7: warn
	mustAuth(t, g, s, 7, at)
	disconnects := 0
	for t0 := at; t0 < at+20*sec; t0 += 50 * ms {
		if v := g.Check(Message{Session: s, Kind: kMove, Size: 12}, t0); v.Action == Disconnect {
			disconnects++
		}
	}
	assert.Zero(t, disconnects, "honest play after re-admission")
	assert.Less(t, score(g, s, at+20*sec), 7.0, "the score drains")
}

// Command-kind limits are the account's, not the connection's: a client
// that sends exactly the chat burst and reconnects, again and again, is
// held to the channel's rate plus its burst over any window.
func TestChannelLimitsSurviveReconnects(t *testing.T) {
	p := testPolicy()
	p.Channels[kChat].Rate, p.Channels[kChat].Burst = new(1.0), new(5.0) // the reference game's chat
	p.Strikes.Disabled = true                                            // the bucket alone: strikes would lock the account out
	g := mustGate(t, p)
	accepted := 0
	const window = 10 * sec
	for at := int64(0); at < window; at += 125 * ms {
		s := mustOpen(t, g, addrA, at)
		mustAuth(t, g, s, 9, at)
		for id := uint64(1); id <= 5; id++ { // exactly the burst, then reconnect
			if g.Check(Message{Session: s, Kind: kChat, Size: 20, Request: id}, at).OK() {
				accepted++
				g.Done(s, id)
			}
		}
		g.Close(s, at)
	}
	assert.LessOrEqual(t, accepted, 5+1*10, "burst + rate × window (per connection it would be 5 × 80)")
	assert.GreaterOrEqual(t, accepted, 1*10, "the rate is reached")
}

// Two sessions of one account share its channel buckets; a channel token a
// later layer's denial leaves unused is given back to the account's bucket.
func TestAccountChannelBucketsAreSharedAndRefunded(t *testing.T) {
	p := testPolicy()
	p.Match = Budget{Rate: new(1.0), Burst: new(1.0)}
	g := mustGate(t, p)
	a := mustOpen(t, g, addrA, 0)
	b := mustOpen(t, g, netip.MustParseAddrPort("192.0.2.2:4000"), 0)
	mustAuth(t, g, a, 5, 0)
	mustAuth(t, g, b, 5, 0)
	require.True(t, g.Check(Message{Session: a, Kind: kChat, Size: 20, Request: 1}, 0).OK())
	require.True(t, g.Check(Message{Session: b, Kind: kChat, Size: 20, Request: 1}, 0).OK())
	v := g.Check(Message{Session: a, Kind: kChat, Size: 20, Request: 2}, 0)
	assert.Equal(t, ChannelLimit, v.Reason, "chat burst 2, for the account")

	acct := g.lookup(a).acct.Load()
	move := &g.chans[kMove]
	require.True(t, g.Check(Message{Session: a, Kind: kMove, Size: 12, Match: 3}, 0).OK()) // the match's one token
	level := move.lim.LevelAt(&acct.kinds[kMove], 0)
	v = g.Check(Message{Session: b, Kind: kMove, Size: 12, Match: 3}, 0)
	require.Equal(t, MatchLimit, v.Reason)
	assert.Equal(t, level, move.lim.LevelAt(&acct.kinds[kMove], 0), "the account's move token was given back")
}

// An account whose channel bucket is not full again is kept when its
// session closes, however many other accounts churn through a full table:
// reconnecting finds the bucket as it was left.
func TestChurnNeverResetsAThrottledChannel(t *testing.T) {
	p := testPolicy()
	p.Tables.Accounts = new(uint32(3))
	p.Tables.AccountsPerAddress = new(uint32(3))
	g := mustGate(t, p)
	s := mustOpen(t, g, addrA, 0)
	mustAuth(t, g, s, 1, 0)
	for id := uint64(1); id <= 2; id++ {
		require.True(t, g.Check(Message{Session: s, Kind: kChat, Size: 20, Request: id}, 0).OK())
		g.Done(s, id)
	}
	g.Close(s, 0)
	for acct := uint64(100); acct < 200; acct++ {
		at := int64(acct) * ms
		c := mustOpen(t, g, netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(acct)}), 1), at)
		g.Authenticate(c, acct, at)
		g.Close(c, at)
	}
	s = mustOpen(t, g, addrA, 200*ms)
	mustAuth(t, g, s, 1, 200*ms)
	v := g.Check(Message{Session: s, Kind: kChat, Size: 20, Request: 1}, 200*ms)
	assert.Equal(t, ChannelLimit, v.Reason, "the chat bucket (2/s, empty at 0) holds 0.4 tokens at 200 ms")
}

// An address may leave at most tables.accountsPerAddress account entries
// behind that cannot be forgotten: further new accounts from it are refused
// TableFull, while another address logs in; once the entries decay, it may
// again.
func TestOneAddressCannotFillTheAccountTable(t *testing.T) {
	p := testPolicy()
	p.Tables.Accounts = new(uint32(100))
	p.Tables.AccountsPerAddress = new(uint32(10))
	g := mustGate(t, p)
	garbage := func(acct uint64, at int64) Verdict {
		s := mustOpen(t, g, addrA, at)
		v := g.Authenticate(s, acct, at)
		if v.OK() {
			for range 4 {
				g.Check(Message{Session: s, Kind: kMove, Size: 12, Flags: FlagMalformed}, at)
			}
		}
		g.Close(s, at)
		return v
	}
	for acct := uint64(1); acct <= 10; acct++ {
		require.True(t, garbage(acct, 0).OK())
	}
	v := garbage(11, 0)
	assert.Equal(t, TableFull, v.Reason, "the address's bound")
	other := mustOpen(t, g, netip.MustParseAddrPort("198.51.100.7:1"), 0)
	mustAuth(t, g, other, 500, 0)
	assert.Len(t, g.accounts.m, 11)
	// 16 points drain in one window (30 s): then the entries may go.
	assert.True(t, garbage(12, 31*sec).OK())
}

// A full table forgets the idle entry whose time has come, never one still
// throttled, and a refused insert looks only at the heap's top.
func TestFullTableForgetsOnlyWhatIsDue(t *testing.T) {
	p := testPolicy()
	p.Tables.Accounts = new(uint32(3))
	p.Tables.AccountsPerAddress = new(uint32(3))
	g := mustGate(t, p)
	login := func(acct uint64, src string, at int64, strike bool) Verdict {
		s := mustOpen(t, g, netip.MustParseAddrPort(src), at)
		v := g.Authenticate(s, acct, at)
		if v.OK() && strike {
			g.Check(Message{Session: s, Kind: kMove, Size: 12, Flags: FlagMalformed}, at)
		}
		g.Close(s, at)
		return v
	}
	require.True(t, login(1, "10.0.0.1:1", 0, true).OK())
	require.True(t, login(2, "10.0.0.2:1", 0, false).OK()) // forgettable at once
	require.True(t, login(3, "10.0.0.3:1", 0, true).OK())
	require.True(t, login(4, "10.0.0.4:1", sec, true).OK(), "evicts account 2")
	assert.NotContains(t, g.accounts.m, uint64(2))
	assert.Contains(t, g.accounts.m, uint64(1))
	assert.Contains(t, g.accounts.m, uint64(3))
	v := login(5, "10.0.0.5:1", 2*sec, false)
	assert.Equal(t, TableFull, v.Reason, "every entry still struck")
	assert.Len(t, g.accounts.m, 3)
}

// A player who reconnects as soon as the gate says it may (after each
// refusal's retry-after) and then plays honestly at 20 Hz is never
// disconnected again.
func TestEarliestReadmissionThenHonestPlayIsNotDisconnected(t *testing.T) {
	p := lagPolicy()
	p.Channels[kMove].LagCredit = new(Duration(0)) // the ladder alone
	g := mustGate(t, p)
	s := mustOpen(t, g, addrA, 0)
	mustAuth(t, g, s, 7, 0)
	rec, _ := g.lookup(s).strikeTarget()
	rec.add(g.ladder.rung[StageDisconnect], g.ladder.ceiling, 0)
	require.Equal(t, Disconnect, g.Check(Message{Session: s, Kind: kMove, Size: 12}, 0).Action)
	g.Close(s, 0)

	at, disconnects, refusals := int64(0), 0, 0
	for at < 60*sec {
		s = mustOpen(t, g, addrA, at)
		if v := g.Authenticate(s, 7, at); !v.OK() {
			refusals++
			g.Close(s, at)
			at += max(int64(v.RetryAfter), ms)
			continue
		}
		for ; at < 60*sec; at += 50 * ms {
			if g.Check(Message{Session: s, Kind: kMove, Size: 12}, at).Action == Disconnect {
				disconnects++
				break
			}
		}
		g.Close(s, at)
		at += 50 * ms
	}
	assert.Zero(t, disconnects, "after %d refusals", refusals)
	assert.Equal(t, 1, refusals, "one refusal, whose retry-after is the whole wait")
}

// The new policy fields decode, default and validate with their paths.
func TestLagCreditAndAccountsPerAddressPolicy(t *testing.T) {
	p, err := DecodePolicyYAML([]byte(`
channels:
  - {name: move, class: input, lagCredit: 2s}
  - {name: look, class: input}
  - {name: chat, class: request}
tables: {accounts: 500, accountsPerAddress: 7}
`))
	require.NoError(t, err)
	n := p.Normalized()
	require.NoError(t, n.Validate())
	assert.Equal(t, Duration(2*time.Second), *n.Channels[0].LagCredit)
	assert.Equal(t, Duration(5*time.Second), *n.Channels[1].LagCredit, "the default for input channels")
	assert.Nil(t, n.Channels[2].LagCredit, "none for requests")
	assert.Equal(t, uint32(7), *n.Tables.AccountsPerAddress)
	d0 := Policy{Tables: Tables{Accounts: new(uint32(2000))}}
	d := d0.Normalized()
	assert.Equal(t, uint32(20), *d.Tables.AccountsPerAddress, "accounts ÷ 100")

	for _, tc := range []struct{ doc, path string }{
		{"channels: [{name: m, class: input, lagCredit: -1s}]", "channels[0].lagCredit"},
		{"channels: [{name: m, class: input, lagCredit: 2h}]", "channels[0].lagCredit"},
		{"channels: [{name: c, class: request, lagCredit: 1s}]", "channels[0].lagCredit"},
		{"tables: {accounts: 10, accountsPerAddress: 11}", "tables.accountsPerAddress"},
		{"tables: {accountsPerAddress: 0}", "tables.accountsPerAddress"},
	} {
		p, err := DecodePolicyYAML([]byte(tc.doc))
		if err == nil {
			n := p.Normalized()
			err = n.Validate()
		}
		require.Error(t, err, tc.doc)
		assert.Contains(t, err.Error(), tc.path, tc.doc)
	}
}
