package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedev/sluice/atomicbucket"
	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// Server is the reference loopback game server: it accepts TCP
// connections, puts every read and frame through a core.Gate, queues
// accepted inputs and requests for a fixed-rate tick, and answers requests
// and pings. Make one with New, then Start it; stop it with Shutdown or
// Close. The zero value is not usable. A Server is safe for concurrent use:
// Stats, Addr and Gate may be called from any goroutine at any time.
type Server struct {
	cfg      Config
	gate     *core.Gate
	maxFrame int    // the framer's maximum frame size
	readBuf  int    // the framer's buffer size
	maxRead  int    // the most bytes one read asks for
	chanReq  []bool // channel index -> request class; its length is the policy's channel count
	pingKind int    // channel index of pings, or -1
	pingLim  *atomicbucket.Limit
	pops     *populations
	tokens   *Tokens
	noLimits bool // Config.NoLimits: no gate call is made

	// Channel rows of the per-channel counters: the policy's channels a
	// frame's channel byte can name (at most 256), then hello, ping and
	// unknown. rowNames are their keys in PopulationStats.Channels.
	rowHello, rowPing, rowUnknown int
	rowNames                      []string

	// Deadlines are set from the monotonic clock: base is the time.Time
	// (with its monotonic reading) at which Nanotime read baseNano.
	base     time.Time
	baseNano int64

	queue chan command
	// draining is set by shutdown before the last tick: readers queue
	// nothing more (what they would have queued is refused with reason
	// Closed), and enqueuers counts those between their check and their
	// send, so the last tick starts only once none is left.
	draining  atomic.Bool
	enqueuers atomic.Int32
	// batchedFrames counts frames checked in runs of two or more
	// (conn.checkRun), for the tests that the batch path was taken.
	batchedFrames atomic.Uint64

	mu       sync.Mutex // conns, state, ln
	conns    map[*conn]struct{}
	started  bool
	stopping bool
	ln       net.Listener
	addr     netip.AddrPort
	ws       *wsListener  // the WebSocket listener (ws.go), if any
	udp      *udpListener // the UDP listener (udp.go), if any

	wg       sync.WaitGroup // accept loop, tick loop, every connection goroutine
	acceptWG sync.WaitGroup
	tickStop chan struct{}
	// acceptStop is closed when shutdown begins, so an accept loop backing
	// off from a temporary error does not hold it up.
	acceptStop chan struct{}
	tickDone   chan struct{}
	stopOnce   sync.Once
	stopErr    error

	startNano int64
	startCPU  time.Duration

	accepted, refused, open, peak atomic.Uint64
	ticks, commands, queueFull    atomic.Uint64
	tickNanos                     atomic.Int64
}

// command is one accepted input or request waiting for the tick.
type command struct {
	c      *conn
	id     uint64 // request id; 0 for an input
	kind   uint8
	authed bool // the session was authenticated when the command arrived
}

// unknownKind is the Message.Kind of a frame that names no channel
// (malformed frames, oversize headers, stray server-to-client types).
const unknownKind = 0xFFFF

// CheckChannelNames reports a policy channel named as one of the rows the
// server adds to its per-channel stats (ChannelHello, ChannelPing), which
// New refuses: a *ConfigError for field Policy. (ChannelUnknown is the
// gate's own row, whose name core refuses for a channel itself.)
func CheckChannelNames(p *core.Policy) error {
	for _, name := range []string{ChannelHello, ChannelPing} {
		if i := p.ChannelIndex(name); i >= 0 {
			return &ConfigError{Field: "Policy", Msg: fmt.Sprintf("channels[%d]: the name %q is reserved for the server's stats", i, name)}
		}
	}
	return nil
}

// New validates cfg and builds the server and its gate; it listens on
// nothing until Start.
func New(cfg Config) (*Server, error) {
	writeBufferGiven := cfg.WriteBuffer != 0
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	now := atomicbucket.Nanotime()
	g, err := core.NewGate(cfg.Policy, now, cfg.GateOptions...)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	pol := g.Policy()
	// One tick answers every request a session has pending, up to the
	// policy's queue.commands, at once: room for twice that many replies
	// lets a client that reads keep up, with rejections and pongs beside.
	if need := 2 * int(*pol.Queue.Commands) * wire.ReplySize; cfg.WriteBuffer < need && !cfg.NoLimits {
		if writeBufferGiven {
			return nil, &ConfigError{Field: "WriteBuffer", Msg: fmt.Sprintf("%d is less than %d: twice the replies one tick may owe a client (the policy's queue.commands %d × %d bytes)", cfg.WriteBuffer, need, *pol.Queue.Commands, wire.ReplySize)}
		}
		cfg.WriteBuffer = need
	}
	if err := CheckChannelNames(&pol); err != nil {
		return nil, err
	}
	named := min(len(pol.Channels), 256) // a channel byte names at most 256
	rows := make([]string, 0, named+extraRows)
	for _, c := range pol.Channels[:named] {
		rows = append(rows, c.Name)
	}
	rows = append(rows, ChannelHello, ChannelPing, ChannelUnknown)
	s := &Server{
		cfg:        cfg,
		gate:       g,
		pingKind:   pol.ChannelIndex(cfg.PingChannel),
		pops:       newPopulations(cfg.MaxPopulations, len(rows), popStripes()),
		tokens:     NewTokens(cfg.MaxTokens),
		noLimits:   cfg.NoLimits,
		rowHello:   named,
		rowPing:    named + 1,
		rowUnknown: named + 2,
		rowNames:   rows,
		base:       time.Now(),
		baseNano:   atomicbucket.Nanotime(),
		queue:      make(chan command, cfg.QueueSize),
		conns:      make(map[*conn]struct{}),
		tickStop:   make(chan struct{}),
		acceptStop: make(chan struct{}),
		tickDone:   make(chan struct{}),
	}
	s.maxFrame = min(max(int(*pol.Transport.MaxFrame), wire.MinFrameLimit), wire.MaxFrameLimit)
	s.readBuf = cfg.ReadBuffer
	if s.readBuf == 0 {
		s.readBuf = 2 * s.maxFrame
	}
	if s.readBuf < s.maxFrame || s.readBuf > 2*wire.MaxFrameLimit {
		return nil, &ConfigError{Field: "ReadBuffer", Msg: fmt.Sprintf("%d not in [%d, %d] (the maximum frame is %d)", s.readBuf, s.maxFrame, 2*wire.MaxFrameLimit, s.maxFrame)}
	}
	s.maxRead = s.readBuf
	if b := pol.Transport.Bytes; !b.Disabled {
		s.maxRead = max(1, min(s.maxRead, int(*b.Burst)))
	}
	s.chanReq = make([]bool, len(pol.Channels))
	for i, c := range pol.Channels {
		s.chanReq[i] = c.Class == core.ClassRequest
	}
	if s.pingKind < 0 {
		s.pingLim, err = atomicbucket.NewLimit(cfg.PingRate, max(1, cfg.PingRate), now)
		if err != nil {
			return nil, &ConfigError{Field: "PingRate", Msg: err.Error(), Err: err}
		}
	}
	return s, nil
}

// Gate returns the server's gate (for its stats, events and policy).
func (s *Server) Gate() *core.Gate { return s.gate }

// MaxFrame returns the largest frame a connection's framer accepts: the
// policy's transport.maxFrame, raised to wire.MinFrameLimit if it is
// smaller (the gate then refuses the frames in between as Oversize,
// keeping the stream in sync).
func (s *Server) MaxFrame() int { return s.maxFrame }

// ConnMemoryBound returns the most memory one connection holds, in bytes,
// with this configuration: the framer buffer, two write buffers of
// WriteBuffer plus a Disconnect frame each, the reader's staged frames (at
// most WriteBuffer), and ConnOverhead for the connection's goroutine
// stacks, its gate session and its bookkeeping. See the package doc.
func (s *Server) ConnMemoryBound() int {
	return s.readBuf + 2*(s.cfg.WriteBuffer+wire.DisconnectSize) + s.cfg.WriteBuffer + ConnOverhead
}

// ConnOverhead is the per-connection memory the server holds beyond its
// read and write buffers, as an upper bound in bytes: two goroutine stacks
// (the reader's grows to 8 KiB, the writer's stays at 2-4 KiB), the
// net.Conn and poller state, the conn record, and the gate's session
// (request tables of 2 × 64 and 2 × 64 words with the default queue policy).
// The heap test asserts the measured cost stays under ConnMemoryBound.
const ConnOverhead = 20 << 10

// Addr returns the address the server listens on (the chosen port when
// the configured port was 0), or the zero AddrPort before Start.
func (s *Server) Addr() netip.AddrPort {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Start listens on Config.Addr and starts the accept and tick loops. It
// returns once the listener is bound (Addr is then valid).
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("server: listen: %w", err)
	}
	ap, ok := addrPortOf(ln.Addr())
	if !ok || (!s.cfg.AllowNonLoopback && !ap.Addr().Unmap().IsLoopback()) {
		ln.Close()
		return &ConfigError{Field: "Addr", Msg: fmt.Sprintf("%q listens on %v, not a loopback address", s.cfg.Addr, ln.Addr()), Err: ErrNonLoopback}
	}
	wsln, err := s.listenWS()
	if err != nil {
		ln.Close()
		return err
	}
	udpc, err := s.listenUDP()
	if err != nil {
		ln.Close()
		closeListener(wsln)
		return err
	}
	s.mu.Lock()
	if s.started || s.stopping {
		s.mu.Unlock()
		ln.Close()
		closeListener(wsln)
		closeUDPConn(udpc)
		if s.stopping {
			return ErrClosed
		}
		return ErrStarted
	}
	s.started = true
	s.ln = ln
	s.addr = ap
	s.startNano = atomicbucket.Nanotime()
	s.startCPU = processCPU()
	s.wg.Add(2)
	s.acceptWG.Add(1)
	s.startWSLocked(wsln)
	s.startUDPLocked(udpc)
	s.mu.Unlock()
	go s.acceptLoop(ln)
	go s.tickLoop()
	return nil
}

func addrPortOf(a net.Addr) (netip.AddrPort, bool) {
	switch ta := a.(type) {
	case *net.TCPAddr:
		return ta.AddrPort(), true
	case *net.UDPAddr: // a UDP session's source
		return ta.AddrPort(), true
	}
	return netip.AddrPort{}, false
}

// Shutdown stops the server gracefully: it closes the listener, runs a
// last tick for the commands already queued, sends every connection a
// Disconnect with reason Closed, lets each writer flush (each within
// WriteTimeout), and waits for every goroutine the server started. If ctx
// ends first, it closes every connection at once, still waits for the
// goroutines (which then end promptly), and returns ctx's error. Calling
// it again waits for the same result. A server that was never started is
// simply marked closed.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopOnce.Do(func() { s.stopErr = s.shutdown(ctx) })
	return s.stopErr
}

func (s *Server) shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.stopping = true
	started, ln := s.started, s.ln
	s.mu.Unlock()
	if !started {
		return nil
	}
	ln.Close()
	s.closeWS()
	s.closeUDP()
	close(s.acceptStop) // an accept loop backing off returns at once
	s.acceptWG.Wait()   // no conn is added after this
	// Nothing is queued after the last tick: a command accepted then
	// would be neither answered nor counted.
	s.draining.Store(true)
	for s.enqueuers.Load() != 0 {
		runtime.Gosched() // an enqueue never blocks: this is brief
	}
	close(s.tickStop)
	<-s.tickDone
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.disconnect(cause(core.Closed), true)
	}
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	for _, c := range conns {
		c.nc.Close()
	}
	<-done
	return ctx.Err()
}

// Close stops the server at once: Shutdown without waiting for writers to
// flush. It returns nil once every goroutine has ended.
func (s *Server) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Shutdown(ctx)
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// Run builds a server from cfg, starts it, calls ready (if not nil) with
// its address, and blocks until ctx is done; then it shuts the server down
// gracefully, allowing the longest a write may take (one and a half
// WriteTimeouts) plus a second. It is what `sluice serve` calls.
func Run(ctx context.Context, cfg Config, ready func(netip.AddrPort)) error {
	s, err := New(cfg)
	if err != nil {
		return err
	}
	return s.Serve(ctx, func(s *Server) {
		if ready != nil {
			ready(s.Addr())
		}
	})
}

func (s *Server) acceptLoop(ln net.Listener) {
	defer s.wg.Done()
	defer s.acceptWG.Done()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Temporary (EMFILE and the like): back off as net/http does.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			if s.cfg.Logf != nil {
				s.cfg.Logf("server: accept: %v; retrying in %v", err, delay)
			}
			select {
			case <-time.After(delay):
			case <-s.acceptStop:
				return
			}
			continue
		}
		delay = 0
		s.accepted.Add(1)
		if s.open.Load() >= uint64(s.cfg.MaxConns) {
			s.refused.Add(1)
			refuse(nc, core.TableFull)
			continue
		}
		c := s.newConn(nc)
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		if n := s.open.Add(1); n > s.peak.Load() {
			s.peak.Store(n) // only this goroutine writes peak
		}
		s.wg.Add(2)
		go c.writeLoop()
		go c.readLoop()
	}
}

// refuse tells a connection the server will not serve why, in a
// Disconnect frame, and closes it. The frame goes into the new socket's
// empty send buffer, so the write returns at once; the short deadline is
// only there so that the accept loop can never wait on it.
func refuse(nc net.Conn, r core.Reason) {
	var b [wire.DisconnectSize]byte
	nc.SetWriteDeadline(time.Now().Add(refuseWriteTimeout))
	nc.Write(wire.AppendDisconnect(b[:0], uint8(r)))
	nc.Close()
}

// refuseWriteTimeout bounds the write of a refused connection's
// Disconnect.
const refuseWriteTimeout = 50 * time.Millisecond

// removeConn forgets a connection once both of its goroutines are done.
func (s *Server) removeConn(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.open.Add(^uint64(0))
}

func (s *Server) tickLoop() {
	defer s.wg.Done()
	defer close(s.tickDone)
	t := time.NewTicker(time.Duration(float64(time.Second) / s.cfg.TickRate))
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.tick()
		case <-s.tickStop:
			s.tick()
			return
		}
	}
}

// tick runs one simulation step: every command queued before it started
// is handled (inputs counted as applied; requests answered, then marked
// Done in the gate), then Gate.Step.
func (s *Server) tick() {
	now := atomicbucket.Nanotime()
	n := len(s.queue)
	for range n {
		cmd := <-s.queue
		c := cmd.c
		pop := c.pop.Load()
		if cmd.id == 0 {
			pop.inputs.Add(1)
			continue
		}
		// Counted when the reply is queued (a connection that ended
		// meanwhile is answered nothing), before its client can read it.
		if cmd.authed {
			c.answer(cmd.id, wire.StatusOK, &pop.requests)
		} else {
			// The handler's own validation: passing the gate is not
			// permission, and a request sent before the session was
			// authenticated may not act, even if a Hello followed it
			// before the tick.
			c.answer(cmd.id, wire.StatusFailed, &pop.failed)
		}
		if !s.noLimits {
			s.gate.Done(c.h, cmd.id)
		}
		c.answered()
	}
	s.commands.Add(uint64(n))
	if !s.noLimits {
		s.gate.Step(now)
	}
	s.ticks.Add(1)
	s.tickNanos.Add(atomicbucket.Nanotime() - now)
}

// rowOf returns the channel row a frame (decoded with error err) is
// counted under.
func (s *Server) rowOf(m *wire.Msg, err error) int {
	if err != nil {
		return s.rowUnknown
	}
	switch m.Type {
	case wire.TypeHello:
		return s.rowHello
	case wire.TypeInput, wire.TypeRequest:
		if int(m.Kind) < s.rowHello {
			return int(m.Kind)
		}
	case wire.TypePing:
		return s.rowPing
	}
	return s.rowUnknown
}

// enqueue queues a command for the next tick and returns None, or says
// why not: QueueFull, or Closed once the server is shutting down.
func (s *Server) enqueue(cmd command) core.Reason {
	s.enqueuers.Add(1)
	r := core.None
	if s.draining.Load() {
		r = core.Closed
	} else {
		select {
		case s.queue <- cmd:
		default:
			s.queueFull.Add(1)
			r = core.QueueFull
		}
	}
	s.enqueuers.Add(-1)
	return r
}

// deadline converts a time on the monotonic clock to a deadline.
func (s *Server) deadline(nano int64) time.Time { return s.base.Add(time.Duration(nano - s.baseNano)) }

// Stats returns a snapshot of the server's counters and its gate's. Each
// population's counts, and ReadService, are sums of the populations'
// stripes (snapshot), for the populations known when Stats copies their
// list; no connection is visited.
func (s *Server) Stats() Stats {
	st := Stats{
		Populations: map[string]PopulationStats{},
		Conns: ConnStats{
			Accepted: s.accepted.Load(),
			Refused:  s.refused.Load(),
			Open:     s.open.Load(),
			Peak:     s.peak.Load(),
		},
		Ticks:       s.ticks.Load(),
		Commands:    s.commands.Load(),
		QueueFull:   s.queueFull.Load(),
		TickService: time.Duration(s.tickNanos.Load()),
		Gate:        s.gate.Stats(),
	}
	s.mu.Lock()
	started, startNano, startCPU := s.started, s.startNano, s.startCPU
	s.mu.Unlock()
	if started {
		st.Uptime = time.Duration(atomicbucket.Nanotime() - startNano)
		if cpu := processCPU(); cpu > 0 {
			st.ProcessCPU = cpu - startCPU
		}
	}
	s.pops.mu.RLock()
	pops := append([]*popCounters(nil), s.pops.order...)
	s.pops.mu.RUnlock()
	for _, p := range pops {
		ps, readNanos := p.snapshot(s.rowNames)
		st.ReadService += time.Duration(readNanos)
		st.Frames += ps.Frames
		st.Bytes += ps.Bytes
		if !ps.empty() || (p.name != PopulationNone && p.name != PopulationOther) {
			st.Populations[p.name] = ps
		}
	}
	return st
}
