package core

import (
	"math"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedev/sluice/atomicbucket"
	"github.com/sluicedev/sluice/internal/timesat"
)

// Gate is the layered rate limiter a server calls once per inbound message.
// For every message it checks, in order: frame size and format; the
// session (a message for a session that is not open is dropped before any
// state exists); the strike stage and the transaction-lock hook; the
// connection's transport budgets (bytes, with a minimum charge per read,
// and frames); duplicate and replayed request ids, the connection's queue
// caps and the account's in-flight cap; and then the address (before
// authentication) or account bucket, the channel's bucket (the session's
// before authentication, the account's after, so that reconnecting never
// resets it) and the match bucket, all or nothing: when a layer denies, every token the message took
// from earlier layers is given back, so a denied message leaves every
// bucket as it was. Passing the gate is never permission: the server's own
// validation and authorization run after it.
//
// Denials earn weighted strikes that decay over a window and escalate along
// the ladder warn, shed, drop, disconnect, lockout, except the overflow of
// an input channel's flush after a silence, within the lag credit that
// silence earned (see lagWords and Channel.LagCredit). In shadow mode the gate
// decides, keeps its state and counts exactly as if it enforced, but every
// Verdict's Action is Accept.
//
// Make one with NewGate; the zero value is not usable. A Gate is safe for
// concurrent use. Check, Read and Done never allocate and take no lock for
// an open session: sessions live in a fixed table indexed by their handle,
// and the keyed layers are lock-free for keys already tracked (the first
// message of a new account or match inserts its key, locking one shard of
// that layer's table once). A denial writes only the session's own state,
// its account's strike record (or, for a drop the lag credit forgives,
// the credit word of the channel instead), the tokens it gives back and
// striped counters (and, with keyed escalation on, the refused key's
// escalation mark). Open, Authenticate, Close and Step take a mutex. Time is only
// ever the now passed in (nanoseconds on the server's monotonic clock, one
// clock for all calls).
//
// Check, Done and Close of one session may run on any goroutines: every
// admitted request is released exactly once, whichever of Done, Close or
// the refusal of a later layer comes first, including a request admitted
// while Close of its session runs (see admitRequest).
type Gate struct {
	shadow bool
	chans  []chanSpec

	bytesLim, framesLim     *atomicbucket.Limit
	minCharge               uint64
	maxFrame                uint32
	bytesBurst, framesBurst uint64

	queueCmds  int32
	queueBytes int64
	pendMask   uint64
	replayMask uint64
	shedFactor uint64
	nInflight  int

	ladder  strikeLadder
	caps    connCaps
	account keyedBuckets // nil when the layer is disabled
	address keyedBuckets
	match   keyedBuckets
	locked  func(account uint64) bool
	rec     *RecordBuffer // WithRecorder; nil: no recording

	slots []atomic.Pointer[session]
	high  atomic.Uint32 // slots below this index have been used
	stats gateStats
	obs   observers

	mu        sync.Mutex // Open, Authenticate, Close, Step: the tables below
	free      []uint32
	gens      []uint32
	accounts  entityTable
	addresses entityTable
	lastSweep int64
	policy    Policy
}

// chanSpec is the compiled form of one channel.
type chanSpec struct {
	name        string
	idx         int
	lim         *atomicbucket.Limit
	cost        uint64
	maxCost     uint64 // the most a shed message may be charged: see NewGate
	maxSize     uint32
	inflight    int32 // per-account cap, 0 for none
	inflightIdx int
	class       Class
	out         bool // server-to-client: a client may not send on it
	retry       bool
	// Lag credit (see lagWords): lagCap is the longest silence credited,
	// 0 for none; fillNs the bucket's fill time, burst ÷ rate.
	lagCap      int64
	fillNs      int64
	lagGrain    int64 // fillNs / 16: how often an admission writes the time of the last one
	rate, burst float64
}

// Session is the handle of an open session, returned by Open: the slot
// index in the low 32 bits and the slot's generation in the high 32, so a
// handle outlives its session safely (a message for it is NoSession). The
// zero Session is never open.
type Session uint64

func (s Session) index() uint32 { return uint32(s) }

// Action is what the server does with a message.
type Action uint8

const (
	// Accept: hand the message to the server's validation and handler.
	Accept Action = iota
	// Drop: discard it silently (input, predicted, transport floods).
	Drop
	// Reject: answer the request with Reason and RetryAfter.
	Reject
	// Disconnect: close the connection.
	Disconnect
	numActions
)

var actionNames = [numActions]string{"Accept", "Drop", "Reject", "Disconnect"}

func (a Action) String() string {
	if a < numActions {
		return actionNames[a]
	}
	return "Action(?)"
}

// MarshalText encodes the action name.
func (a Action) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// MessageFlags qualify a Message.
type MessageFlags uint8

const (
	// FlagMalformed: the frame did not decode (the server's decoder says
	// so; the gate never decodes).
	FlagMalformed MessageFlags = 1 << iota
	// FlagCharged: the frame's bytes were already charged for its read by
	// Gate.Read, so Check charges only its frame.
	FlagCharged
)

// Message describes one inbound frame. It is a small value passed by value.
type Message struct {
	Session Session
	// Request is the request id of a request-class message (required for
	// them, 0 otherwise). Any ids may be used: duplicate and replay
	// detection are exact for any ids (ids counting up are the fast path;
	// see gate_requests.go).
	Request uint64
	// Match is the match / room / party id the message is for, 0 for none.
	Match uint64
	// Size is the frame's size in bytes.
	Size uint32
	// Kind is the channel index in the policy.
	Kind  uint16
	Flags MessageFlags
}

// Verdict is the gate's decision on a message or a lifecycle call.
type Verdict struct {
	// RetryAfter is, for a Reject on a channel with retry guidance, how
	// long until the denying layer would accept the message; 0 if unknown.
	RetryAfter time.Duration
	Action     Action
	// Reason is why (None for an accepted message). In shadow mode an
	// Accept may carry the reason it would have been refused for.
	Reason Reason
	// Stage is the strike stage of the session after this message.
	Stage StrikeStage
	// Shadow is true when Action is Accept only because of shadow mode.
	Shadow bool
}

// OK reports whether the message is accepted.
func (v Verdict) OK() bool { return v.Action == Accept }

// String returns e.g. "Accept", "Reject ChannelLimit, retry after 1s" or,
// in shadow mode, "Accept (shadow: ByteLimit)".
func (v Verdict) String() string {
	if v.Reason == None {
		return v.Action.String()
	}
	s := v.Action.String() + " " + v.Reason.String()
	if v.Shadow {
		s = "Accept (shadow: " + v.Reason.String() + ")"
	}
	if v.RetryAfter > 0 {
		s += ", retry after " + v.RetryAfter.String()
	}
	return s
}

// GateOption configures a Gate.
type GateOption func(*gateConfig)

type gateConfig struct {
	locked    func(account uint64) bool
	tableSeed uint64                       // WithReproducibleTables; 0: random secrets, default shards
	layers    map[Reason]KeyedLayerFactory // WithKeyedLayer
	rec       *RecordBuffer                // WithRecorder
}

// WithLockedHook sets the transaction-lock hook: a message from an
// authenticated session whose account's profile is inside a durable
// transaction (f returns true) is refused with reason Locked, before any
// bucket. f runs on the hot path: it must be fast, allocation-free and safe
// for concurrent use.
func WithLockedHook(f func(account uint64) bool) GateOption {
	return func(c *gateConfig) { c.locked = f }
}

// WithReproducibleTables makes the keyed tables (account, address, match)
// place keys the same way on every run and every machine: their hash
// secrets come from seed (not 0) and their shard counts from their sizes
// alone, not GOMAXPROCS. Which keys share a shard decides when a full table
// says TableFull, so a simulation that must give the same results for the
// same seed needs this. Never in production: a client that learns the seed
// can craft keys that collide.
func WithReproducibleTables(seed uint64) GateOption {
	return func(c *gateConfig) { c.tableSeed = seed }
}

// NewGate validates a copy of the policy, fills its defaults, and returns
// a gate whose buckets are anchored at now.
func NewGate(p Policy, now int64, opts ...GateOption) (*Gate, error) {
	var cfg gateConfig
	for _, o := range opts {
		o(&cfg)
	}
	pol := p.Normalized()
	if err := pol.validate(); err != nil {
		return nil, err
	}
	g := &Gate{
		shadow:     pol.Shadow,
		policy:     pol,
		locked:     cfg.locked,
		rec:        cfg.rec,
		minCharge:  max(1, uint64(*pol.Transport.MinCharge)), // a take of 0 tokens is invalid: an empty read costs one byte
		maxFrame:   *pol.Transport.MaxFrame,
		queueCmds:  int32(*pol.Queue.Commands),
		queueBytes: int64(*pol.Queue.PendingBytes),
		shedFactor: *pol.Strikes.ShedFactor,
		ladder:     newStrikeLadder(&pol.Strikes),
		caps:       newConnCaps(&pol.Connections),
	}
	g.pendMask = uint64(pow2(2*int(*pol.Queue.Commands), 8)) - 1
	g.replayMask = uint64(pow2(int(*pol.Queue.ReplayWindow), 1)) - 1
	mk := func(b *Budget) *atomicbucket.Limit {
		l, err := atomicbucket.NewLimit(*b.Rate, *b.Burst, now)
		if err != nil { // validate checked it
			panic(err)
		}
		return l
	}
	g.chans = make([]chanSpec, len(pol.Channels))
	for i := range pol.Channels {
		c := &pol.Channels[i]
		l := mk(&Budget{Rate: c.Rate, Burst: c.Burst})
		cs := chanSpec{
			name: c.Name, idx: i, lim: l, cost: *c.Cost,
			maxCost: uint64(math.Floor(*c.Burst)), maxSize: min(*c.MaxSize, g.maxFrame),
			class: c.Class, out: c.Direction == ServerToClient, retry: *c.RetryAfter,
			inflight: int32(c.InFlight), inflightIdx: -1,
			rate: *c.Rate, burst: *c.Burst, fillNs: int64(math.Ceil(*c.Burst / *c.Rate * 1e9)),
		}
		if c.LagCredit != nil && c.Class == ClassInput {
			cs.lagCap = int64(*c.LagCredit)
			cs.lagGrain = cs.fillNs / 16
		}
		if c.InFlight > 0 {
			cs.inflightIdx = g.nInflight
			g.nInflight++
		}
		g.chans[i] = cs
	}
	if b := &pol.Transport.Bytes; !b.Disabled {
		g.bytesLim = mk(b)
		g.bytesBurst = uint64(*b.Burst)
	}
	if b := &pol.Transport.Frames; !b.Disabled {
		g.framesLim = mk(b)
		g.framesBurst = uint64(*b.Burst)
	}
	keyed := func(b *Budget, path string, maxKeys uint32, reason Reason) (keyedBuckets, error) {
		if b.Disabled {
			return nil, nil
		}
		esc := pol.Escalation
		if reason == MatchLimit {
			// A match key is shared by every player of the match: locking
			// it out would refuse them all, with a reason (Lockout) that
			// earns strikes, for what a few of them did. MatchLimit weighs
			// no strikes for the same reason.
			esc.Violations = new(uint32(0))
		}
		k, err := cfg.newKeyed(b, path, int(maxKeys), &esc, reason, now)
		if err != nil {
			return nil, &PolicyError{Path: path, Line: pol.lines[path].line, Col: pol.lines[path].col, Msg: err.Error(), Err: err}
		}
		return k, nil
	}
	var err error
	if g.account, err = keyed(&pol.Account, "account", *pol.Tables.Accounts, AccountLimit); err != nil {
		return nil, err
	}
	if g.address, err = keyed(&pol.Address, "address", *pol.Tables.Addresses, AddressLimit); err != nil {
		return nil, err
	}
	if g.match, err = keyed(&pol.Match, "match", *pol.Tables.Matches, MatchLimit); err != nil {
		return nil, err
	}
	// The shed stage multiplies a message's cost, but never past the burst
	// of its channel or of a keyed layer it may pass through: a cost no
	// bucket can hold would be refused forever, with no time to wait.
	for _, b := range []*Budget{&pol.Account, &pol.Address, &pol.Match} {
		if b.Disabled {
			continue
		}
		for i := range g.chans {
			c := &g.chans[i]
			c.maxCost = max(c.cost, min(c.maxCost, uint64(math.Floor(*b.Burst))))
		}
	}
	n := int(*pol.Tables.Sessions)
	g.slots = make([]atomic.Pointer[session], n)
	g.gens = make([]uint32, n)
	g.free = make([]uint32, n)
	for i := range g.free {
		g.free[i] = uint32(n - 1 - i) // pop from the end: lowest index first
	}
	g.accounts = newEntityTable(int(*pol.Tables.Accounts), g.nInflight, g.chans, *pol.Tables.AccountsPerAddress)
	g.addresses = newEntityTable(int(*pol.Tables.Addresses), 0, nil, 0)
	g.stats = newGateStats(len(g.chans))
	g.lastSweep = now
	return g, nil
}

func pow2(n, least int) int {
	p := least
	for p < n {
		p <<= 1
	}
	return p
}

// Policy returns a copy of the gate's normalized policy.
func (g *Gate) Policy() Policy { return g.policy.clone() }

// session is one open connection. Its buckets, request tables and flood
// accumulators are written only by its own messages. The struct is padded
// at both ends, and its word tables are carved out of one padded
// allocation (see Open), so that no other session's hot words share its
// cache lines.
type session struct {
	_       [cacheLinePad]byte
	h       Session
	stripe  int
	addrKey uint64
	addr    *entity
	acct    atomic.Pointer[entity] // set once by Authenticate
	account atomic.Uint64

	// openCharged: Open took its token from the address bucket; authed:
	// Authenticate bound it (not only in shadow mode), at authedAt. See
	// Connections.AuthRefund. Guarded by the gate's mutex.
	openCharged, authed bool
	authedAt            int64

	pre         strikeRecord // strikes before authentication
	preInflight []atomic.Int32

	bytes, frames atomic.Uint64
	kinds         []atomic.Uint64 // before authentication; the account's after
	lag           lagWords        // with kinds

	pending     []atomic.Uint64 // request ids in flight, at their home slot or displaced (see gate_requests.go)
	meta        []atomic.Uint64 // what releasing each pending request gives back (see admitRequest); 0 once taken
	closed      atomic.Bool     // set by Close before it releases the pending requests and emits the flood reports
	done        []atomic.Uint64 // completed request ids, direct-mapped by id
	ring        []atomic.Uint64 // the last completed request ids, in completion order
	ringPos     atomic.Uint64
	displaced   atomic.Int32 // pending requests not at their home slot
	spilled     atomic.Bool  // some completed id is only in the ring
	queued      atomic.Int32
	queuedBytes atomic.Int64

	floodDirty atomic.Bool
	floods     [numFloodSlots]floodAcc
	_          [cacheLinePad]byte
}

// cacheLinePad is two 64-byte lines: enough that the adjacent-line
// prefetcher does not pair neighbours either.
const cacheLinePad = 128

// strikeTarget returns the strike record and lock of the session: its
// account's once authenticated (so they persist across connections), its
// own and its source address's before.
func (s *session) strikeTarget() (*strikeRecord, *lockState) {
	if a := s.acct.Load(); a != nil {
		return &a.strikes, &a.lock
	}
	return &s.pre, &s.addr.lock
}

// unqueue gives back a request's place and bytes in the session's queue.
func (s *session) unqueue(size int64) {
	s.queuedBytes.Add(-size)
	s.queued.Add(-1)
}

func (s *session) inflightCounter(idx int, acct bool) *atomic.Int32 {
	if acct {
		return &s.acct.Load().inflight[idx]
	}
	return &s.preInflight[idx]
}

// A pending request's meta word: its size (bits 0–31), channel (32–47),
// whether the account holds its in-flight count (48), a bit always set so
// that a meta word is never 0 (49) and, above, the top bits of its id, so
// that the meta words of two requests in the same slot rarely compare
// equal.
const (
	metaAcct      = 1 << 48
	metaSet       = 1 << 49
	metaTagShift  = 50
	metaKindShift = 32
)

// lookup returns the open session of a handle, or nil. Lock-free: one
// bounds check and one atomic load.
func (g *Gate) lookup(h Session) *session {
	i := h.index()
	if uint64(i) >= uint64(len(g.slots)) {
		return nil
	}
	s := g.slots[i].Load()
	if s == nil || s.h != h {
		return nil
	}
	return s
}

// open is Open without its record (see gate_recorder.go).
func (g *Gate) open(src netip.AddrPort, now int64) (Session, Verdict) {
	key := addrKey(src.Addr())
	row := len(g.chans) + statsRowSession
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.free) == 0 {
		return 0, g.tableFull(row, 0)
	}
	ent := g.addresses.acquire(key, key, now)
	if ent == nil {
		return 0, g.tableFull(row, 0)
	}
	var shadow Verdict // what shadow mode would have refused
	if ent.lock.locked(now) {
		v := g.lifecycleDeny(row, 0, Lockout, ent.lock.remaining(now))
		if !v.OK() {
			g.addresses.release(ent, key, now)
			return 0, v
		}
		shadow = v
	}
	if shadow.Reason == None && g.openCapped(ent) {
		v := g.lifecycleDeny(row, 0, ConnLimit, 0)
		if !v.OK() {
			g.addresses.release(ent, key, now)
			return 0, v
		}
		shadow = v
	}
	charged := false
	if g.address != nil && shadow.Reason == None {
		r := g.address.takeAt(key, now, 1)
		charged = r.ok && r.reason == None // a fail-open TableFull pass took nothing
		if !r.ok {
			v := g.lifecycleDeny(row, 0, r.reason, r.retry)
			if !v.OK() {
				g.addresses.release(ent, key, now)
				return 0, v
			}
			shadow = v
		}
	}
	idx := g.free[len(g.free)-1]
	g.free = g.free[:len(g.free)-1]
	g.gens[idx]++
	if g.gens[idx] == 0 {
		g.gens[idx] = 1
	}
	h := Session(uint64(g.gens[idx])<<32 | uint64(idx))
	s := &session{
		h:           h,
		stripe:      int(idx),
		addrKey:     key,
		addr:        ent,
		openCharged: charged,
		preInflight: make([]atomic.Int32, g.nInflight),
	}
	g.opened(ent)
	nk, np, nd := len(g.chans), int(g.pendMask+1), int(g.replayMask+1)
	words := make([]atomic.Uint64, padWords+3*nk+2*np+2*nd+padWords)[padWords:]
	s.kinds, words = words[:nk:nk], words[nk:]
	s.lag, words = lagWords(words[:2*nk:2*nk]), words[2*nk:]
	s.pending, words = words[:np:np], words[np:]
	s.meta, words = words[:np:np], words[np:]
	s.done, words = words[:nd:nd], words[nd:]
	s.ring = words[:nd:nd]
	s.pre.zeroAt.Store(now)
	for i := range g.chans {
		s.kinds[i].Store(g.chans[i].lim.FullWord(now))
	}
	s.lag.start(now)
	if g.bytesLim != nil {
		s.bytes.Store(g.bytesLim.FullWord(now))
	}
	if g.framesLim != nil {
		s.frames.Store(g.framesLim.FullWord(now))
	}
	g.slots[idx].Store(s)
	if idx >= g.high.Load() {
		g.high.Store(idx + 1)
	}
	if shadow.Reason == None {
		g.count(int(idx), row, None, Accept)
	}
	return h, shadow
}

// authenticate is Authenticate without its record (see gate_recorder.go).
func (g *Gate) authenticate(h Session, account uint64, now int64) Verdict {
	row := len(g.chans) + statsRowSession
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.lookup(h)
	if s == nil {
		return g.lifecycleDeny(row, 0, NoSession, 0)
	}
	if account == 0 {
		return g.lifecycleDeny(row, s.stripe, Malformed, 0)
	}
	if a := s.acct.Load(); a != nil {
		if a.key == account {
			return Verdict{}
		}
		return g.lifecycleDeny(row, s.stripe, Malformed, 0)
	}
	ent := g.accounts.acquire(account, s.addrKey, now)
	if ent == nil {
		return g.tableFull(row, s.stripe)
	}
	if ent.lock.locked(now) || (!g.ladder.disabled && g.ladder.stageOf(ent.strikes.score(now)) >= StageShed) {
		// Refused while locked out, and after that until the score has
		// drained below the shed stage: the wait is until both are over
		// (the score drains one ns per ns, and must fall below the rung).
		// A session admitted at the drop stage would have its first
		// inputs dropped with Lockout strikes, straight back to the
		// disconnect rung; one admitted at the shed stage pays double for
		// every message, which an honest stream at its channel's rate
		// cannot, and climbs back the same way. Below the shed rung the
		// session's costs are its channels' own, so honest play earns
		// nothing more and the score goes on draining.
		retry := ent.lock.remaining(now)
		if over := ent.strikes.score(now) - g.ladder.rung[StageShed]; !g.ladder.disabled && over >= 0 {
			retry = max(retry, time.Duration(over+1))
		}
		v := g.lifecycleDeny(row, s.stripe, Lockout, retry)
		if !v.OK() {
			g.accounts.release(ent, s.addrKey, now)
			return v
		}
		g.bound(s, false, now)
		s.account.Store(account)
		s.acct.Store(ent)
		return v // shadow mode: accepted, saying what it would have refused
	}
	if g.authCapped(ent) {
		v := g.lifecycleDeny(row, s.stripe, ConnLimit, 0)
		if !v.OK() {
			g.accounts.release(ent, s.addrKey, now)
			return v
		}
		g.bound(s, false, now)
		s.account.Store(account)
		s.acct.Store(ent)
		return v // shadow mode
	}
	g.bound(s, true, now)
	s.account.Store(account)
	s.acct.Store(ent)
	g.count(s.stripe, row, None, Accept)
	return Verdict{}
}

// tableFull refuses an Open or Authenticate that has no room to track the
// session, address or account. Even shadow mode cannot admit it.
func (g *Gate) tableFull(row, stripe int) Verdict {
	g.count(stripe, row, TableFull, Disconnect)
	return Verdict{Action: Disconnect, Reason: TableFull}
}

// lifecycleDeny counts a refused Open or Authenticate and returns its
// verdict (Accept in shadow mode).
func (g *Gate) lifecycleDeny(row, stripe int, r Reason, retry time.Duration) Verdict {
	act := Disconnect
	if r == NoSession {
		act = Drop
	}
	g.count(stripe, row, r, act)
	if g.shadow {
		g.stats.stripe(stripe).shadowed.Add(1)
		return Verdict{Reason: r, RetryAfter: retry, Shadow: true}
	}
	return Verdict{Action: act, Reason: r, RetryAfter: retry}
}

// close is Close without its record (see gate_recorder.go).
func (g *Gate) close(h Session, now int64) {
	g.mu.Lock()
	s := g.lookup(h)
	if s == nil {
		g.mu.Unlock()
		return
	}
	idx := h.index()
	g.slots[idx].Store(nil)
	g.free = append(g.free, idx)
	g.closing(s, now)
	g.addresses.release(s.addr, s.addrKey, now)
	if a := s.acct.Load(); a != nil {
		g.accounts.release(a, s.addrKey, now)
	}
	g.mu.Unlock()
	s.closed.Store(true) // before the scan: an admission that misses the flag is seen by the scan
	for i := range s.pending {
		if id := s.pending[i].Load(); id != 0 && g.unpend(s, uint64(i), id) {
			g.takeRelease(s, uint64(i))
		}
	}
	g.flushFloods(s, now)
}

// done is Done without its record (see gate_recorder.go).
func (g *Gate) done(h Session, requestID uint64) {
	s := g.lookup(h)
	if s == nil || requestID == 0 {
		return
	}
	j := g.pendingIndex(s, requestID)
	if j < 0 {
		return
	}
	i := uint64(j)
	g.recordDone(s, requestID) // before the pending slot clears: a duplicate racing Done is caught by one or the other
	if g.unpend(s, i, requestID) {
		g.takeRelease(s, i)
	}
}

// takeRelease releases the request whose pending slot i its caller has
// just cleared, if its meta is there to take: the one Swap that finds it
// owns the release, so a request is released exactly once by Done, Close,
// undo or its own admission (see admitRequest).
func (g *Gate) takeRelease(s *session, i uint64) {
	if meta := s.meta[i].Swap(0); meta != 0 {
		g.release(s, meta)
	}
}

// release gives back what an admitted request holds: its place and bytes
// in the session's queue and its in-flight count.
func (g *Gate) release(s *session, meta uint64) {
	s.unqueue(int64(uint32(meta)))
	if c := &g.chans[uint16(meta>>metaKindShift)]; c.inflightIdx >= 0 {
		s.inflightCounter(c.inflightIdx, meta&metaAcct != 0).Add(-1)
	}
}

// read is Read without its record (see gate_recorder.go).
func (g *Gate) read(h Session, n uint32, now int64) Verdict {
	row := len(g.chans) + statsRowTransport
	s := g.lookup(h)
	if s == nil {
		return g.deny(nil, h, row, nil, NoSession, atomicbucket.Result{}, n, now)
	}
	if g.bytesLim == nil {
		return Verdict{}
	}
	r := g.bytesLim.TakeAt(&s.bytes, now, max(uint64(n), g.minCharge))
	if !r.OK() {
		return g.deny(s, h, row, nil, ByteLimit, r, n, now)
	}
	g.count(s.stripe, row, None, Accept)
	return Verdict{}
}

// held is what a message has taken so far, so a denial can give it back.
type held struct {
	bytes uint64 // bytes charged, 0 for none
	frame bool
	pend  uint64       // pending slot index + 1, 0 for none
	id    uint64       // the request id in that slot
	keyed keyedBuckets // address or account layer
	key   uint64
	kind  *atomic.Uint64 // the channel bucket taken from (the session's or the account's), nil for none
	cost  uint64
}

// undo returns everything held, in reverse order.
func (g *Gate) undo(s *session, c *chanSpec, now int64, h *held) {
	if h.kind != nil {
		c.lim.RefundAt(h.kind, now, h.cost)
	}
	if h.keyed != nil {
		h.keyed.refundAt(h.key, now, h.cost)
	}
	if h.pend != 0 && g.unpend(s, h.pend-1, h.id) { // unless a Close released it
		g.takeRelease(s, h.pend-1)
	}
	if h.frame {
		g.framesLim.RefundAt(&s.frames, now, 1)
	}
	if h.bytes != 0 {
		g.bytesLim.RefundAt(&s.bytes, now, h.bytes)
	}
}

// check is Check without its record (see gate_recorder.go).
func (g *Gate) check(m Message, now int64) Verdict {
	kind := int(m.Kind)
	var c *chanSpec
	reason := None
	if kind < len(g.chans) {
		c = &g.chans[kind]
		switch {
		case m.Size > c.maxSize:
			reason = Oversize
		case m.Flags&FlagMalformed != 0 || c.out || (c.class == ClassRequest && m.Request == 0):
			reason = Malformed
		}
	} else {
		kind = len(g.chans) + statsRowUnknown
		reason = Malformed
		if m.Size > g.maxFrame {
			reason = Oversize
		}
	}
	s := g.lookup(m.Session)
	if s == nil {
		if reason == None {
			reason = NoSession
		}
		return g.deny(nil, m.Session, kind, c, reason, atomicbucket.Result{}, m.Size, now)
	}
	if reason != None {
		return g.deny(s, m.Session, kind, c, reason, atomicbucket.Result{}, m.Size, now)
	}

	// Strike stage and lockout: before any bucket.
	rec, lk := s.strikeTarget()
	if lk.locked(now) {
		return g.denyAs(s, m.Session, kind, c, Lockout, Disconnect, atomicbucket.DeniedFor(lk.remaining(now)), m.Size, now)
	}
	stage := StageNone
	if !g.ladder.disabled {
		stage = g.ladder.stageOf(rec.score(now))
		if stage >= StageDrop {
			return g.denyAs(s, m.Session, kind, c, Lockout, Drop, atomicbucket.Result{}, m.Size, now)
		}
	}
	if g.locked != nil {
		if a := s.account.Load(); a != 0 && g.locked(a) {
			return g.deny(s, m.Session, kind, c, Locked, atomicbucket.Result{}, m.Size, now)
		}
	}

	var h held
	// Transport: bytes (at least the minimum charge), then one frame.
	if g.bytesLim != nil && m.Flags&FlagCharged == 0 {
		n := max(uint64(m.Size), g.minCharge)
		if r := g.bytesLim.TakeAt(&s.bytes, now, n); !r.OK() {
			return g.deny(s, m.Session, kind, c, ByteLimit, r, m.Size, now)
		}
		h.bytes = n
	}
	if g.framesLim != nil {
		if r := g.framesLim.TakeAt(&s.frames, now, 1); !r.OK() {
			g.undo(s, c, now, &h)
			return g.deny(s, m.Session, kind, c, FrameLimit, r, m.Size, now)
		}
		h.frame = true
	}

	// Requests: duplicate, replay, queue caps, in-flight cap.
	if c.class == ClassRequest {
		if r := g.admitRequest(s, c, kind, m, &h); r != None {
			g.undo(s, c, now, &h)
			return g.deny(s, m.Session, kind, c, r, atomicbucket.Result{}, m.Size, now)
		}
	}

	// Address or account, channel, match: all or nothing.
	cost := c.cost
	if stage >= StageShed && g.shedFactor > 1 {
		cost = min(cost*g.shedFactor, c.maxCost)
	}
	h.cost = cost
	acct := s.acct.Load()
	layer, key := g.address, s.addrKey
	if acct != nil {
		layer, key = g.account, s.account.Load()
	}
	if layer != nil {
		r := layer.takeAt(key, now, cost)
		if !r.ok {
			g.undo(s, c, now, &h)
			return g.deny(s, m.Session, kind, c, r.reason, atomicbucket.DeniedFor(r.retry), m.Size, now)
		}
		if r.reason == None { // a fail-open TableFull pass took nothing
			h.keyed, h.key = layer, key
		}
	}
	kinds, lag := s.kinds, s.lag
	if acct != nil {
		kinds, lag = acct.kinds, acct.lag
	}
	if r := c.lim.TakeAt(&kinds[kind], now, cost); !r.OK() {
		g.undo(s, c, now, &h)
		if c.lagCap > 0 && stage < StageShed && !g.ladder.disabled && lag.forgive(kind, now) {
			// The overflow of a flush after a silence: dropped, no strike.
			g.stats.stripe(s.stripe).lagForgiven.Add(1)
			return g.denyStrike(s, m.Session, kind, c, ChannelLimit, actionFor(c, ChannelLimit), r, m.Size, now, false)
		}
		return g.deny(s, m.Session, kind, c, ChannelLimit, r, m.Size, now)
	}
	h.kind = &kinds[kind]
	if g.match != nil && m.Match != 0 {
		if r := g.match.takeAt(m.Match, now, cost); !r.ok {
			g.undo(s, c, now, &h)
			return g.deny(s, m.Session, kind, c, r.reason, atomicbucket.DeniedFor(r.retry), m.Size, now)
		}
	}
	if c.lagCap > 0 {
		lag.admitted(kind, c, now)
	}
	g.count(s.stripe, kind, None, Accept)
	return Verdict{Stage: stage}
}

// admitRequest registers a request in the session's pending table and
// in-flight count, or says why not.
//
// A request is released exactly once, by whoever takes its meta word: Done
// or Close after clearing its pending slot, undo when a later layer refuses
// the message, or the admission itself when a Close (or a Done that came
// too early) cleared the slot before the meta was published. The meta is
// published only after the counts it gives back are taken, and the slot is
// claimed before that, so a Close that clears the slot in between finds no
// meta and leaves the release to the admission, which checks for it after
// publishing. An admission that runs entirely after Close's scan sees the
// session closed and releases itself.
func (g *Gate) admitRequest(s *session, c *chanSpec, kind int, m Message, h *held) Reason {
	id := m.Request
	if g.pendingIndex(s, id) >= 0 {
		return Duplicate
	}
	if g.replayed(s, id) {
		return Replay
	}
	size := int64(m.Size)
	if s.queued.Add(1) > g.queueCmds {
		s.queued.Add(-1)
		return QueueFull
	}
	if s.queuedBytes.Add(size) > g.queueBytes {
		s.unqueue(size)
		return QueueFull
	}
	j, r := g.claimPending(s, id)
	if r != None {
		s.unqueue(size)
		return r
	}
	i := uint64(j)
	acct := s.acct.Load() != nil
	if c.inflight > 0 {
		ctr := s.inflightCounter(c.inflightIdx, acct)
		if ctr.Add(1) > c.inflight {
			ctr.Add(-1)
			g.unpend(s, i, id) // unless a Close cleared it: no meta, nothing released
			s.unqueue(size)
			return InFlightLimit
		}
	}
	meta := uint64(kind)<<metaKindShift | uint64(m.Size) | metaSet | (id>>metaTagShift)<<metaTagShift
	if acct {
		meta |= metaAcct
	}
	if !s.meta[i].CompareAndSwap(0, meta) {
		// A Close cleared the slot and another request of the session
		// claimed it and published first: this one gives its counts back.
		g.release(s, meta)
		g.unpend(s, i, id)
		return QueueFull
	}
	if s.closed.Load() || s.pending[i].Load() != id {
		// Close has run (its scan may have passed this slot) or cleared
		// the slot before the meta was there: take the slot back if it is
		// still this request's, and release unless Close took the meta.
		g.unpend(s, i, id)
		if s.meta[i].CompareAndSwap(meta, 0) {
			g.release(s, meta)
		}
		return None
	}
	h.pend, h.id = i+1, id
	return None
}

// actionFor is the action for a denial by class: transport-level and
// malformed traffic is dropped; a request the client must hear about is
// rejected; replaceable and predicted input is dropped.
func actionFor(c *chanSpec, r Reason) Action {
	switch r {
	case None:
		return Accept
	case NoSession, Oversize, Malformed, ByteLimit, FrameLimit, Duplicate, Replay:
		return Drop
	}
	if c != nil && c.class == ClassRequest {
		return Reject
	}
	return Drop
}

// deny records a denial: strikes (escalating the action), the flood
// accumulator or a RateLimited event, counters; and returns the verdict.
// s is nil for a message without a session (nothing is created for it).
func (g *Gate) deny(s *session, h Session, row int, c *chanSpec, r Reason, wait atomicbucket.Result, size uint32, now int64) Verdict {
	return g.denyAs(s, h, row, c, r, actionFor(c, r), wait, size, now)
}

// denyAs is deny with the action before escalation given.
func (g *Gate) denyAs(s *session, h Session, row int, c *chanSpec, r Reason, act Action, wait atomicbucket.Result, size uint32, now int64) Verdict {
	return g.denyStrike(s, h, row, c, r, act, wait, size, now, true)
}

// denyStrike is denyAs, adding the reason's strike weight only when strike
// is set (a drop the lag credit forgives adds none).
func (g *Gate) denyStrike(s *session, h Session, row int, c *chanSpec, r Reason, act Action, wait atomicbucket.Result, size uint32, now int64, strike bool) Verdict {
	stripe := int(h.index())
	stage := StageNone
	var account uint64
	if s != nil {
		stripe = s.stripe
		account = s.account.Load()
		rec, lk := s.strikeTarget()
		if !g.ladder.disabled {
			// One read: two could straddle a concurrent strike and report
			// its rise as this denial's.
			before := rec.score(now)
			after := before
			if w := g.ladder.weight[r]; w > 0 && strike {
				before, after = rec.add(w, g.ladder.ceiling, now)
			}
			sb, sa := g.ladder.stageOf(before), g.ladder.stageOf(after)
			stage = sa
			if sa >= StageLockout && !lk.locked(now) && lk.lockUntil(timesat.Add(now, g.ladder.lockout), now) {
				// Counted by the one denial whose CompareAndSwap started
				// the lockout: two sessions of an account racing here
				// both saw it unlocked.
				g.stats.stripe(stripe).lockouts.Add(1)
			}
			if sa > sb {
				g.stats.stripe(stripe).rises[sa].Add(1)
				g.emitStrike(stripe, StrikeEvent{Session: h, Account: account, Stage: sa, Score: g.ladder.points(after), Reason: r, Shadow: g.shadow, At: now})
			}
			if sa >= StageDisconnect {
				act = Disconnect
			}
		}
		if lk.locked(now) {
			act = Disconnect
		}
		if slot := floodSlot[r]; slot >= 0 {
			var limit uint32 // the size limit an Oversize broke
			if r == Oversize {
				limit = g.maxFrame
				if c != nil {
					limit = c.maxSize
				}
			}
			s.floods[slot].note(size, limit)
			if !s.floodDirty.Load() {
				s.floodDirty.Store(true)
			}
			if s.closed.Load() {
				// Close has emitted the session's reports, or is about
				// to: a drop its flush may have missed is reported here
				// (each count is swapped out by one flush only).
				g.flushFloods(s, now)
			}
			st := g.stats.stripe(stripe)
			st.floods.Add(1)
			st.floodB.Add(uint64(size))
		}
	}
	// The retry time is worked out only for a verdict that carries it: a
	// Reject on a channel with retry guidance. Every other denial, and
	// most denials are drops, skips the bucket's division.
	var retry time.Duration
	if act == Reject && (c == nil || c.retry) {
		retry = wait.RetryAfter()
	}
	g.count(stripe, row, r, act)
	if s != nil && floodSlot[r] < 0 {
		e := RateLimitedEvent{Session: h, Account: account, Kind: -1, Reason: r, Action: act, RetryAfter: retry, Shadow: g.shadow, At: now}
		if c != nil {
			e.Kind, e.Channel = row, c.name
		}
		g.emitRateLimited(stripe, e)
	}
	if g.shadow {
		g.stats.stripe(stripe).shadowed.Add(1)
		return Verdict{Reason: r, RetryAfter: retry, Stage: stage, Shadow: true}
	}
	return Verdict{Action: act, Reason: r, RetryAfter: retry, Stage: stage}
}

func (g *Gate) count(stripe, row int, r Reason, a Action) {
	st := g.stats.stripe(stripe)
	st.decisions[row*NumReasons+int(r)].Add(1)
	st.actions[a].Add(1)
}

// Step emits the coalesced flood reports gathered since the previous Step:
// one FloodEvent per session and reason, with the number of drops folded
// in. About once a second of now it also sweeps idle account and address
// entries and full keyed buckets. Call it from the server's tick.
func (g *Gate) Step(now int64) {
	hi := g.high.Load()
	for i := uint32(0); i < hi; i++ {
		if s := g.slots[i].Load(); s != nil && s.floodDirty.Load() {
			g.flushFloods(s, now)
		}
	}
	g.sweep(now)
}

// sweep forgets idle entities and keyed buckets, at most once per second of
// now. The check and the claim share one critical section, so concurrent
// Steps never both sweep.
func (g *Gate) sweep(now int64) {
	g.mu.Lock()
	if now-g.lastSweep < int64(time.Second) {
		g.mu.Unlock()
		return
	}
	g.lastSweep = now
	g.accounts.sweep(now)
	g.addresses.sweep(now)
	g.mu.Unlock()
	for _, k := range []keyedBuckets{g.account, g.address, g.match} {
		if k != nil {
			k.sweep(now)
		}
	}
}

func (g *Gate) flushFloods(s *session, now int64) {
	s.floodDirty.Store(false)
	for i := range s.floods {
		a := &s.floods[i]
		n := a.count.Swap(0)
		if n == 0 {
			continue
		}
		largest, limit := a.takeLargest()
		e := FloodEvent{
			Session: s.h, Account: s.account.Load(), Reason: floodReasons[i], Count: n,
			Bytes: a.bytes.Swap(0), Largest: largest, At: now,
		}
		switch e.Reason {
		case ByteLimit:
			e.Budget = g.bytesBurst
		case FrameLimit:
			e.Budget = g.framesBurst
		case Oversize:
			e.Budget = uint64(limit)
		}
		g.emitFlood(s.stripe, e)
	}
}
