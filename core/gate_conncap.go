package core

import (
	"fmt"
	"math"
	"time"
)

// Connections caps what one source address or one account may hold of the
// gate's session slots, so that no single host or identity can take every
// slot, and says what a handshake costs the address bucket. Every cap is
// checked when a session is opened (Open, by address) or bound to an
// account (Authenticate, by account); a refusal is a Disconnect with reason
// ConnLimit, and it takes no token from any bucket, so a host at its cap
// does not spend the budget of the neighbours behind the same address.
//
// The zero value takes every default. A Connections is plain data; the
// Gate keeps its own copy.
type Connections struct {
	// PerAddress is the most sessions open at once from one source
	// address, authenticated or not; default 256. A NAT or a LAN party
	// puts many honest players behind one address, so it is generous; it
	// is there so that one address cannot hold every slot.
	PerAddress *uint32 `yaml:"perAddress,omitempty" json:"perAddress,omitempty"`
	// PreAuthPerAddress is the most sessions from one source address that
	// have not authenticated yet; default 32. An honest client sends its
	// Hello at once, so few of a crowd's sessions are ever unauthenticated
	// together; a host that opens connections and never says Hello holds
	// at most this many slots, however often it reopens them.
	PreAuthPerAddress *uint32 `yaml:"preAuthPerAddress,omitempty" json:"preAuthPerAddress,omitempty"`
	// PerAccount is the most sessions bound to one account at once;
	// default 16 (a player with a few devices and a reconnect racing the
	// old connection's close).
	PerAccount *uint32 `yaml:"perAccount,omitempty" json:"perAccount,omitempty"`
	// AuthRefund is the share of its Open's address token a session gets
	// back, in [0, 1], once it has authenticated and stayed so for
	// AuthRefundAfter (paid when it closes); default 0.5. A handshake that
	// authenticates and plays then costs the address bucket 1 − AuthRefund
	// tokens, one that fails, is abandoned or is churned away at once a
	// whole token, so a host churning handshakes behind a NAT spends the
	// shared budget faster than the honest players beside it. Refunds are
	// paid in whole tokens as each address's shares add up. The refund
	// waits, and is not 1 by default, so that a client churning fresh
	// accounts from one address (each handshake authenticating) is still
	// held to a login rate by the address bucket.
	AuthRefund *float64 `yaml:"authRefund,omitempty" json:"authRefund,omitempty"`
	// AuthRefundAfter is how long a session must have been authenticated
	// when it closes to earn AuthRefund; default 1s.
	AuthRefundAfter *Duration `yaml:"authRefundAfter,omitempty" json:"authRefundAfter,omitempty"`
}

// Defaults of Connections (documented on the fields).
const (
	dfltConnsPerAddress = 256
	dfltPreAuthPerAddr  = 32
	dfltConnsPerAccount = 16
	dfltAuthRefund      = 0.5
	dfltAuthRefundAfter = time.Second
)

func (c *Connections) normalize() {
	orDefault(&c.PerAddress, dfltConnsPerAddress)
	orDefault(&c.PreAuthPerAddress, dfltPreAuthPerAddr)
	orDefault(&c.PerAccount, dfltConnsPerAccount)
	orDefault(&c.AuthRefund, dfltAuthRefund)
	orDefault(&c.AuthRefundAfter, Duration(dfltAuthRefundAfter))
}

func (c *Connections) validate(v *validator) {
	for _, f := range []struct {
		path string
		n    uint32
	}{
		{"connections.perAddress", *c.PerAddress},
		{"connections.preAuthPerAddress", *c.PreAuthPerAddress},
		{"connections.perAccount", *c.PerAccount},
	} {
		if f.n < 1 || f.n > maxSessions {
			v.add(f.path, fmt.Sprintf("%d must be between 1 and %d", f.n, maxSessions))
		}
	}
	if r := *c.AuthRefund; math.IsNaN(r) || r < 0 || r > 1 {
		v.add("connections.authRefund", fmt.Sprintf("%v must be between 0 and 1", r))
	}
	if *c.AuthRefundAfter < 0 {
		v.add("connections.authRefundAfter", "must not be negative")
	}
}

func (c Connections) clone() Connections {
	c.PerAddress, c.PreAuthPerAddress, c.PerAccount, c.AuthRefund, c.AuthRefundAfter = cp(c.PerAddress), cp(c.PreAuthPerAddress), cp(c.PerAccount), cp(c.AuthRefund), cp(c.AuthRefundAfter)
	return c
}

// connCaps is the compiled form of Connections.
type connCaps struct {
	perAddress, preAuth, perAccount int
	refund                          float64
	refundAfter                     int64
}

func newConnCaps(c *Connections) connCaps {
	return connCaps{
		perAddress:  int(*c.PerAddress),
		preAuth:     int(*c.PreAuthPerAddress),
		perAccount:  int(*c.PerAccount),
		refund:      *c.AuthRefund,
		refundAfter: int64(*c.AuthRefundAfter),
	}
}

// entityConns is what an address entity counts of its sessions beyond its
// references: those not yet bound to an account, and the refund shares its
// authenticated handshakes have earned and not yet been paid. Guarded by
// the gate's mutex.
type entityConns struct {
	preAuth int
	credit  float64
}

// openCapped reports whether opening one more session from the address of
// ent, already acquired for it (ent.refs counts it), would break a cap.
// Called with the gate's mutex held.
func (g *Gate) openCapped(ent *entity) bool {
	return ent.refs > g.caps.perAddress || ent.conns.preAuth >= g.caps.preAuth
}

// opened counts an admitted session as unauthenticated at its address.
// Called with the gate's mutex held.
func (g *Gate) opened(ent *entity) { ent.conns.preAuth++ }

// authCapped reports whether binding one more session to the account of
// ent, already acquired for it, would break the per-account cap. Called
// with the gate's mutex held.
func (g *Gate) authCapped(ent *entity) bool { return ent.refs > g.caps.perAccount }

// bound notes that s has just been bound to an account: it no longer
// counts as unauthenticated at its address and, when it authenticated (not
// a shadow-mode pass of a refusal), the time, from which its refund is
// due. Called with the gate's mutex held, once per session (s.acct was nil
// before).
func (g *Gate) bound(s *session, authenticated bool, now int64) {
	s.addr.conns.preAuth--
	if authenticated {
		s.authed, s.authedAt = true, now
	}
}

// closing settles a closing session's place at its address: one that was
// never bound to an account leaves the unauthenticated count, and one that
// stayed authenticated for AuthRefundAfter earns its address its refund
// share of the token its Open took, paid in whole tokens. Called with the
// gate's mutex held.
func (g *Gate) closing(s *session, now int64) {
	a := s.addr
	if s.acct.Load() == nil {
		a.conns.preAuth--
	}
	if !s.authed || now-s.authedAt < g.caps.refundAfter || !s.openCharged || g.address == nil || g.caps.refund == 0 {
		return
	}
	a.conns.credit += g.caps.refund
	if a.conns.credit >= 1 {
		a.conns.credit--
		g.address.refundAt(s.addrKey, now, 1)
	}
}
