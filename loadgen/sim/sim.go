package sim

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/sluicedev/sluice/atomicbucket"
	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/record"
	"github.com/sluicedev/sluice/loadgen/server"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// SimConfig configures a Sim. Its server fields mirror loadgen/server's
// Config and take the same defaults; the zero value is the reference
// server's defaults at 30 Hz.
type SimConfig struct {
	// TickRate is the simulated server's tick rate in Hz; default 30.
	TickRate float64
	// As in server.Config: connections open at once (more are accepted
	// and closed at once), the framer buffer, the idle, partial-frame and
	// Hello timeouts, the tick queue, and the ping channel and the
	// server's own ping bucket used when the policy has no such channel.
	MaxConns                                int
	ReadBuffer                              int
	IdleTimeout, FrameTimeout, HelloTimeout time.Duration
	QueueSize                               int
	PingChannel                             string
	PingRate                                float64
	// Stalls are intervals (from the run's start) in which the simulated
	// server does nothing, as a server stopped by a pause would: what
	// clients write is held and read at the end of the stall, ticks and
	// replies due in it come at its end. They must not overlap.
	Stalls []Stall
	// Channels are the kinds' channels (see ChannelsOf), by which the sim
	// labels what it decides; nil means ChannelsOf the policy.
	Channels *behave.Channels
	// TableSeed lays out the gate's keyed tables (core.WithReproducibleTables)
	// so that when a table fills, the same keys are refused on every run and
	// machine. RunSim derives it from the plan's seed; 0 means 1.
	TableSeed uint64
	// OnDecision, if set, is called with every decision the server makes
	// on a frame (and Hello) of a client: the client's population, the
	// kind the server decoded the frame as (KindRaw for a frame that does
	// not decode, an oversize one, or one on a channel no kind uses), the
	// outcome (Accepted or a server reason), and the time. RunSim routes
	// it to the Recorder (see Recorder.AddDecision).
	OnDecision func(pop int, k behave.Kind, o record.Outcome, at int64)
	// Record, if set, is attached to the gate (core.WithRecorder), and the
	// sim adds what only the server knows (see simRecord): a label for
	// every session it opens, from Labels and Hostile by population, and
	// the frames of reads the byte budget refused. Drain is called at
	// every tick, and must empty it.
	Record  *core.RecordBuffer
	Drain   func()
	Labels  []string
	Hostile []bool
	// Traces are replayed beside the clients (see TraceFeed).
	Traces []*TraceFeed
	// OnClientOutcome, if set, is called with what a traced session's
	// player would have seen that the server did not decide: a frame of
	// a session the replay's server had already cut off is Sent when it
	// was recorded at the time of the cut (the rest of the write the
	// server cut the session in, written unread), else NotSent, as the
	// loopback driver's client counts them.
	OnClientOutcome func(pop int, k behave.Kind, o record.Outcome, at int64)
	// Transport is what the clients speak over (RunSpec.Transport): over
	// TransportWS each write is read as its messages (sim_ws.go), over
	// TransportUDP as its datagrams (udp.go). Transports, if set, is each
	// population's instead ("" there: Transport), each connection read
	// over its client's.
	Transport  string
	Transports []string
	// GateOptions are passed to core.NewGate after the sim's own (a
	// fleet's keyed layers: see fleet.go).
	GateOptions []core.GateOption
	// Network is the clients' network model over drive.TransportUDP
	// (drive/network.go, udp.go).
	Network drive.Network
}

// Stall is an interval in which the simulated server does nothing.
type Stall struct {
	At, For time.Duration
}

// Sim is the sim driver: it implements Driver in virtual time, for one
// worker, straight into a core.Gate, without sockets, sleeping or
// goroutines. It models the reference server (loadgen/server) rule by
// rule: a Dial opens a gate session from a synthetic source address of
// the client's address group (10.x.y.z; never dialled, it only keys the
// gate's pre-auth tables); each Write is read as the server reads a
// socket (reads of at most the byte budget's burst and the framer's free
// room, each charged with Gate.Read, then every whole frame in it decoded
// with wire and checked with FlagCharged; a Hello authenticates; an oversize
// length prefix is Oversize and disconnects; a frame that does not decode,
// or on a channel of the wrong class, is FlagMalformed); a refusal is
// dropped, rejected with a Reply, or disconnects with a Disconnect frame, as
// the verdict says. Accepted pings are answered at once, the Hello too;
// accepted requests are answered (StatusOK, or StatusFailed before a Hello)
// and Done in the gate at the next tick; every tick runs Gate.Step and the
// idle and partial-frame timeouts. Network latency is zero. Everything
// happens in the order of virtual time, ties in the order of calls, so the
// same calls give the same events; the gate's keyed tables are laid out from
// SimConfig.TableSeed, so a table that fills refuses the same keys every
// time.
//
// Where it differs from the server, deliberately or because a socket is not
// deterministic:
//   - each Write is read on its own: a server that falls behind reads
//     several writes of a connection in one read (one minimum byte charge
//     for all of them) or splits one, which changes ByteLimit counts for
//     floods of small writes;
//   - a timeout closes the connection at the first tick at or after its
//     deadline; the server re-arms its socket deadline lazily, and closes
//     up to an eighth of the timeout later (a frame completed in that slack
//     is read there, and the connection lives on);
//   - the server's write buffer and write timeout (the disconnects of a
//     client that does not read) are not modelled;
//   - a client that closes during a stall loses what the stall held.
//
// Make one with NewSim; it is not safe for concurrent use (one worker
// calls it).
type Sim struct {
	vt     drive.VirtualTime
	gate   *core.Gate
	cfg    SimConfig
	pops   []int  // population by client index
	udp    simUDP // transport udp's state (udp.go)
	stalls []stall

	nchan    int
	chanReq  []bool
	kinds    [256]behave.Kind // the kind of each channel byte (KindRaw: none)
	pingKind int
	chanIdx  map[string]int
	limit    int64  // the time Poll runs the server to
	lastKind string // channelIndex's cache
	lastIdx  int
	pingLim  *atomicbucket.Limit
	tokens   *server.Tokens // Hello tokens to accounts, as the server names them
	maxFrame int
	readBuf  int
	maxRead  int
	idle     int64
	frameTO  int64
	helloTO  int64

	period  int64
	tick    int64 // number of the next tick, at tick × period
	conns   conns
	live    []*simConn // server-side open connections, in order of opening
	nopen   int
	done    []completion // requests awaiting their reply, by time (see answerAt)
	dhead   int
	inputs  int // inputs queued for the next tick
	queued  int // inputs + requests awaiting their reply
	backlog []*simConn
	polls   uint
	msg     wire.Msg
	frames  int64
	busy    time.Duration
	busyAt  int64
	writes  uint
}

type stall struct{ at, end int64 }

// simConn is a connection the simulated server has. What every write
// reads comes first, in one cache line.
type simConn struct {
	id           drive.ConnID
	h            core.Session
	open         bool // the server has not closed it
	backlogged   bool
	opened       bool // the gate session was opened (Dial in a stall defers it)
	hello        bool
	authed       bool
	pop          int
	traced       bool // a session replayed from a trace: no client hears its events
	refusal      core.Reason
	readVerdict  core.Verdict // a traced session's last read
	lastFrame    int64
	helloBy      int64 // when the connection is closed if it has not said Hello
	partialSince int64
	buf          []byte // the framer's undecoded bytes
	held         []byte // written during a stall
	addr         netip.AddrPort
	pingWord     atomic.Uint64
	owed         int             // requests accepted and not yet answered
	halfClosed   bool            // the client shut down its sending side: closed once owed is 0
	net          *drive.NetModel // over transport udp: its datagrams' fate (udp.go)
	cutAt        int64           // a traced session the server cut: the time of the record it was cut at
}

// conns are the server's connections by ConnID (those it closed included,
// until the client closes them too): a map, with the latest connection of
// each client in a slot of its own, where a lookup finds it without
// hashing. Older connections of a client, and those of client indexes out
// of range, are in the map.
type conns struct {
	byClient []*simConn // by ConnID.Client: the latest connection put
	others   map[drive.ConnID]*simConn
}

func (cs *conns) get(id drive.ConnID) *simConn {
	if uint64(id.Client) < uint64(len(cs.byClient)) {
		if c := cs.byClient[id.Client]; c != nil && c.id == id {
			return c
		}
	}
	return cs.others[id]
}

// put adds c, whose id is not in cs.
func (cs *conns) put(c *simConn) {
	if i := c.id.Client; uint64(i) < uint64(len(cs.byClient)) {
		if old := cs.byClient[i]; old != nil {
			cs.putOther(old)
		}
		cs.byClient[i] = c
		return
	}
	cs.putOther(c)
}

func (cs *conns) putOther(c *simConn) {
	if cs.others == nil {
		cs.others = make(map[drive.ConnID]*simConn)
	}
	cs.others[c.id] = c
}

// remove removes c, which is in cs.
func (cs *conns) remove(c *simConn) {
	if i := c.id.Client; uint64(i) < uint64(len(cs.byClient)) && cs.byClient[i] == c {
		cs.byClient[i] = nil
		return
	}
	delete(cs.others, c.id)
}

type completion struct {
	at     int64
	c      *simConn
	id     uint64
	authed bool // the session was authenticated when the request arrived
}

// unknownKind is the Message.Kind of a frame that names no channel, as
// the server uses it.
const unknownKind = 0xFFFF

// NewSim returns a sim driver for a worker of the given clients (indexed
// as the worker indexes them, by ConnID.Client), with a new gate of policy
// p anchored at time 0.
func NewSim(p core.Policy, cfg SimConfig, clients []behave.Client) (*Sim, error) {
	if cfg.TickRate == 0 {
		cfg.TickRate = server.DefaultTickRate
	}
	if math.IsNaN(cfg.TickRate) || cfg.TickRate <= 0 || cfg.TickRate > 10000 {
		return nil, &behave.ParamError{Owner: "sim", Field: "TickRate", Value: cfg.TickRate, Reason: "must be in (0, 10000] Hz"}
	}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = server.DefaultMaxConns
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = server.DefaultIdleTimeout
	}
	if cfg.FrameTimeout == 0 {
		cfg.FrameTimeout = server.DefaultFrameTimeout
	}
	if cfg.HelloTimeout == 0 {
		cfg.HelloTimeout = server.DefaultHelloTimeout
	}
	if cfg.QueueSize == 0 {
		cfg.QueueSize = server.DefaultQueueSize
	}
	if cfg.PingChannel == "" {
		cfg.PingChannel = server.DefaultPingChannel
	}
	if cfg.PingRate == 0 {
		cfg.PingRate = server.DefaultPingRate
	}
	switch {
	case cfg.MaxConns < 0 || cfg.IdleTimeout < 0 || cfg.FrameTimeout < 0 || cfg.HelloTimeout < 0 || cfg.QueueSize < 0:
		return nil, &behave.ParamError{Owner: "sim", Field: "MaxConns, IdleTimeout, FrameTimeout, HelloTimeout, QueueSize", Value: nil, Reason: "must not be negative"}
	case cfg.IdleTimeout > server.MaxTimeout || cfg.FrameTimeout > server.MaxTimeout || cfg.HelloTimeout > server.MaxTimeout:
		// A deadline is a time plus a timeout: beyond this it could wrap.
		return nil, &behave.ParamError{Owner: "sim", Field: "IdleTimeout, FrameTimeout, HelloTimeout", Value: nil, Reason: fmt.Sprintf("must be at most %v", server.MaxTimeout)}
	case math.IsNaN(cfg.PingRate) || cfg.PingRate <= 0 || math.IsInf(cfg.PingRate, 0):
		return nil, &behave.ParamError{Owner: "sim", Field: "PingRate", Value: cfg.PingRate, Reason: "must be a positive rate"}
	}
	opts := []core.GateOption{core.WithReproducibleTables(max(cfg.TableSeed, 1))}
	if cfg.Record != nil {
		opts = append(opts, core.WithRecorder(cfg.Record))
	}
	opts = append(opts, cfg.GateOptions...)
	g, err := core.NewGate(p, 0, opts...)
	if err != nil {
		return nil, fmt.Errorf("loadgen: sim: %w", err)
	}
	pol := g.Policy()
	s := &Sim{
		gate:     g,
		cfg:      cfg,
		pops:     make([]int, len(clients)),
		nchan:    len(pol.Channels),
		chanReq:  make([]bool, len(pol.Channels)),
		pingKind: pol.ChannelIndex(cfg.PingChannel),
		idle:     int64(cfg.IdleTimeout),
		frameTO:  int64(cfg.FrameTimeout),
		helloTO:  int64(cfg.HelloTimeout),
		period:   max(1, int64(float64(time.Second)/cfg.TickRate)),
		tick:     1,
		conns:    conns{byClient: make([]*simConn, len(clients))},
	}
	for i, c := range clients {
		s.pops[i] = c.Population
	}
	s.udp.seeds = drive.ClientSeeds(clients)
	s.chanIdx = make(map[string]int, len(pol.Channels))
	for i, c := range pol.Channels {
		s.chanReq[i] = c.Class == core.ClassRequest
		s.chanIdx[c.Name] = i
	}
	chans := cfg.Channels
	if chans == nil {
		ch, err := behave.ChannelsOf(&pol)
		if err != nil {
			return nil, err
		}
		chans = &ch
	}
	for i := range s.kinds {
		s.kinds[i] = behave.KindRaw
	}
	for k, ch := range chans {
		if ch >= 0 && ch < len(s.kinds) {
			s.kinds[ch] = behave.Kind(k)
		}
	}
	s.tokens = server.NewTokens(0)
	// The framer's geometry, as server.New computes it.
	s.maxFrame = min(max(int(*pol.Transport.MaxFrame), wire.MinFrameLimit), wire.MaxFrameLimit)
	s.readBuf = cfg.ReadBuffer
	if s.readBuf == 0 {
		s.readBuf = 2 * s.maxFrame
	}
	if s.readBuf < s.maxFrame || s.readBuf > 2*wire.MaxFrameLimit {
		return nil, &behave.ParamError{Owner: "sim", Field: "ReadBuffer", Value: cfg.ReadBuffer, Reason: fmt.Sprintf("must be in [%d, %d]", s.maxFrame, 2*wire.MaxFrameLimit)}
	}
	s.maxRead = s.readBuf
	if b := pol.Transport.Bytes; !b.Disabled {
		s.maxRead = max(1, min(s.maxRead, int(*b.Burst)))
	}
	if s.pingKind < 0 {
		s.pingLim, err = atomicbucket.NewLimit(cfg.PingRate, max(1, cfg.PingRate), 0)
		if err != nil {
			return nil, &behave.ParamError{Owner: "sim", Field: "PingRate", Value: cfg.PingRate, Reason: err.Error()}
		}
	}
	for _, st := range cfg.Stalls {
		if st.At < 0 || st.For <= 0 {
			return nil, &behave.ParamError{Owner: "sim", Field: "Stalls", Value: st, Reason: "need At ≥ 0 and For > 0"}
		}
		s.stalls = append(s.stalls, stall{int64(st.At), int64(st.At + st.For)})
	}
	slices.SortFunc(s.stalls, func(a, b stall) int { return cmp.Compare(a.at, b.at) })
	for i := 1; i < len(s.stalls); i++ {
		if s.stalls[i].at < s.stalls[i-1].end {
			return nil, &behave.ParamError{Owner: "sim", Field: "Stalls", Value: cfg.Stalls, Reason: "must not overlap"}
		}
	}
	return s, nil
}

// Gate returns the simulated server's gate.
func (s *Sim) Gate() *core.Gate { return s.gate }

// Frames returns the number of frames the simulated server decoded (valid,
// malformed or oversize; hellos included), as server.Stats counts them.
func (s *Sim) Frames() int64 { return s.frames }

// Busy returns the wall-clock time spent simulating the server (reads,
// decoding, gate calls, ticks): the sim's stand-in for server CPU,
// estimated from one write in 32 and every tick and reply. It is
// measured, so it differs from run to run.
func (s *Sim) Busy() time.Duration { return s.busy }

// Now returns the virtual time.
func (s *Sim) Now() int64 { return s.vt.Now() }

// stallAt returns the end of the stall that t is in, or -1.
func (s *Sim) stallAt(t int64) int64 {
	for _, st := range s.stalls {
		if t < st.at {
			break
		}
		if t < st.end {
			return st.end
		}
	}
	return -1
}

// adjust moves a time inside a stall to the stall's end (and past the
// stalls that follow it back to back).
func (s *Sim) adjust(t int64) int64 {
	for {
		e := s.stallAt(t)
		if e < 0 {
			return t
		}
		t = e
	}
}

// simAddr is the synthetic source address of address group g: 10.x.y.z.
func simAddr(g uint32, port uint16) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(g >> 16), byte(g >> 8), byte(g)}), port)
}

// Dial opens conn: the server accepts it and opens a gate session for its
// source address (at the end of a stall, if one is on). A refusal (the
// address is locked out or too fast, a full table) comes as an
// EvDisconnect with the reason, and a connection beyond MaxConns as an
// EvDisconnect with reason TableFull, as over a socket; Dial itself never
// fails.
func (s *Sim) Dial(id drive.ConnID, addr uint32) error {
	now := s.vt.Now()
	if old := s.conns.get(id); old != nil {
		s.closeConn(old, now)
	}
	pop := 0
	if int(id.Client) < len(s.pops) {
		pop = s.pops[id.Client]
	}
	c := &simConn{id: id, pop: pop, addr: simAddr(addr, uint16(1024+id.Gen%60000)), open: true}
	s.conns.put(c)
	if s.nopen >= s.cfg.MaxConns {
		c.open = false
		s.vt.Push(drive.Event{Conn: id, Kind: drive.EvDisconnect, At: now, Reason: uint8(core.TableFull)})
		return nil
	}
	s.nopen++
	if s.stallAt(now) >= 0 {
		s.hold(c, nil)
		return nil
	}
	timed := s.beginWrite()
	s.openSession(c, now)
	s.endWrite(timed)
	return nil
}

// busySample: one write in busySample is timed (and counted busySample
// times), since reading the clock around every write would cost more than
// many of them.
const busySample = 32

// begin and end time the server's work: every batch of jobs, and one
// write in busySample.
func (s *Sim) begin() { s.busyAt = atomicbucket.Nanotime() }

func (s *Sim) end() { s.busy += time.Duration(atomicbucket.Nanotime() - s.busyAt) }

func (s *Sim) beginWrite() bool {
	s.writes++
	if s.writes%busySample != 0 {
		return false
	}
	s.begin()
	return true
}

func (s *Sim) endWrite(timed bool) {
	if timed {
		s.busy += busySample * time.Duration(atomicbucket.Nanotime()-s.busyAt)
	}
}

func (s *Sim) openSession(c *simConn, now int64) {
	c.opened = true
	c.lastFrame = now
	c.helloBy = now + s.helloTO
	h, v := s.gate.Open(c.addr, now)
	if v.Action == core.Disconnect {
		c.refusal = v.Reason
		if s.cfg.Record != nil && !c.traced {
			s.recordLabel(c, now) // of session 0: the open just refused
		}
		s.disconnect(c, v.Reason, now)
		return
	}
	c.h = h
	s.live = append(s.live, c)
	if s.cfg.Record != nil && !c.traced {
		s.recordLabel(c, now)
	}
	if s.pingLim != nil {
		c.pingWord.Store(s.pingLim.FullWord(now))
	}
}

// hold keeps p (and the connection's opening) for the end of the stall.
func (s *Sim) hold(c *simConn, p []byte) {
	c.held = append(c.held, p...)
	if !c.backlogged {
		c.backlogged = true
		s.backlog = append(s.backlog, c)
	}
}

// Write hands p to the server, which reads it at once (or at the end of a
// stall). A write on a connection the server has closed is lost without an
// error, as a socket accepts it before the peer's close arrives.
func (s *Sim) Write(id drive.ConnID, p []byte) error {
	c := s.conns.get(id)
	if c == nil {
		return drive.ErrConnClosed
	}
	if !c.open {
		return nil
	}
	now := s.vt.Now()
	if s.stallAt(now) >= 0 || c.backlogged {
		s.hold(c, p)
		return nil
	}
	timed := s.beginWrite()
	s.receive(c, p, now)
	s.endWrite(timed)
	return nil
}

// CloseWrite shuts down conn's sending side: the server reads the end of
// the stream and, as the reference server does, closes the connection
// once the requests it admitted are answered (at once if none is owed;
// the server's DrainTimeout is never reached here, where a tick answers
// every request), the client seeing the close (EvClosed).
// Over WebSocket and UDP, which have no half-close, it is refused with
// drive.ErrConnClosed, as the loopback driver refuses it (sim_ws.go).
func (s *Sim) CloseWrite(id drive.ConnID) error {
	c := s.conns.get(id)
	if c == nil {
		return drive.ErrConnClosed
	}
	if t := s.transportOf(c); t == drive.TransportWS || t == drive.TransportUDP {
		return errNoHalfClose
	}
	if !c.open {
		return nil
	}
	now := s.vt.Now()
	if c.owed > 0 && !c.backlogged && s.stallAt(now) < 0 {
		c.halfClosed = true
		return nil
	}
	s.endOfStream(c, now)
	return nil
}

// endOfStream closes a half-closed connection from the server's side.
func (s *Sim) endOfStream(c *simConn, now int64) {
	s.vt.Push(drive.Event{Conn: c.id, Kind: drive.EvClosed, At: now})
	s.shut(c, now)
}

// Close closes conn from the client's side: the server sees the end of the
// stream and closes its session.
func (s *Sim) Close(id drive.ConnID) error {
	c := s.conns.get(id)
	if c == nil {
		return nil
	}
	s.closeConn(c, s.vt.Now())
	return nil
}

func (s *Sim) closeConn(c *simConn, now int64) {
	s.conns.remove(c)
	if c.open {
		s.shut(c, now)
	}
	c.buf, c.held = nil, nil
}

// shut closes an open connection on the server's side: it stops counting
// against MaxConns, its gate session (if one was opened) is closed, and
// what its framer held is dropped.
func (s *Sim) shut(c *simConn, now int64) {
	c.open = false
	s.nopen--
	if c.opened && c.h != 0 {
		s.gate.Close(c.h, now)
	}
	c.buf = nil
}

// Poll runs the simulated server up to until (its ticks, replies and stall
// ends, each at its time) and hands out the client events due by then, in
// order. It checks ctx every 256 calls.
func (s *Sim) Poll(ctx context.Context, until int64, ev *drive.Event) (bool, error) {
	if s.polls%256 == 0 {
		if err := ctx.Err(); err != nil {
			return false, err
		}
	}
	s.polls++
	limit := max(until, s.vt.Now())
	s.limit = limit
	for {
		t := s.nextJob()
		if t > limit {
			break
		}
		if at, has := s.vt.Peek(); has && at < t {
			break
		}
		s.vt.AdvanceTo(t)
		s.begin()
		s.runJobs(t)
		s.end()
	}
	return s.vt.Poll(context.Background(), until, ev)
}

// nextJob returns the time of the server's next piece of work.
func (s *Sim) nextJob() int64 {
	t := s.adjust(s.tick * s.period)
	if len(s.backlog) > 0 {
		t = min(t, s.adjust(s.vt.Now()))
	}
	if s.dhead < len(s.done) {
		t = min(t, s.adjust(s.done[s.dhead].at))
	}
	for _, f := range s.cfg.Traces {
		if f.has {
			t = min(t, f.at)
		}
	}
	if at, ok := s.udp.next(); ok {
		t = min(t, s.adjust(at))
	}
	return t
}

// runJobs does the server's work due at t: what a stall held, the replies
// due, then the tick.
func (s *Sim) runJobs(t int64) {
	if len(s.backlog) > 0 && s.stallAt(t) < 0 {
		bl := s.backlog
		s.backlog = nil
		for _, c := range bl {
			c.backlogged = false
			if !c.open {
				continue
			}
			if !c.opened {
				s.openSession(c, t)
			}
			p := c.held
			c.held = nil
			if c.open && len(p) > 0 {
				s.receive(c, p, t)
			}
		}
	}
	s.deliverLate(t)
	for s.dhead < len(s.done) && s.adjust(s.done[s.dhead].at) <= t {
		d := s.done[s.dhead]
		s.done[s.dhead] = completion{}
		s.dhead++
		s.complete(d, t)
	}
	if s.dhead > 1024 && s.dhead*2 > len(s.done) {
		s.done = s.done[:copy(s.done, s.done[s.dhead:])]
		s.dhead = 0
	}
	if s.adjust(s.tick*s.period) <= t {
		s.runTick(t)
		s.tick = t/s.period + 1
	}
	if len(s.cfg.Traces) > 0 {
		s.replayUntil(s.replayBound(t))
	}
}

// replayBound is how far the trace records may be replayed in one batch
// from t: up to the server's next job (a tick, a reply due) and the
// clients' next event and the end of the Poll, before any of which nothing
// else happens; only t itself when stalls are set.
func (s *Sim) replayBound(t int64) int64 {
	if len(s.stalls) > 0 {
		return t
	}
	b := min(s.limit, s.tick*s.period-1)
	if s.dhead < len(s.done) {
		b = min(b, s.done[s.dhead].at-1)
	}
	if at, has := s.vt.Peek(); has {
		b = min(b, at-1)
	}
	return max(b, t)
}

// complete answers an accepted request and marks it Done, as the
// server's tick does.
func (s *Sim) complete(d completion, now int64) {
	s.queued--
	c := d.c
	if c.open {
		st := wire.StatusOK
		if !d.authed {
			// The handler's own check: a request sent before the session
			// was authenticated may not act, even if a Hello followed it.
			st = wire.StatusFailed
		}
		s.push(c, drive.Event{Conn: c.id, Kind: drive.EvReply, At: now, ID: d.id, Status: st})
	}
	s.gate.Done(c.h, d.id)
	c.owed--
	if c.owed == 0 && c.halfClosed && c.open {
		s.endOfStream(c, now)
	}
}

// runTick applies the inputs queued, runs Gate.Step, and closes the
// connections past their idle, partial-frame or Hello timeout.
func (s *Sim) runTick(now int64) {
	s.queued -= s.inputs
	s.inputs = 0
	s.gate.Step(now)
	if s.cfg.Drain != nil {
		s.cfg.Drain()
	}
	n := 0
	for _, c := range s.live {
		if !c.open {
			continue
		}
		deadline := c.lastFrame + s.idle
		if c.partialSince != 0 {
			deadline = min(deadline, c.partialSince+s.frameTO)
		}
		if !c.hello {
			deadline = min(deadline, c.helloBy)
		}
		if now >= deadline {
			// The server's Disconnect for a timeout carries reason 0.
			s.disconnect(c, core.None, now)
			continue
		}
		s.live[n] = c
		n++
	}
	clear(s.live[n:])
	s.live = s.live[:n]
}

func (s *Sim) decide(c *simConn, k behave.Kind, r core.Reason, now int64) {
	if s.cfg.OnDecision != nil && c.pop >= 0 { // a traced session before its label is in no population
		s.cfg.OnDecision(c.pop, k, record.Outcome(r), now)
	}
}

// kindOf returns the kind the server decoded a frame as.
func (s *Sim) kindOf(m *wire.Msg, err error) behave.Kind {
	if err != nil {
		return behave.KindRaw
	}
	switch m.Type {
	case wire.TypeHello:
		return behave.KindHello
	case wire.TypeInput, wire.TypeRequest:
		return s.kinds[m.Kind]
	case wire.TypePing:
		return behave.KindPing
	}
	return behave.KindRaw
}

// disconnect ends the connection from the server's side with a Disconnect
// frame carrying reason (its first reason wins) and closes its session.
func (s *Sim) disconnect(c *simConn, reason core.Reason, now int64) {
	if !c.open {
		return
	}
	s.push(c, drive.Event{Conn: c.id, Kind: drive.EvDisconnect, At: now, Reason: uint8(reason)})
	s.shut(c, now)
}

func (s *Sim) reply(c *simConn, id uint64, st wire.Status, reason core.Reason, retry time.Duration, now int64) {
	s.push(c, drive.Event{Conn: c.id, Kind: drive.EvReply, At: now, ID: id, Status: st, Reason: uint8(reason), RetryAfter: uint64(max(retry, 0))})
}

// receive reads p as the server reads its socket: in reads of at most
// maxRead bytes and the framer's free room. When the framer holds nothing,
// a read's frames are decoded from p itself and only a partial frame left
// at its end is copied into the framer's buffer: the same bytes, decoded
// the same way, as if the whole read had gone through the buffer.
func (s *Sim) receive(c *simConn, p []byte, now int64) {
	switch s.transportOf(c) {
	case drive.TransportWS:
		s.receiveWS(c, p, now)
		return
	case drive.TransportUDP:
		s.receiveUDP(c, p, now)
		return
	}
	for len(p) > 0 && c.open {
		n := min(len(p), s.maxRead, s.readBuf-len(c.buf))
		var rest []byte
		var completed bool
		if len(c.buf) == 0 {
			rest, completed = s.handleRead(c, p[:n], n, now)
			if c.open && len(rest) > 0 {
				c.buf = append(c.buf, rest...)
			}
		} else {
			c.buf = append(c.buf, p[:n]...)
			rest, completed = s.handleRead(c, c.buf, n, now)
			if c.open {
				c.buf = c.buf[:copy(c.buf, rest)]
			}
		}
		p = p[n:]
		if !c.open {
			return
		}
		if completed {
			c.lastFrame, c.partialSince = now, 0
		}
		if len(c.buf) > 0 && c.partialSince == 0 {
			c.partialSince = now
		}
	}
}

// handleRead charges one read of n bytes, the end of buf (the bytes the
// framer holds, then those read), and handles every whole frame in buf, as
// the server's handleRead does. It returns what is left of buf (a partial
// frame).
func (s *Sim) handleRead(c *simConn, buf []byte, n int, now int64) (rest []byte, completed bool) {
	v := s.gate.Read(c.h, uint32(n), now)
	if v.Action == core.Disconnect {
		s.disconnect(c, v.Reason, now)
		return nil, false
	}
	charged := v.Action == core.Accept
	off := 0
	m := &s.msg
	for c.open && off < len(buf) { // (nothing left decodes as ErrIncomplete)
		k, err := wire.Decode(buf[off:], s.maxFrame, m)
		if err == wire.ErrIncomplete {
			break
		}
		completed = true
		s.frames++
		if err == wire.ErrOversize {
			// The stream cannot be resynchronised: the gate sees it (and
			// strikes), and the server disconnects whatever it said.
			s.gate.Check(core.Message{Session: c.h, Kind: unknownKind, Size: clampSize(m.Size), Flags: core.FlagCharged}, now)
			s.decide(c, behave.KindRaw, core.Oversize, now)
			s.disconnect(c, core.Oversize, now)
			return nil, completed
		}
		off += k
		if !charged {
			// The byte budget refused the read: its frames are dropped
			// unseen (decoded, to stay in sync).
			if s.cfg.Record != nil {
				s.recordUnchecked(c, m, err, v, now)
			}
			s.decide(c, s.kindOf(m, err), v.Reason, now)
			continue
		}
		s.frame(c, m, err, now)
	}
	return buf[off:], completed
}

func clampSize(n int) uint32 { return uint32(min(n, math.MaxUint32)) }

// frame handles one whole frame (err is nil or a malformed error).
func (s *Sim) frame(c *simConn, m *wire.Msg, err error, now int64) {
	if err != nil {
		if m.Type == wire.TypeHello && !c.hello {
			c.hello = true // a first Hello whose lengths do not add up: refused at once
			s.refuseHello(c, core.Malformed, m.Size, now)
			return
		}
		s.malformed(c, behave.KindRaw, m.Size, now)
		return
	}
	switch m.Type {
	case wire.TypeHello:
		s.hello(c, m, now)
	case wire.TypeInput:
		var fl core.MessageFlags
		if int(m.Kind) < s.nchan && s.chanReq[m.Kind] {
			fl = core.FlagMalformed // an input on a request channel
		}
		s.gated(c, s.kinds[m.Kind], uint16(m.Kind), 0, m.Size, fl, now, false, 0)
	case wire.TypeRequest:
		var fl core.MessageFlags
		if int(m.Kind) < s.nchan && !s.chanReq[m.Kind] {
			fl = core.FlagMalformed // a request on an input channel
		}
		s.gated(c, s.kinds[m.Kind], uint16(m.Kind), m.ID, m.Size, fl, now, false, 0)
	case wire.TypePing:
		if s.pingKind >= 0 {
			s.gated(c, behave.KindPing, uint16(s.pingKind), 0, m.Size, 0, now, true, m.Timestamp)
			return
		}
		if s.pingLim.TakeAt(&c.pingWord, now, 1).OK() {
			s.decide(c, behave.KindPing, core.None, now)
			s.push(c, drive.Event{Conn: c.id, Kind: drive.EvPong, At: now, Timestamp: m.Timestamp})
		} else {
			s.decide(c, behave.KindPing, core.FrameLimit, now)
		}
	default:
		// Reply, Disconnect, Pong: a client may not send them.
		s.malformed(c, behave.KindRaw, m.Size, now)
	}
}

func (s *Sim) malformed(c *simConn, k behave.Kind, size int, now int64) {
	v := s.gate.Check(core.Message{Session: c.h, Kind: unknownKind, Size: clampSize(size), Flags: core.FlagMalformed | core.FlagCharged}, now)
	s.verdict(c, k, v, 0, now)
}

func (s *Sim) hello(c *simConn, m *wire.Msg, now int64) {
	if c.hello {
		s.malformed(c, behave.KindHello, m.Size, now)
		return
	}
	c.hello = true
	// The first Hello is answered once checked, a refused one too, as the
	// server does.
	if m.Version != wire.Version {
		s.refuseHello(c, core.Malformed, m.Size, now)
		return
	}
	acct, r := s.tokens.Account(m.Token)
	if r != core.None {
		s.refuseHello(c, r, m.Size, now)
		return
	}
	v := s.gate.Authenticate(c.h, acct, now)
	if v.Action == core.Disconnect {
		s.reply(c, 0, wire.StatusRejected, v.Reason, v.RetryAfter, now)
		s.verdict(c, behave.KindHello, v, 0, now)
		return
	}
	c.authed = true
	s.decide(c, behave.KindHello, core.None, now)
	s.reply(c, 0, wire.StatusOK, 0, 0, now)
}

// refuseHello answers the first Hello with a refusal for reason r and ends
// the connection, as the server does: a malformed one is also checked as
// malformed.
func (s *Sim) refuseHello(c *simConn, r core.Reason, size int, now int64) {
	s.reply(c, 0, wire.StatusRejected, r, 0, now)
	if r == core.Malformed {
		s.malformed(c, behave.KindHello, size, now)
	} else {
		s.decide(c, behave.KindHello, r, now)
	}
	s.disconnect(c, r, now)
}

// gated checks a frame of kind k on a channel and acts on the verdict; a
// ping's timestamp is ts.
func (s *Sim) gated(c *simConn, k behave.Kind, kind uint16, id uint64, size int, fl core.MessageFlags, now int64, ping bool, ts uint64) {
	v := s.gate.Check(core.Message{Session: c.h, Request: id, Size: clampSize(size), Kind: kind, Flags: fl | core.FlagCharged}, now)
	if v.Action != core.Accept {
		s.verdict(c, k, v, id, now)
		return
	}
	switch {
	case ping:
		s.decide(c, k, core.None, now)
		s.push(c, drive.Event{Conn: c.id, Kind: drive.EvPong, At: now, Timestamp: ts})
	case int(kind) >= s.nchan:
		s.decide(c, k, core.None, now) // accepted only in shadow mode: nothing to run
	case s.queued >= s.cfg.QueueSize:
		s.decide(c, k, core.QueueFull, now)
		if id != 0 {
			s.reply(c, id, wire.StatusRejected, core.QueueFull, 0, now)
			s.gate.Done(c.h, id)
		}
	default:
		s.decide(c, k, core.None, now)
		s.queued++
		if id == 0 {
			s.inputs++
		} else {
			s.done = append(s.done, completion{at: s.answerAt(), c: c, id: id, authed: c.authed})
			c.owed++
		}
	}
}

// answerAt is when a request accepted now is answered: at the next tick
// the sim has not run yet, as the reference server answers the requests
// it queued on its tick, a wait spread over (0, one tick] (a constant,
// such as the mean wait of half a tick, would report it as every
// request's response time, its p99 included). That tick is after now (a
// tick due now runs before what is read now), except at the end of a
// stall, where the tick that fell due in it runs after the writes it held
// and answers their requests with their inputs, as the server's one queue
// does. It never decreases as time goes on, so the done queue stays in
// order.
func (s *Sim) answerAt() int64 { return s.tick * s.period }

// verdict acts on a refusal of a frame of kind k (or a shadow-mode
// acceptance of a frame with nothing to run).
func (s *Sim) verdict(c *simConn, k behave.Kind, v core.Verdict, id uint64, now int64) {
	switch v.Action {
	case core.Accept:
		s.decide(c, k, core.None, now)
	case core.Drop:
		s.decide(c, k, v.Reason, now)
	case core.Reject:
		s.decide(c, k, v.Reason, now)
		if id != 0 {
			s.reply(c, id, wire.StatusRejected, v.Reason, v.RetryAfter, now)
		}
	case core.Disconnect:
		s.decide(c, k, v.Reason, now)
		s.disconnect(c, v.Reason, now)
	}
}
