package core

import (
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every keyed layer runs on core.Limiter: a full account table fails
// closed with TableFull (or lets the key through, fail-open), and the
// account layer's escalation reaches the verdict.
func TestGateAccountLayerOnLimiter(t *testing.T) {
	for _, failOpen := range []bool{false, true} {
		p := testPolicy()
		p.Tables.Accounts = new(uint32(1))
		p.Account = Budget{Rate: new(1.0), Burst: new(10.0)}
		if failOpen {
			p.Escalation.TableFull = "allow"
		}
		g := mustGate(t, p)
		for _, k := range []keyedBuckets{g.account, g.address, g.match} {
			_, ok := k.(*limiterKeyed)
			require.True(t, ok)
		}
		var seen bool
		for acct := uint64(1); acct < 5000 && !seen; acct++ {
			// 20 ms apart: the account's ask bucket (100/s) is full again
			// when the next account logs in, so the gate's account table
			// may forget it, while its account bucket (1/s) is not.
			now := int64(acct) * 20 * int64(time.Millisecond)
			s := mustOpen(t, g, netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 9, byte(acct >> 8), byte(acct)}), 1), now)
			mustAuth(t, g, s, acct, now)
			v := g.Check(Message{Session: s, Kind: kAsk, Size: 10, Request: 1}, now) // leaves the account's bucket not full
			if v.Reason == TableFull {
				seen = true
				assert.Equal(t, failOpen, v.OK(), "fail-open passes an untracked key; fail-closed rejects it")
				if !failOpen {
					assert.Equal(t, Reject, v.Action)
				}
			}
			g.Close(s, now)
		}
		if failOpen {
			st := g.Stats()
			assert.Zero(t, st.Count("ask", TableFull), "fail-open passes are not denials")
			assert.False(t, seen)
			rep := g.KeyedReports(0)["account"]
			assert.Positive(t, rep.TableFullPasses, "untracked accounts were let through")
			continue
		}
		assert.True(t, seen, "the account table never filled")
	}

	p := testPolicy()
	p.Account = Budget{Rate: new(1.0), Burst: new(2.0)}
	p.Escalation = Escalation{Violations: new(uint32(3)), Lockout: new(Duration(time.Minute))}
	p.Strikes.Disabled = true
	g := mustGate(t, p)
	s := mustOpen(t, g, addrA, 0)
	mustAuth(t, g, s, 4, 0)
	var last Verdict
	for range 5 {
		last = g.Check(Message{Session: s, Kind: kMove, Size: 10}, 0)
	}
	assert.Equal(t, Lockout, last.Reason, "three violations lock the account key out")
	assert.Equal(t, Drop, last.Action)
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
	for id := uint64(1); id <= 4; id++ {
		// Escalation is on, but a match key is shared: it is never locked
		// out, so every denial stays MatchLimit with the bucket's own wait.
		v := g.Check(Message{Session: s, Kind: kAsk, Size: 10, Match: 3, Request: id}, 0)
		assert.Equal(t, MatchLimit, v.Reason, "violation %d of the match key", id+1)
		assert.Equal(t, Reject, v.Action)
		assert.Equal(t, time.Second, v.RetryAfter, "one token at 1/s")
	}
	assert.True(t, g.Check(Message{Session: s, Kind: kMove, Size: 10, Match: 4}, 0).OK(), "other matches are unaffected")
	assert.True(t, g.Check(Message{Session: s, Kind: kMove, Size: 10, Match: 3}, int64(time.Second)).OK(), "the match passes again once its bucket refills")

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

// WithReproducibleTables lays the keyed tables out the same way whatever
// the machine: the same shard count and the same shard for every key at
// GOMAXPROCS 1 and 8 (where the default shard counts differ), and another
// layout for another seed.
func TestReproducibleTablesIgnoreGOMAXPROCS(t *testing.T) {
	p := testPolicy()
	p.Tables.Addresses = new(uint32(1 << 14)) // 16 shards by default at GOMAXPROCS 1, 32 at 8
	layout := func(procs int, seed uint64) (int, []int) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		g := mustGate(t, p, WithReproducibleTables(seed))
		m := g.address.(*limiterKeyed).l.m
		shards := make([]int, 1000)
		for k := range shards {
			shards[k] = m.ShardOf(uint64(k))
		}
		return m.Shards(), shards
	}
	n1, s1 := layout(1, 7)
	n8, s8 := layout(8, 7)
	require.Equal(t, n1, n8, "shard count")
	require.Equal(t, s1, s8, "shard of each key")
	_, other := layout(1, 8)
	require.NotEqual(t, s1, other, "another seed")
}
