package loadgen

import (
	"cmp"
	"encoding/binary"
	"slices"
	"sync"
	"time"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/server"
	"github.com/sluicedev/sluice/loadgen/sim"
	"github.com/sluicedev/sluice/loadgen/wire"
	"github.com/sluicedev/sluice/trace"
)

// A trace population on the loopback driver: each traced session the sim
// would replay (the same window, speed, copies, sample and routing to
// populations: sim.TraceFeed) becomes a client of its population, dialling
// from an address group of its own per recorded source address (so from
// its own 127.x.y.z), that connects at the session's recorded open time
// with its recorded account, writes each recorded read's frames (its
// messages and unchecked frames, rebuilt from their kinds, sizes, request
// ids and flags) in one write at the read's time, and disconnects at the
// recorded close. Its actions are carried out by a drive.Worker like any
// client's.
//
// The trace is read twice, streamed: once before the run to list the
// sessions (what a Client needs: its open time, account, address and
// population), and once while it runs by a traceDemux per feed that
// hands each session its records. The demux reads ahead only as far as
// a session asks (at most traceLookahead of run time past the asking
// session's last action), so its memory is the records of that window,
// not the trace.

// traceLookahead is how far past a session's last action the demux reads
// to find its next record; a session with nothing in it yields an action
// that does nothing at its end and looks again from there (see
// traceStream.Next).
const traceLookahead = int64(500 * time.Millisecond)

// tracedSession is what the first pass learns of a traced session.
type tracedSession struct {
	id      uint64 // its session number in the trace
	open    int64  // run time of its open
	account uint64 // its first authentication's account (fresh), 0 if none
	authed  bool
	addr    uint32 // its address group
}

// traceClients lists the clients of the plan's trace populations: one per
// traced session, indexed from firstIndex, with address groups from
// firstAddr. It returns them and the demuxes their streams read from.
func traceClients(p *behave.Plan, policy *core.Policy, firstIndex int, firstAddr uint32) ([]behave.Client, []*traceDemux, error) {
	feeds, err := sim.TraceFeeds(p)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		for _, f := range feeds {
			f.Close()
		}
	}()
	play, err := sim.TraceFeeds(p)
	if err != nil {
		return nil, nil, err
	}
	var clients []behave.Client
	var demuxes []*traceDemux
	groups := map[[2]uint64]uint32{} // (copy, address) -> group
	addrKey := func(r *trace.Record) uint64 {
		if r.AddrHash != 0 {
			return r.AddrHash
		}
		a := r.Addr.Addr().Unmap().As16()
		return binary.BigEndian.Uint64(a[:8]) ^ behave.Mix64(binary.BigEndian.Uint64(a[8:]))
	}
	next := firstAddr
	for fi, f := range feeds {
		d := newTraceDemux(play[fi], policy)
		demuxes = append(demuxes, d)
		// Sessions opened and not yet given their client: a session's
		// client is made at its authentication, first frame or close,
		// once its label (which a recorder writes just after the open)
		// has said whose it is.
		pending := map[uint64]*pendingSession{}
		add := func(ps *pendingSession) {
			delete(pending, ps.s.id)
			pop := ps.pop
			if !ps.labelled {
				pop = f.PopulationOf(ps.s.id, "", trace.Unknown)
			}
			if pop < 0 {
				f.CountSkipped()
				return
			}
			start, end := p.Populations[pop].Window(p.Duration)
			idx := firstIndex + len(clients)
			clients = append(clients, behave.Client{
				Index: idx, Population: pop, Label: p.Populations[pop].Name,
				Seed: behave.ClientSeed(p.Seed, idx), Account: ps.s.account, Addr: ps.s.addr,
				Start: start, End: end, Arrive: ps.s.open,
				Behaviour: &tracedBehaviour{demux: d, s: ps.s},
			})
			d.want[ps.s.id] = true
			d.feed.CountSession(pop)
		}
		for {
			r, at, ok := f.NextRecord()
			if !ok {
				break
			}
			if r.Session == 0 {
				continue // a refused open: no session to replay
			}
			ps := pending[r.Session]
			if r.Op == trace.OpOpen {
				k := [2]uint64{uint64(f.Copy()), addrKey(r)}
				g, ok := groups[k]
				if !ok {
					g = next
					next++
					groups[k] = g
				}
				pending[r.Session] = &pendingSession{s: tracedSession{id: r.Session, open: at, addr: g}}
				continue
			}
			if ps == nil {
				continue
			}
			switch r.Op {
			case trace.OpLabel:
				ps.pop, ps.labelled = f.PopulationOf(r.Session, r.Group, r.Label), true
			case trace.OpAuth:
				ps.s.authed, ps.s.account = true, f.FreshAccount(r.Account)
				add(ps)
			case trace.OpMessage, trace.OpUnchecked, trace.OpClose:
				add(ps)
			}
		}
		if err := f.Err(); err != nil {
			return nil, nil, err
		}
		// Sessions the window ends before they did anything, in trace order.
		left := make([]*pendingSession, 0, len(pending))
		for _, ps := range pending {
			left = append(left, ps)
		}
		slices.SortFunc(left, func(a, b *pendingSession) int { return cmp.Compare(a.s.id, b.s.id) })
		for _, ps := range left {
			add(ps)
		}
	}
	return clients, demuxes, nil
}

// pendingSession is a session of the first pass before its client is made.
type pendingSession struct {
	s        tracedSession
	pop      int
	labelled bool
}

// tracedBehaviour is the behaviour of one traced session's client.
type tracedBehaviour struct {
	demux *traceDemux
	s     tracedSession
}

func (b *tracedBehaviour) Name() string    { return "trace" }
func (b *tracedBehaviour) Validate() error { return nil }
func (b *tracedBehaviour) Stream(c *behave.Client) behave.Stream {
	return &traceStream{d: b.demux, s: b.s, end: c.End, enc: b.demux.enc.clone()}
}

// traceDemux reads one feed for the traced sessions of its copy while a
// run goes, keeping each session's records until its stream takes them.
// Safe for concurrent use (the run's workers share it).
type traceDemux struct {
	mu     sync.Mutex
	feed   *sim.TraceFeed
	want   map[uint64]bool           // sessions with a client (set before the run)
	queues map[uint64][]queuedRecord // their records read and not yet taken
	at     int64                     // run time of the last record read
	eof    bool
	enc    frameEncoder
	queued int // records in queues
	peak   int // the most ever in queues: the replay's window
}

// queuedRecord is a record kept for its session, with its run time.
type queuedRecord struct {
	r  trace.Record
	at int64
}

func newTraceDemux(f *sim.TraceFeed, p *core.Policy) *traceDemux {
	return &traceDemux{feed: f, want: map[uint64]bool{}, queues: map[uint64][]queuedRecord{}, enc: newFrameEncoder(p)}
}

// readTo reads records up to run time bound (or one past it), queueing
// those of wanted sessions; the caller holds mu.
func (d *traceDemux) readTo(bound int64) {
	for !d.eof && d.at <= bound {
		r, at, ok := d.feed.NextRecord()
		if !ok {
			d.eof = true
			return
		}
		d.at = at
		if !d.want[r.Session] {
			continue
		}
		switch r.Op {
		case trace.OpOpen, trace.OpLabel, trace.OpDone, trace.OpLost:
			continue // the client knows its open and label; answers are the server's
		}
		rec := *r
		d.queues[r.Session] = append(d.queues[r.Session], queuedRecord{rec, at})
		d.queued++
		d.peak = max(d.peak, d.queued)
		if r.Op == trace.OpClose {
			delete(d.want, r.Session)
		}
	}
}

// take returns session s's next record, reading the trace up to bound
// for it; ok is false when there is none by bound (more may come: more
// is false when none will).
func (d *traceDemux) take(s uint64, bound int64) (q queuedRecord, ok, more bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.queues[s]) == 0 {
		d.readTo(bound)
	}
	qs := d.queues[s]
	if len(qs) == 0 {
		return q, false, !d.eof && d.want[s]
	}
	q = qs[0]
	d.queued--
	if len(qs) == 1 {
		delete(d.queues, s)
	} else {
		d.queues[s] = qs[1:]
	}
	return q, true, true
}

// peek reports whether session s's next record is a frame charged to the
// read before it at the same run time at: part of that read's write.
func (d *traceDemux) peek(s uint64, at int64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.queues[s]) == 0 {
		d.readTo(at)
	}
	qs := d.queues[s]
	return len(qs) > 0 && qs[0].at == at && (qs[0].r.Op == trace.OpMessage || qs[0].r.Op == trace.OpUnchecked) && qs[0].r.Flags&core.FlagCharged != 0
}

// forget drops what is kept for session s (its stream is done).
func (d *traceDemux) forget(s uint64) {
	d.mu.Lock()
	d.queued -= len(d.queues[s])
	delete(d.queues, s)
	delete(d.want, s)
	d.mu.Unlock()
}

// traceStream is one traced session's actions: its connect, a write per
// recorded read (or per frame recorded without one) and its disconnect.
type traceStream struct {
	d       *traceDemux
	s       tracedSession
	end     int64
	started bool
	done    bool
	last    int64
	buf     []byte
	enc     frameEncoder // the demux's, with a buffer of its own
}

func (t *traceStream) Next(a *behave.Action) bool {
	if t.done {
		return false
	}
	if !t.started {
		t.started, t.last = true, t.s.open
		*a = behave.Action{At: t.s.open, Op: behave.OpConnect, Account: t.s.account}
		if !t.s.authed {
			a.Op = behave.OpDial
		}
		return true
	}
	for {
		q, ok, more := t.d.take(t.s.id, t.last+traceLookahead)
		if !ok {
			if !more || t.last+traceLookahead >= t.end {
				t.finish()
				return false
			}
			// Nothing within the lookahead: a flush of nothing (the
			// client never freezes) at its end, so that the demux never
			// reads far ahead for one session.
			t.last += traceLookahead
			*a = behave.Action{At: t.last, Op: behave.OpFlush}
			return true
		}
		t.last = max(t.last, q.at)
		switch q.r.Op {
		case trace.OpClose:
			t.finish()
			*a = behave.Action{At: q.at, Op: behave.OpDisconnect}
			return true
		case trace.OpRead, trace.OpMessage, trace.OpUnchecked:
			t.buf = t.buf[:0]
			if q.r.Op != trace.OpRead {
				t.buf = t.enc.append(t.buf, &q.r)
				t.d.feed0()
			}
			if q.r.Op == trace.OpRead || q.r.Flags&core.FlagCharged != 0 {
				for t.d.peek(t.s.id, q.at) {
					m, _, _ := t.d.take(t.s.id, q.at)
					t.buf = t.enc.append(t.buf, &m.r)
					t.d.feed0()
				}
			}
			if len(t.buf) == 0 {
				continue // the Hello's read (the connect sent it), or a read of nothing
			}
			*a = behave.Action{At: q.at, Op: behave.OpFrames, Data: t.buf}
			return true
		}
		// auth (the connect authenticated), anything else: nothing to send.
	}
}

func (t *traceStream) finish() {
	t.done = true
	t.d.forget(t.s.id)
}

// feed0 counts a replayed frame.
func (d *traceDemux) feed0() {
	d.mu.Lock()
	d.feed.CountFrame()
	d.mu.Unlock()
}

// frameEncoder rebuilds a recorded frame's bytes for the replay's policy:
// a frame on a channel the policy names is an Input or a Request (with
// its recorded id) of its recorded size on that channel, one on the ping
// channel a Ping; a malformed one is sent with the other frame type (the
// server checks it on its channel, as malformed); one that names no
// channel is a frame of an unknown type (malformed), or, over the maximum
// frame, a length prefix that says so (oversize); one on a channel the
// policy lacks is an Input on a channel past its channels.
type frameEncoder struct {
	chans    map[string]int
	request  []bool
	maxFrame int
	zeros    []byte
}

func newFrameEncoder(p *core.Policy) frameEncoder {
	e := frameEncoder{chans: map[string]int{}, maxFrame: wire.DefaultMaxFrame}
	for i, c := range p.Channels {
		e.chans[c.Name] = i
		e.request = append(e.request, c.Class == core.ClassRequest)
	}
	if p.Transport.MaxFrame != nil {
		e.maxFrame = int(*p.Transport.MaxFrame)
	}
	return e
}

// clone returns e with a zero buffer of its own (the rest is read only).
func (e frameEncoder) clone() frameEncoder {
	e.zeros = nil
	return e
}

func (e *frameEncoder) payload(n int) []byte {
	n = max(n, 0)
	if len(e.zeros) < n {
		e.zeros = make([]byte, n)
	}
	return e.zeros[:n]
}

// typeUnknown is a frame type no receiver knows: a well-delimited frame
// that does not decode.
const typeUnknown wire.Type = 0xee

func (e *frameEncoder) append(dst []byte, r *trace.Record) []byte {
	size := int(r.Size)
	malformed := r.Flags&core.FlagMalformed != 0
	idx, named := e.chans[r.Kind]
	switch {
	case r.Kind == "" && !malformed && size > e.maxFrame:
		return wire.AppendHeader(dst, uint32(size-4), wire.TypeInput)
	case r.Kind == "":
		size = max(size, 5)
		dst = wire.AppendHeader(dst, uint32(size-4), typeUnknown)
		return append(dst, e.payload(size-5)...)
	case r.Kind == server.DefaultPingChannel && !malformed:
		return wire.AppendPing(dst, uint64(r.Time))
	case !named || idx > 255:
		code := min(len(e.chans), 255)
		b, _ := wire.AppendInput(dst, uint8(code), e.payload(size-wire.InputOverhead))
		return b
	}
	request := e.request[idx]
	if malformed {
		request = !request
	}
	if request {
		id := r.Request
		if id == 0 {
			id = 1
		}
		b, err := wire.AppendRequest(dst, uint8(idx), id, e.payload(size-wire.RequestOverhead))
		if err != nil {
			return dst
		}
		return b
	}
	b, err := wire.AppendInput(dst, uint8(idx), e.payload(size-wire.InputOverhead))
	if err != nil {
		return dst
	}
	return b
}

// loopbackClients expands the plan for a loopback run: its synthetic
// clients, and one client per traced session of its trace populations (in
// place of their placeholders), indexed and given address groups after
// the synthetic ones. It returns the demuxes of the traced clients' trace
// feeds (nil without trace populations); close them after the run.
func loopbackClients(p *behave.Plan, policy *core.Policy) ([]behave.Client, []*traceDemux, error) {
	all := p.Clients()
	traced := false
	for _, pop := range p.Populations {
		if _, ok := pop.Behaviour.(*sim.Trace); ok {
			traced = true
		}
	}
	if !traced {
		return all, nil, nil
	}
	var clients []behave.Client
	var index int
	var addr uint32
	for _, c := range all {
		index, addr = max(index, c.Index+1), max(addr, c.Addr+1)
		if _, ok := c.Behaviour.(*sim.Trace); !ok {
			clients = append(clients, c)
		}
	}
	more, demuxes, err := traceClients(p, policy, index, addr)
	if err != nil {
		return nil, nil, err
	}
	return append(clients, more...), demuxes, nil
}

// closeDemuxes closes the demuxes' feeds and returns their stats.
func closeDemuxes(ds []*traceDemux) []sim.TraceStats {
	var out []sim.TraceStats
	for _, d := range ds {
		d.mu.Lock()
		out = append(out, d.feed.Stats())
		d.feed.Close()
		d.mu.Unlock()
	}
	return out
}
