package core

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// srcPort is addrA's host at another source port: the same address key.
func srcPort(port uint16) netip.AddrPort { return netip.AddrPortFrom(addrA.Addr(), port) }

var addrOther = netip.MustParseAddrPort("198.51.100.7:4000")

func capPolicy(perAddr, preAuth, perAcct uint32) Policy {
	p := testPolicy()
	p.Connections = Connections{PerAddress: new(perAddr), PreAuthPerAddress: new(preAuth), PerAccount: new(perAcct)}
	return p
}

// One address holds at most PerAddress sessions, authenticated or not; the
// refusal is a Disconnect with reason ConnLimit, counted, and takes no
// token from the address bucket; other addresses are not affected and a
// close frees the place.
func TestGateConnCapPerAddress(t *testing.T) {
	p := capPolicy(3, 8, 16)
	p.Address = Budget{Rate: new(0.001), Burst: new(4.0)} // no refill within the test
	g := mustGate(t, p)
	var held []Session
	for i := range 3 {
		s := mustOpen(t, g, srcPort(uint16(5000+i)), 0)
		mustAuth(t, g, s, uint64(100+i), 0)
		held = append(held, s)
	}
	for i := range 10 {
		s, v := g.Open(srcPort(uint16(6000+i)), 0)
		assert.Zero(t, s)
		assert.Equal(t, Verdict{Action: Disconnect, Reason: ConnLimit}, v)
	}
	st := g.Stats()
	assert.Equal(t, uint64(10), st.Count("(session)", ConnLimit))
	mustOpen(t, g, addrOther, 0)
	g.Close(held[0], 0)
	// The ten refusals took nothing: the fourth token is still there.
	s := mustOpen(t, g, srcPort(7000), 0)
	mustAuth(t, g, s, 200, 0)
	_, v := g.Open(srcPort(7001), 0)
	assert.Equal(t, ConnLimit, v.Reason)
}

// A host that never says Hello holds at most PreAuthPerAddress slots,
// however often it reopens: the count is of sessions not yet bound to an
// account, and a session leaves it when it authenticates or closes.
func TestGateConnCapPreAuth(t *testing.T) {
	g := mustGate(t, capPolicy(100, 2, 16))
	a := mustOpen(t, g, srcPort(1), 0)
	b := mustOpen(t, g, srcPort(2), 0)
	for round := range 5 { // reopening does not get past the cap
		_, v := g.Open(srcPort(uint16(10+round)), int64(round)*sec)
		assert.Equal(t, Verdict{Action: Disconnect, Reason: ConnLimit}, v, "round %d", round)
		g.Close(b, int64(round)*sec)
		b = mustOpen(t, g, srcPort(uint16(20+round)), int64(round)*sec)
	}
	mustAuth(t, g, a, 1, 5*sec) // a is authenticated now: one pre-auth place is free
	c := mustOpen(t, g, srcPort(3), 5*sec)
	_, v := g.Open(srcPort(4), 5*sec)
	assert.Equal(t, ConnLimit, v.Reason)
	g.Close(a, 5*sec) // closing an authenticated session frees no pre-auth place
	_, v = g.Open(srcPort(5), 5*sec)
	assert.Equal(t, ConnLimit, v.Reason)
	g.Close(c, 5*sec)
	mustOpen(t, g, srcPort(6), 5*sec)
	// Another address has places of its own.
	mustOpen(t, g, addrOther, 5*sec)
}

// One account is bound to at most PerAccount sessions; the refusal comes
// from Authenticate, with reason ConnLimit, and a close frees the place.
func TestGateConnCapPerAccount(t *testing.T) {
	g := mustGate(t, capPolicy(100, 100, 2))
	s1 := mustOpen(t, g, srcPort(1), 0)
	s2 := mustOpen(t, g, srcPort(2), 0)
	s3 := mustOpen(t, g, srcPort(3), 0)
	mustAuth(t, g, s1, 7, 0)
	mustAuth(t, g, s2, 7, 0)
	assert.Equal(t, Verdict{Action: Disconnect, Reason: ConnLimit}, g.Authenticate(s3, 7, 0))
	st := g.Stats()
	assert.Equal(t, uint64(1), st.Count("(session)", ConnLimit))
	mustAuth(t, g, s3, 8, 0) // another account: its own places
	g.Close(s1, sec)
	s4 := mustOpen(t, g, srcPort(4), sec)
	mustAuth(t, g, s4, 7, sec)
}

// In shadow mode a capped session is admitted, saying what would have been
// refused.
func TestGateConnCapShadow(t *testing.T) {
	p := capPolicy(1, 1, 1)
	p.Shadow = true
	g := mustGate(t, p)
	a := mustOpen(t, g, srcPort(1), 0)
	b, v := g.Open(srcPort(2), 0)
	require.NotZero(t, b)
	assert.Equal(t, Verdict{Reason: ConnLimit, Shadow: true}, v)
	mustAuth(t, g, a, 9, 0)
	v = g.Authenticate(b, 9, 0)
	assert.Equal(t, Verdict{Reason: ConnLimit, Shadow: true}, v)
	g.Close(a, 0)
	g.Close(b, 0)
	mustOpen(t, g, srcPort(3), 0) // the counts came back down
}

// A handshake that authenticates and stays so for AuthRefundAfter costs
// the address bucket 1 − AuthRefund tokens; one that is abandoned, or
// churned away sooner, costs a whole token. With a burst of 4 and no
// refill to speak of: 4 abandoned handshakes, 7 authenticated ones at a
// refund of one half (the shares are paid in whole tokens: 4, 3, 3, 2, 2,
// 1, 1, 0 tokens before each Open), and any number at a refund of 1.
func TestGateAuthRefund(t *testing.T) {
	handshakes := func(refund float64, auth bool, lives int64) int {
		p := testPolicy()
		p.Address = Budget{Rate: new(1e-5), Burst: new(4.0)}
		p.Connections.AuthRefund = new(refund)
		g := mustGate(t, p)
		now := int64(0)
		for n := range 50 {
			s, v := g.Open(srcPort(uint16(n+1)), now)
			if v.Action != Accept {
				require.Equal(t, AddressLimit, v.Reason)
				return n
			}
			if auth {
				mustAuth(t, g, s, uint64(n+1), now)
			}
			now += lives
			g.Close(s, now)
		}
		return 50
	}
	assert.Equal(t, 4, handshakes(0.5, false, 2*sec))
	assert.Equal(t, 7, handshakes(0.5, true, 2*sec))
	assert.Equal(t, 7, handshakes(0.5, true, sec), "AuthRefundAfter (1s) is enough")
	assert.Equal(t, 4, handshakes(0.5, true, sec-1), "a session churned away sooner earns nothing")
	assert.Equal(t, 4, handshakes(0, true, 2*sec))
	assert.Equal(t, 50, handshakes(1, true, 2*sec))
	// A handshake refused at Authenticate (here: the account is at its
	// cap) earns no refund.
	p := capPolicy(100, 100, 1)
	p.Address = Budget{Rate: new(1e-5), Burst: new(4.0)}
	p.Connections.AuthRefund = new(1.0)
	g := mustGate(t, p)
	first := mustOpen(t, g, srcPort(1), 0)
	mustAuth(t, g, first, 5, 0) // holds the account: 3 tokens left
	n := 0
	for ; n < 10; n++ {
		s, v := g.Open(srcPort(uint16(100+n)), int64(n)*2*sec)
		if v.Action != Accept {
			break
		}
		assert.Equal(t, ConnLimit, g.Authenticate(s, 5, int64(n)*2*sec).Reason)
		g.Close(s, int64(n+1)*2*sec)
	}
	assert.Equal(t, 3, n)
}

func TestConnectionsValidation(t *testing.T) {
	cases := []struct {
		c    Connections
		path string
	}{
		{Connections{PerAddress: new(uint32(0))}, "connections.perAddress"},
		{Connections{PerAddress: new(uint32(maxSessions + 1))}, "connections.perAddress"},
		{Connections{PreAuthPerAddress: new(uint32(0))}, "connections.preAuthPerAddress"},
		{Connections{PerAccount: new(uint32(0))}, "connections.perAccount"},
		{Connections{AuthRefund: new(-0.1)}, "connections.authRefund"},
		{Connections{AuthRefund: new(1.5)}, "connections.authRefund"},
		{Connections{AuthRefundAfter: new(Duration(-1))}, "connections.authRefundAfter"},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			p := testPolicy()
			p.Connections = tc.c
			err := p.Validate()
			require.Error(t, err)
			require.True(t, errors.Is(err, ErrPolicy))
			var pe *PolicyError
			require.True(t, errors.As(err, &pe))
			assert.Equal(t, tc.path, pe.Path)
		})
	}
	// NaN, from JSON it cannot come, but a literal can.
	p := testPolicy()
	nan := 0.0
	nan /= nan
	p.Connections.AuthRefund = &nan
	require.ErrorContains(t, p.Validate(), "connections.authRefund")

	// Decoded: the line is named, and an unknown field is refused.
	doc := "connections:\n  perAddress: 0\n"
	_, err := DecodePolicyYAML([]byte(doc))
	if err == nil {
		var q Policy
		q, err = DecodePolicyYAML([]byte(doc))
		require.NoError(t, err)
		err = q.Validate()
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "connections.perAddress (line 2)")
	_, err = DecodePolicyYAML([]byte("connections:\n  perAdress: 3\n"))
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "perAddress"), fmt.Sprint(err))

	// The defaults.
	q := testPolicy()
	q.Normalize()
	assert.Equal(t, uint32(256), *q.Connections.PerAddress)
	assert.Equal(t, uint32(32), *q.Connections.PreAuthPerAddress)
	assert.Equal(t, uint32(16), *q.Connections.PerAccount)
	assert.Equal(t, 0.5, *q.Connections.AuthRefund)
	assert.Equal(t, Duration(time.Second), *q.Connections.AuthRefundAfter)
}
