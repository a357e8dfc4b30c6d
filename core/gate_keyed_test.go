package core

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/atomicbucket"
)

func TestFallbackKeyedBoundsAndEviction(t *testing.T) {
	lim, err := atomicbucket.NewLimit(1, 4, 0)
	require.NoError(t, err)
	f := newFallbackKeyed(lim, 1, false) // one key per shard
	// Throttle keys until some shard is full of throttled keys.
	var full uint64
	for k := uint64(1); k < 10_000; k++ {
		r := f.takeAt(k, 0, 1)
		if !r.ok {
			require.Equal(t, TableFull, r.reason)
			full = k
			break
		}
	}
	require.NotZero(t, full, "the table never filled")
	assert.LessOrEqual(t, f.size(), fallbackShards)
	// Once the throttled buckets are full again they may be evicted.
	r := f.takeAt(full, 10*sec, 1)
	assert.True(t, r.ok)
	assert.Equal(t, None, r.reason)
	lvl, ok := f.levelAt(full, 10*sec)
	assert.True(t, ok)
	assert.Equal(t, 3.0, lvl)
	f.sweep(100 * sec)
	assert.Zero(t, f.size(), "a sweep forgets full buckets")

	open := newFallbackKeyed(lim, 1, true)
	for k := uint64(1); k < 10_000; k++ {
		if r := open.takeAt(k, 0, 1); r.reason == TableFull {
			assert.True(t, r.ok, "fail-open lets an untracked key through")
			return
		}
	}
	t.Fatal("the table never filled")
}

// The match layer runs on core.Limiter: its escalation settings and its
// fail-open mode reach the gate's verdicts.
func TestGateMatchLayerOnLimiter(t *testing.T) {
	p := testPolicy()
	p.Match = Budget{Rate: new(1.0), Burst: new(2.0)}
	p.Escalation = Escalation{Violations: new(uint32(2)), Lockout: new(Duration(time.Minute))}
	p.Strikes.Disabled = true
	g := mustGate(t, p)
	_, isLimiter := g.match.(*limiterKeyed)
	require.True(t, isLimiter)
	s := mustOpen(t, g, addrA, 0)
	for range 2 {
		require.True(t, g.Check(Message{Session: s, Kind: kMove, Size: 10, Match: 3}, 0).OK())
	}
	assert.Equal(t, MatchLimit, g.Check(Message{Session: s, Kind: kMove, Size: 10, Match: 3}, 0).Reason)
	v := g.Check(Message{Session: s, Kind: kAsk, Size: 10, Match: 3, Request: 1}, 0)
	assert.Equal(t, Lockout, v.Reason, "the second violation locks the match key out")
	assert.Equal(t, Reject, v.Action)
	assert.Equal(t, time.Minute, v.RetryAfter)
	assert.True(t, g.Check(Message{Session: s, Kind: kMove, Size: 10, Match: 4}, 0).OK(), "other matches are unaffected")

	q := testPolicy()
	q.Tables.Matches = new(uint32(1))
	q.Match = Budget{Rate: new(1.0), Burst: new(10.0)}
	q.Escalation.TableFull = "allow"
	g = mustGate(t, q)
	s = mustOpen(t, g, addrA, 0)
	for id := uint64(1); id < 1000; id++ {
		v := g.Check(Message{Session: s, Kind: kAsk, Size: 10, Match: id, Request: id}, int64(id)*10*ms)
		require.True(t, v.OK(), "fail-open: an untracked match passes (id %d)", id)
		g.Done(s, id)
	}
}

func TestAddrKey(t *testing.T) {
	a := addrKey(netip.MustParseAddr("192.0.2.1"))
	assert.Equal(t, a, addrKey(netip.MustParseAddr("::ffff:192.0.2.1")), "IPv4-mapped is the IPv4 key")
	assert.NotEqual(t, a, addrKey(netip.MustParseAddr("192.0.2.2")))
	assert.Equal(t, addrKey(netip.MustParseAddr("2001:db8:1:2::1")), addrKey(netip.MustParseAddr("2001:db8:1:2:ffff::9")), "one /64, one key")
	assert.NotEqual(t, addrKey(netip.MustParseAddr("2001:db8:1:2::1")), addrKey(netip.MustParseAddr("2001:db8:1:3::1")))
}
