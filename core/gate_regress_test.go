package core

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The take that starts a lockout says when to retry: the hold as stored,
// whose deadline is rounded up to a microsecond. A retry then passes, one
// nanosecond earlier it does not.
func TestLimiterLockoutRetryAfterIsTheHold(t *testing.T) {
	l := newLimiter(t, LimiterConfig{Rate: 1, Burst: 1, MaxSoftViolations: 1, LockoutDuration: 30 * time.Second})
	require.True(t, l.TakeAt(7, 1, 1).Allowed)
	d := l.TakeAt(7, 2, 1) // starts the lockout at 2ns
	require.Equal(t, Lockout, d.Reason)
	at := 2 + int64(d.RetryAfter)
	assert.Equal(t, Lockout, l.TakeAt(7, at-1, 1).Reason, "one ns before RetryAfter")
	assert.True(t, l.TakeAt(7, at, 1).Allowed, "at RetryAfter (%v)", d.RetryAfter)
}

// Escalation's window and lockout are checked by Validate even with
// escalation off, naming their own field, not left to NewGate.
func TestPolicyEscalationDurationsValidatedWhenOff(t *testing.T) {
	for _, field := range []string{"escalation.window", "escalation.lockout"} {
		p := testPolicy()
		neg := Duration(-time.Second)
		if field == "escalation.window" {
			p.Escalation.Window = &neg
		} else {
			p.Escalation.Lockout = &neg
		}
		err := p.Validate()
		var pe *PolicyError
		require.True(t, errors.As(err, &pe), "%s: %v", field, err)
		assert.Equal(t, field, pe.Path)
		_, err = NewGate(p, 0)
		assert.Error(t, err)
	}
}

// Default strike weights are held to the same drain bound as written
// ones: a ladder far below them would overflow their nanoseconds.
func TestPolicyDefaultWeightsBoundedByDrain(t *testing.T) {
	p := testPolicy()
	win := Duration(30 * time.Second)
	p.Strikes.Window = &win
	p.Strikes.Ladder = Ladder{Warn: new(1e-12), Shed: new(2e-12), Drop: new(3e-12), Disconnect: new(4e-12), Lockout: new(5e-12)}
	err := p.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "strikes.weights.Malformed")
	assert.Contains(t, err.Error(), "to drain")
}

// After a lockout ends, an account whose score is still at the disconnect
// stage is refused until the score drains below it, and told so: the
// retry-after is that time, not 0.
func TestAuthenticateRefusalSaysWhenTheScoreDrains(t *testing.T) {
	g := mustGate(t, testPolicy()) // window 30s, disconnect 16, lockout rung 32, lockout 60s
	s := mustOpen(t, g, addrA, 0)
	mustAuth(t, g, s, 7, 0)
	for range 16 { // 64 points: the ceiling
		g.Check(Message{Session: s, Kind: kMove, Size: 10, Flags: FlagMalformed}, 0)
	}
	g.Close(s, 0)
	later := int64(60*time.Second) + 1 // the lockout is over
	s2 := mustOpen(t, g, addrA, later)
	v := g.Authenticate(s2, 7, later)
	require.Equal(t, Lockout, v.Reason)
	require.Positive(t, v.RetryAfter)
	at := later + int64(v.RetryAfter)
	s3 := mustOpen(t, g, addrA, at-1)
	assert.Equal(t, Lockout, g.Authenticate(s3, 7, at-1).Reason, "one ns before RetryAfter")
	g.Close(s3, at-1)
	s4 := mustOpen(t, g, addrA, at)
	assert.True(t, g.Authenticate(s4, 7, at).OK(), "at RetryAfter (%v)", v.RetryAfter)
}

// At the shed stage a message's cost is multiplied, but never past the
// burst of a keyed layer it goes through: a request that passes unshed
// still passes (at a cost that layer can hold) instead of being refused
// forever with no time to wait.
func TestShedCostCappedAtKeyedBurst(t *testing.T) {
	p := testPolicy()
	p.Channels[kAsk].Cost = new(uint64(60)) // channel burst 100
	p.Address = Budget{Rate: new(1000.0), Burst: new(90.0)}
	p.Strikes.Weights = map[Reason]float64{Malformed: 10} // one malformed frame: shed
	g := mustGate(t, p)
	s := mustOpen(t, g, addrA, 0)
	v := g.Check(Message{Session: s, Kind: kMove, Size: 10, Flags: FlagMalformed}, 0)
	require.Equal(t, StageShed, v.Stage)
	now := int64(time.Second) // every bucket full again, still at shed
	v = g.Check(Message{Session: s, Kind: kAsk, Size: 10, Request: 1}, now)
	require.Equal(t, StageShed, v.Stage)
	assert.True(t, v.OK(), "shed request: %v", v)
	lv, ok := g.address.levelAt(addrKey(addrA.Addr()), now)
	require.True(t, ok)
	assert.InDelta(t, 0, lv, 1e-9, "charged the address burst (90), not 60×shedFactor")
}

// closingLayer stands in for the account layer: it closes the session
// between the request's admission and the keyed take, then refuses.
type closingLayer struct {
	keyedBuckets
	g   *Gate
	h   Session
	hit bool
}

func (c *closingLayer) takeAt(key uint64, now int64, n uint64) keyedResult {
	if !c.hit {
		c.hit = true
		c.g.Close(c.h, now)
		return keyedResult{reason: AccountLimit}
	}
	return c.keyedBuckets.takeAt(key, now, n)
}

// A request admitted, then refused by a later layer while Close of its
// session runs in between, is released once: by Close, not again by the
// refusal. The account's in-flight count is back to 0 and its cap holds.
func TestCloseDuringCheckReleasesRequestOnce(t *testing.T) {
	g := mustGate(t, testPolicy()) // buy: InFlight 1
	s := mustOpen(t, g, addrA, 0)
	mustAuth(t, g, s, 9, 0)
	acct := g.lookup(s).acct.Load()
	inner := g.account
	g.account = &closingLayer{keyedBuckets: inner, g: g, h: s}
	require.False(t, g.Check(Message{Session: s, Kind: kBuy, Size: 10, Request: 1}, 0).OK())
	g.account = inner
	idx := g.chans[kBuy].inflightIdx
	assert.Equal(t, int32(0), acct.inflight[idx].Load(), "in-flight count after the refused request")

	s2 := mustOpen(t, g, addrA, 0)
	mustAuth(t, g, s2, 9, 0)
	ok := 0
	for id := uint64(1); id <= 3; id++ {
		if g.Check(Message{Session: s2, Kind: kBuy, Size: 10, Request: id}, 0).OK() {
			ok++
		}
	}
	assert.Equal(t, 1, ok, "buys in flight at once with InFlight 1")
}

// Requests admitted on one goroutine while another closes the session:
// whatever the interleaving, every admitted request is released exactly
// once, so the account's in-flight count ends at 0. Run with -race.
func TestCloseRacingAdmissionsLeavesNoInFlight(t *testing.T) {
	p := testPolicy()
	p.Channels[kBuy].InFlight = 1000
	p.Channels[kBuy].Rate, p.Channels[kBuy].Burst = new(1e6), new(1e6)
	p.Strikes.Disabled = true // queue-full and duplicate refusals would lock the account out
	g := mustGate(t, p)
	idx := g.chans[kBuy].inflightIdx
	for round := range 1000 {
		s := mustOpen(t, g, addrA, 0)
		mustAuth(t, g, s, 9, 0)
		acct := g.lookup(s).acct.Load()
		var wg sync.WaitGroup
		for w := range 2 {
			wg.Go(func() {
				for id := uint64(1 + w); id < 200; id += 2 {
					g.Check(Message{Session: s, Kind: kBuy, Size: 10, Request: id}, 0)
				}
			})
		}
		wg.Go(func() {
			for range round % 50 {
				g.Done(s, uint64(round%7+1))
			}
			g.Close(s, 0)
		})
		wg.Wait()
		require.Equal(t, int32(0), acct.inflight[idx].Load(), "round %d: the account's in-flight count after Close", round)
	}
}

// With keyed escalation on, the match layer still never locks out: its key
// is shared, and a lockout (reason Lockout, which earns strikes) would
// escalate every bystander of a match that a few players flood.
func TestMatchDenialsDoNotEscalateBystandersWithKeyedEscalation(t *testing.T) {
	p := testPolicy()
	p.Match = Budget{Rate: new(20.0), Burst: new(20.0)}
	p.Escalation.Violations = new(uint32(5))
	g := mustGate(t, p)
	const match = 9
	var bots []Session
	for i := range 4 {
		s := mustOpen(t, g, addrA, 0)
		mustAuth(t, g, s, uint64(100+i), 0)
		bots = append(bots, s)
	}
	honest := mustOpen(t, g, addrA, 0)
	mustAuth(t, g, honest, 1, 0)
	reasons := map[Reason]int{}
	var last Verdict
	for tick := int64(0); tick < 200; tick++ {
		now := tick * 100 * ms
		for _, b := range bots {
			g.Check(Message{Session: b, Kind: kMove, Size: 10, Match: match}, now)
		}
		if tick%2 == 0 {
			last = g.Check(Message{Session: honest, Kind: kMove, Size: 10, Match: match}, now)
			reasons[last.Reason]++
		}
	}
	assert.Zero(t, reasons[Lockout], "honest verdicts by reason: %v", reasons)
	assert.Positive(t, reasons[MatchLimit], "the match budget does refuse: %v", reasons)
	assert.Equal(t, StageNone, last.Stage, "a bystander earns no strikes for a shared budget")
}

// transport.minCharge 0 validates; an empty frame or read then costs one
// byte token, never an invalid take of 0 that could never pass.
func TestMinChargeZeroChargesOneByte(t *testing.T) {
	p := testPolicy()
	p.Transport.MinCharge = new(uint32(0))
	require.NoError(t, p.Validate())
	g := mustGate(t, p)
	s := mustOpen(t, g, addrA, 0)
	assert.True(t, g.Check(Message{Session: s, Kind: kMove, Size: 0}, 0).OK(), "empty frame")
	assert.True(t, g.Read(s, 0, 0).OK(), "empty read")
}
