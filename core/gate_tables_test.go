package core

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tables reports each table's occupancy and bound, and the lockouts held
// in the entity tables, as the gate's own bookkeeping has them.
func TestGateTables(t *testing.T) {
	p := testPolicy()
	p.Tables.Sessions = new(uint32(8))
	p.Tables.Accounts = new(uint32(4))
	g := mustGate(t, p)
	a := mustOpen(t, g, addrA, 0)
	mustAuth(t, g, a, 7, 0)
	mustOpen(t, g, netip.MustParseAddrPort("192.0.2.2:1"), 0)
	byName := func(now int64) map[string]TableStats {
		m := map[string]TableStats{}
		for _, s := range g.Tables(now) {
			m[s.Name] = s
		}
		return m
	}
	m := byName(0)
	assert.Equal(t, TableStats{Name: "sessions", Tracked: 2, Capacity: 8}, m["sessions"])
	assert.Equal(t, TableStats{Name: "accounts", Tracked: 1, Capacity: 4}, m["accounts"])
	assert.Equal(t, 2, m["addresses"].Tracked)
	for _, name := range []string{"account_buckets", "address_buckets", "match_buckets"} {
		assert.Contains(t, m, name)
	}
	assert.Equal(t, 2, m["address_buckets"].Tracked, "each Open took from its address's bucket")

	// Oversize frames earn strikes until the account is locked out.
	for i := 0; i < 1000 && g.Stats().Lockouts == 0; i++ {
		g.Check(Message{Session: a, Kind: kMove, Size: 1 << 12}, 1)
	}
	require.Equal(t, uint64(1), g.Stats().Lockouts)
	assert.Equal(t, 1, byName(2)["accounts"].ActiveLockouts)
	assert.Equal(t, 0, byName(2)["addresses"].ActiveLockouts, "an authenticated session's strikes go to its account")
}

// SessionSource names an open session's source as the gate keys it: an
// IPv4 address whole, an IPv6 address by its /64; nothing once closed.
func TestGateSessionSource(t *testing.T) {
	g := mustGate(t, testPolicy())
	v4 := mustOpen(t, g, netip.MustParseAddrPort("203.0.113.9:5000"), 0)
	v6 := mustOpen(t, g, netip.MustParseAddrPort("[2001:db8:1:2:3:4:5:6]:5000"), 0)
	mapped := mustOpen(t, g, netip.MustParseAddrPort("[::ffff:198.51.100.7]:5000"), 0)
	for h, want := range map[Session]string{v4: "203.0.113.9/32", v6: "2001:db8:1:2::/64", mapped: "198.51.100.7/32"} {
		got, ok := g.SessionSource(h)
		require.True(t, ok)
		assert.Equal(t, want, got.String())
	}
	g.Close(v4, 0)
	_, ok := g.SessionSource(v4)
	assert.False(t, ok)
	_, ok = g.SessionSource(0)
	assert.False(t, ok)
}
