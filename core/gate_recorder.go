package core

import (
	"net/netip"
)

// RecordOp says which gate call (or server observation) a GateRecord
// describes.
type RecordOp uint8

// The operations a RecordBuffer carries. Their values are stable.
const (
	// OpOpen: Gate.Open from Addr; the Verdict is Open's (a refused Open has
	// Session 0).
	OpOpen RecordOp = 1 + iota
	// OpAuthenticate: Gate.Authenticate with Account.
	OpAuthenticate
	// OpRead: Gate.Read of Size bytes.
	OpRead
	// OpCheck: Gate.Check of the message (Kind, Size, Request, Match,
	// Flags).
	OpCheck
	// OpDone: Gate.Done of Request. Done has no time of its own: Time is 0
	// and a writer gives it the time of the record before it.
	OpDone
	// OpClose: Gate.Close.
	OpClose
	// OpUnchecked: pushed by a server, not the gate: a frame the server
	// read but did not Check, because the read that carried it was
	// refused (Verdict is the read's) or because the server decides it
	// without the gate (a ping on the server's own bucket).
	OpUnchecked
	// OpLabel: pushed by a server: what the session is (Label) and the
	// group it belongs to (Group, a population name, say).
	OpLabel
)

// GateRecord is one entry of a RecordBuffer: a gate call with its verdict,
// or a server's note about a session. Which fields are set depends on Op
// (see the RecordOp constants). It is a plain value; the zero value is no
// record.
type GateRecord struct {
	Time    int64
	Session Session
	Request uint64
	Account uint64
	Match   uint64
	Addr    netip.AddrPort
	Group   string
	Size    uint32
	Kind    uint16
	Op      RecordOp
	Flags   MessageFlags
	Label   uint8
	Action  Action
	Reason  Reason
	Shadow  bool
}

func (r *GateRecord) setVerdict(v Verdict) {
	r.Action, r.Reason, r.Shadow = v.Action, v.Reason, v.Shadow
}

// WithRecorder makes the gate push a GateRecord for every Open,
// Authenticate, Read, Check, Done and Close, with its verdict, to b. The
// gate never waits for b: a full buffer drops the record and counts it
// (RecordBuffer.Lost). Without it the gate pays one predictable branch per
// call.
func WithRecorder(b *RecordBuffer) GateOption {
	return func(c *gateConfig) { c.rec = b }
}

// Recorder returns the gate's record buffer (WithRecorder), or nil.
func (g *Gate) Recorder() *RecordBuffer { return g.rec }

// Open starts a session for a connection from src. It charges one token
// to src's address bucket and refuses the session (Disconnect) with reason
// Lockout while the address is locked out, ConnLimit when the address
// already holds Connections.PerAddress sessions or PreAuthPerAddress
// unauthenticated ones (checked before the bucket, so such a refusal costs
// the address nothing), AddressLimit when it opens connections too fast, or
// TableFull when no slot or address entry is free (refused even in shadow
// mode: there is nowhere to keep the session).
func (g *Gate) Open(src netip.AddrPort, now int64) (Session, Verdict) {
	h, v := g.open(src, now)
	if g.rec != nil {
		r := GateRecord{Op: OpOpen, Time: now, Session: h, Addr: src}
		r.setVerdict(v)
		g.rec.Push(r)
	}
	return h, v
}

// Authenticate binds an open session to an account. From then on the
// session's messages are charged to the account's bucket and the account's
// channel buckets (shared by all of the account's connections and kept
// after they close, so reconnecting never resets them) instead of the
// address bucket and its own, and its strikes go to the account's record.
// It refuses (Disconnect) with reason Lockout while the account is locked
// out or its strike score is at the shed stage or above, NoSession for a
// session that is not open, Malformed for account 0 (which means "none")
// or a session already bound to another account, ConnLimit when the
// account already has Connections.PerAccount sessions, and TableFull when
// the account cannot be tracked: the table is full of accounts it cannot
// forget, or the session's source address already left
// tables.accountsPerAddress of them behind. A session that stays
// authenticated for Connections.AuthRefundAfter gets back AuthRefund of
// its Open's address token when it closes.
func (g *Gate) Authenticate(h Session, account uint64, now int64) Verdict {
	v := g.authenticate(h, account, now)
	if g.rec != nil {
		r := GateRecord{Op: OpAuthenticate, Time: now, Session: h, Account: account}
		r.setVerdict(v)
		g.rec.Push(r)
	}
	return v
}

// Close ends a session: its buckets and request tables are dropped, its
// pending flood reports are emitted, and the in-flight counts of its
// requests not yet Done are released (a Done arriving later is ignored).
// The account's and address's state (buckets, strikes, lockout) persists.
func (g *Gate) Close(h Session, now int64) {
	g.close(h, now)
	if g.rec != nil {
		g.rec.Push(GateRecord{Op: OpClose, Time: now, Session: h})
	}
}

// Done tells the gate that the handler of an accepted request has finished:
// the request leaves the session's queue and its account's in-flight count,
// and its id enters the session's replay window. Unknown ids are ignored.
// Lock-free; safe to call from any goroutine.
func (g *Gate) Done(h Session, requestID uint64) {
	g.done(h, requestID)
	if g.rec != nil {
		g.rec.Push(GateRecord{Op: OpDone, Session: h, Request: requestID})
	}
}

// Read charges the byte budget for one read of n bytes from the session's
// connection (at least the minimum charge), for servers that read several
// frames at once; they then Check each frame with FlagCharged. A denial
// (ByteLimit) means the whole read is dropped.
func (g *Gate) Read(h Session, n uint32, now int64) Verdict {
	v := g.read(h, n, now)
	if g.rec != nil {
		r := GateRecord{Op: OpRead, Time: now, Session: h, Size: n}
		r.setVerdict(v)
		g.rec.Push(r)
	}
	return v
}

// Check decides one inbound message at now. It never blocks, locks or
// allocates; see Gate for the order of checks.
func (g *Gate) Check(m Message, now int64) Verdict {
	v := g.check(m, now)
	if g.rec != nil {
		g.rec.pushCheck(m, v, now)
	}
	return v
}
