package core

import (
	"errors"
	"net/netip"
	"sync/atomic"
	"unsafe"
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

// RecordBuffer is a bounded, lock-free, multi-producer single-consumer
// queue of GateRecords: the gate pushes a record for every call it
// decides (see WithRecorder), a server may push its own (OpUnchecked,
// OpLabel), and one goroutine drains them (package trace writes them to a
// file). A push never blocks and never allocates: when the buffer is full
// the record is dropped and counted (Lost), so a slow disk costs records,
// never a stalled message.
//
// It is Vyukov's bounded queue: each slot carries a sequence number that
// says whether it is free for the producer at a position or filled for the
// consumer; a producer claims a position with one CompareAndSwap on the
// tail and publishes the slot with a store of its sequence. The atomic
// store and load of the sequence order the slot's plain fields between
// producer and consumer.
//
// Make one with NewRecordBuffer; the zero value is not usable. Push is
// safe for concurrent use; Drain must be called by one goroutine at a
// time.
type RecordBuffer struct {
	_     [cacheLinePad]byte
	tail  atomic.Uint64
	_     [cacheLinePad]byte
	lost  atomic.Uint64
	_     [cacheLinePad]byte
	head  uint64 // the consumer's alone
	mask  uint64
	slots []recordSlot
}

type recordSlot struct {
	seq atomic.Uint64
	rec GateRecord
	_   [128 - (8+unsafe.Sizeof(GateRecord{}))%128]byte // whole cache lines: neighbouring slots' producers do not share one
}

// ErrRecordBufferSize is returned by NewRecordBuffer for a size that is not
// a power of two in [2, 1<<24].
var ErrRecordBufferSize = errors.New("core: record buffer size must be a power of two in [2, 16777216]")

// NewRecordBuffer returns an empty buffer of size slots (a power of two).
func NewRecordBuffer(size int) (*RecordBuffer, error) {
	if size < 2 || size > 1<<24 || size&(size-1) != 0 {
		return nil, ErrRecordBufferSize
	}
	b := &RecordBuffer{mask: uint64(size - 1), slots: make([]recordSlot, size)}
	for i := range b.slots {
		b.slots[i].seq.Store(uint64(i))
	}
	return b, nil
}

// Push adds r, or counts it lost when the buffer is full. It reports
// whether r was kept.
func (b *RecordBuffer) Push(r GateRecord) bool {
	slot, pos := b.claim()
	if slot == nil {
		return false
	}
	slot.rec = r
	slot.seq.Store(pos + 1) // publish: the consumer reads rec after seeing this
	return true
}

// claim takes the next position for a producer, who then fills the slot
// and publishes it by storing pos+1 in its seq; nil (and a lost record
// counted) when the buffer is full.
func (b *RecordBuffer) claim() (*recordSlot, uint64) {
	pos := b.tail.Load()
	for {
		slot := &b.slots[pos&b.mask]
		seq := slot.seq.Load()
		switch d := int64(seq - pos); {
		case d == 0:
			if b.tail.CompareAndSwap(pos, pos+1) {
				return slot, pos
			}
			pos = b.tail.Load()
		case d < 0: // the slot still holds the record of a lap ago: full
			b.lost.Add(1)
			return nil, 0
		default: // another producer took pos
			pos = b.tail.Load()
		}
	}
}

// Drain appends to dst the records published so far, in the order their
// positions were claimed, and returns it. It stops at the first position
// whose producer has claimed it but not yet published it.
func (b *RecordBuffer) Drain(dst []GateRecord) []GateRecord {
	for {
		slot := &b.slots[b.head&b.mask]
		if slot.seq.Load() != b.head+1 {
			return dst
		}
		dst = append(dst, slot.rec)
		if slot.rec.Group != "" {
			slot.rec.Group = "" // for the GC; every other field a producer overwrites
		}
		slot.seq.Store(b.head + b.mask + 1)
		b.head++
	}
}

// Lost returns how many records were dropped because the buffer was full.
func (b *RecordBuffer) Lost() uint64 { return b.lost.Load() }

// Cap returns the buffer's size in records.
func (b *RecordBuffer) Cap() int { return len(b.slots) }

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

// pushCheck is Push of a Check's record, written straight into its slot.
func (b *RecordBuffer) pushCheck(m Message, v Verdict, now int64) {
	slot, pos := b.claim()
	if slot == nil {
		return
	}
	slot.rec = GateRecord{
		Op: OpCheck, Time: now, Session: m.Session, Request: m.Request, Match: m.Match,
		Size: m.Size, Kind: m.Kind, Flags: m.Flags,
		Action: v.Action, Reason: v.Reason, Shadow: v.Shadow,
	}
	slot.seq.Store(pos + 1)
}
