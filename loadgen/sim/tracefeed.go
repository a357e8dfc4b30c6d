package sim

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"time"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/record"
	"github.com/sluicedev/sluice/loadgen/wire"
	"github.com/sluicedev/sluice/trace"
)

// Trace is the behaviour of a population replayed from a recorded trace
// (package trace) instead of generated: each traced session is a
// connection with the trace's source address and account, its reads and
// frames at their recorded times (scaled by Speed), decided by the
// simulated server as it decides a client's (see Sim). Its clients do
// nothing themselves: a trace population has one placeholder client, and
// its sessions are counted in Result.Clients and Active.
//
// Only the sim driver replays traces exactly (the same inbound sequence
// into the gate); RunLoopback makes each traced session a client of its
// own over a real socket (loadgen's trace_loopback.go, docs/traces.md).
//
//	File    the trace file (required)
//	Group   only the sessions labelled with this group (a population name when
//	        the trace was recorded by sluice); "" every session
//	Speed   1     trace time runs this many times faster (2: twice as fast)
//	From    0     the window of trace time replayed: [From, To); trace time From
//	To      end   lands at the population's Start
//	Sample  1     the fraction of sessions replayed, chosen by Seed (0 < Sample ≤ 1)
//	Seed    0     which sessions a Sample keeps
//	Repeat  1     copies of the window, each shifted by Every, with fresh
//	              session numbers, accounts and addresses
//	Every   the window's length   shift between copies
//	Partial false replay a damaged trace up to its damage instead of failing
//	Label   only the sessions with this label (honest, hostile, unknown),
//	        after Labels; "" any
//	Labels  rules that relabel sessions (TraceLabelRule), the first that
//	        names a session wins; the others keep the trace's labels
type Trace struct {
	File    string           `yaml:"file"`
	Group   string           `yaml:"group"`
	Speed   float64          `yaml:"speed"`
	From    time.Duration    `yaml:"from"`
	To      time.Duration    `yaml:"to"`
	Sample  float64          `yaml:"sample"`
	Seed    uint64           `yaml:"seed"`
	Repeat  int              `yaml:"repeat"`
	Every   time.Duration    `yaml:"every"`
	Partial bool             `yaml:"partial"`
	Label   string           `yaml:"label"`
	Labels  []TraceLabelRule `yaml:"labels"`
}

// Name returns "trace".
func (t *Trace) Name() string { return "trace" }

// Validate checks the parameters (not the file: see TraceFeed).
func (t *Trace) Validate() error {
	switch {
	case t.File == "":
		return &behave.ParamError{Owner: "trace", Field: "File", Value: t.File, Reason: "is required"}
	case t.Speed < 0 || math.IsNaN(t.Speed) || math.IsInf(t.Speed, 0):
		return &behave.ParamError{Owner: "trace", Field: "Speed", Value: t.Speed, Reason: "must be positive"}
	case t.From < 0 || t.To < 0 || (t.To != 0 && t.To <= t.From):
		return &behave.ParamError{Owner: "trace", Field: "From, To", Value: [2]time.Duration{t.From, t.To}, Reason: "need 0 ≤ From < To"}
	case t.Sample < 0 || t.Sample > 1 || math.IsNaN(t.Sample):
		return &behave.ParamError{Owner: "trace", Field: "Sample", Value: t.Sample, Reason: "must be in (0, 1]"}
	case t.Repeat < 0 || t.Repeat > 1000:
		return &behave.ParamError{Owner: "trace", Field: "Repeat", Value: t.Repeat, Reason: "must be in [1, 1000]"}
	case t.Every < 0:
		return &behave.ParamError{Owner: "trace", Field: "Every", Value: t.Every, Reason: "must not be negative"}
	}
	return t.validateLabels()
}

// Stream returns no actions: the sim replays the trace itself.
func (t *Trace) Stream(*behave.Client) behave.Stream { return emptyStream{} }

type emptyStream struct{}

func (emptyStream) Next(*behave.Action) bool { return false }

// TraceStats counts what a replay did with a trace's records.
type TraceStats struct {
	Sessions  int64 // traced sessions replayed (opened, or refused by the gate)
	Skipped   int64 // sessions left out: another group, sampled out, before the window, over MaxConns
	Frames    int64 // message and unchecked records replayed
	AfterCut  int64 // records of sessions the replay's server had already closed
	Lost      uint64
	Damage    *trace.Damage
	Truncated bool // records after the run's end were not replayed
	// ByPopulation counts the sessions replayed by population index.
	ByPopulation map[int]int64
}

// TraceFeed is one copy of a trace population's trace, read one record at
// a time while the sim runs: its memory is the reader's block and the
// sessions open at once, whatever the trace's length. Make one with
// NewTraceFeed; not safe for concurrent use (its Sim calls it).
type TraceFeed struct {
	t       *Trace
	pops    map[TraceRoute]int     // population by group and label
	labels  map[uint64]trace.Label // Labels' labels, by trace session
	dflt    int                    // the population of sessions of no other group, or -1
	copy    int
	fresh   bool     // accounts and addresses moved out of the synthetic clients' (and other copies') ranges
	refused *simConn // a refused open, until its label says whose it was
	file    *os.File
	r       *trace.Reader
	start   int64 // run time of trace time From
	end     int64 // run time after which nothing is replayed (the population's window end)
	shift   int64
	speed   float64
	to      int64         // trace time To, or MaxInt64
	next    *trace.Record // the reader's: valid until the next advance
	has     bool
	at      int64 // run time of next
	conns   map[uint64]*simConn
	ids     uint32
	err     error
	stats   TraceStats
	sample  uint64 // keep a session when its hash is below
	walkState
}

// NewTraceFeed opens copy number copy (from 0) of a trace, whose window in
// the run is [start, end). Its sessions count in the population of their
// group and label (pops, by the group of their label record and their
// label after t.Labels: see popOf), or in dflt (-1: none). A
// session of no population's group is opened, as recorded, and closed when
// its label comes; a session with no label is dflt's.
//
// With fresh set (the plan has synthetic populations too, whose clients'
// accounts count from 1 and addresses from 10.0.0.1, as a sim-recorded
// trace's do), accounts get bit 40 set and addresses are moved into
// fd00::/8, so that traced and synthetic clients share no bucket; copies
// after the first are always moved, each into its own range.
func NewTraceFeed(t *Trace, pops map[TraceRoute]int, dflt, copy int, fresh bool, start, end time.Duration) (*TraceFeed, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	var labels map[uint64]trace.Label
	if len(t.Labels) > 0 {
		rules, _ := parseLabelRules(t.Labels) // valid: Validate parsed them
		var err error
		if labels, err = traceLabelOverrides(t.File, t.Partial, rules); err != nil {
			return nil, err
		}
	}
	f, err := os.Open(t.File)
	if err != nil {
		return nil, fmt.Errorf("loadgen: trace: %w", err)
	}
	r, err := trace.NewReader(f, trace.ReaderOptions{Partial: t.Partial})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("loadgen: trace %s: %w", t.File, err)
	}
	tf := &TraceFeed{
		t: t, pops: pops, labels: labels, dflt: dflt, copy: copy, fresh: fresh || copy > 0, file: f, r: r,
		start: int64(start), end: int64(end),
		speed: t.Speed, to: math.MaxInt64, conns: map[uint64]*simConn{},
		sample: math.MaxUint64,
	}
	tf.stats.ByPopulation = map[int]int64{}
	if tf.speed == 0 {
		tf.speed = 1
	}
	if t.To > 0 {
		tf.to = int64(t.To)
	}
	if t.Sample > 0 && t.Sample < 1 {
		tf.sample = uint64(t.Sample * (1 << 63) * 2)
	}
	if copy > 0 {
		every := t.Every
		if every == 0 {
			if t.To > 0 {
				every = t.To - t.From
			} else {
				every = end - start // one copy a window: the later ones fall past the end unless Every says
			}
		}
		tf.shift = int64(every) * int64(copy)
	}
	tf.advance()
	return tf, nil
}

// Stats returns what the feed did so far.
func (f *TraceFeed) Stats() TraceStats {
	st := f.stats
	st.Damage = f.r.Damage()
	return st
}

// Err returns the error that stopped the feed, if any.
func (f *TraceFeed) Err() error { return f.err }

// Close closes the trace file.
func (f *TraceFeed) Close() error { return f.file.Close() }

// advance reads the next record in the window into f.next.
func (f *TraceFeed) advance() {
	f.has = false
	for f.err == nil {
		rec, err := f.r.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			f.err = err
			return
		}
		if rec.Time < int64(f.t.From) {
			if rec.Op == trace.OpLost {
				f.stats.Lost += rec.Lost
			}
			continue
		}
		if rec.Time >= f.to {
			return
		}
		at := f.start + f.shift + int64(float64(rec.Time-int64(f.t.From))/f.speed)
		if at >= f.end {
			f.stats.Truncated = true
			return
		}
		f.next, f.at, f.has = rec, at, true
		return
	}
}

// keep reports whether the feed replays trace session id.
func (f *TraceFeed) keep(id uint64) bool {
	if f.sample == math.MaxUint64 {
		return true
	}
	return behave.Mix64(id^behave.Mix64(f.t.Seed)) < f.sample
}

// replayUntil runs the records of every feed due at or before bound, in
// time order across feeds (the first feed first at a tie), moving the
// virtual time to each.
func (s *Sim) replayUntil(bound int64) {
	for {
		var next *TraceFeed
		for _, f := range s.cfg.Traces {
			if f.has && f.at <= bound && (next == nil || f.at < next.at) {
				next = f
			}
		}
		if next == nil {
			return
		}
		s.vt.AdvanceTo(next.at)
		s.replayRecord(next, next.next, next.at)
		next.advance()
	}
}

// traceAddr is the source address of a traced session: the recorded one
// (copies shifted into their own range), or one made from the address's
// keyed hash.
func traceAddr(r *trace.Record, copy int, fresh bool) netip.AddrPort {
	if r.AddrHash != 0 || !r.Addr.IsValid() || fresh {
		var b [16]byte
		b[0], b[1] = 0xfd, byte(copy)
		h := r.AddrHash
		if h == 0 {
			a := r.Addr.Addr().As16()
			h = binary.BigEndian.Uint64(a[8:])
		}
		binary.BigEndian.PutUint64(b[8:], h)
		return netip.AddrPortFrom(netip.AddrFrom16(b), r.Addr.Port())
	}
	return r.Addr
}

func (s *Sim) replayRecord(f *TraceFeed, r *trace.Record, now int64) {
	if c := f.refused; c != nil {
		// The open before this record was refused: its label, if this is
		// it, says whose refusal it was.
		f.refused = nil
		pop := f.dflt
		if r.Op == trace.OpLabel && r.Session == 0 {
			pop = f.popOf(r.Group, r.Label)
		}
		if pop >= 0 && c.refusal != core.None {
			c.pop = pop
			s.decide(c, behave.KindHello, c.refusal, now)
		}
		if r.Op == trace.OpLabel && r.Session == 0 {
			return
		}
	}
	switch r.Op {
	case trace.OpLost:
		f.stats.Lost += r.Lost
		return
	case trace.OpOpen:
		s.replayOpen(f, r, now)
		return
	}
	c := f.conns[r.Session]
	if c == nil {
		return
	}
	switch r.Op {
	case trace.OpLabel:
		pop := f.popOf(r.Group, f.labelOf(r.Session, r.Label))
		if pop < 0 {
			// No population replays this group: the open was replayed,
			// as recorded, and the session ends here.
			delete(f.conns, r.Session)
			if c.open {
				s.shut(c, now)
			}
			f.stats.Sessions--
			f.stats.Skipped++
			return
		}
		if c.pop >= 0 {
			f.stats.ByPopulation[c.pop]--
		}
		c.pop = pop
		f.stats.ByPopulation[pop]++
		return
	case trace.OpClose:
		delete(f.conns, r.Session)
		if c.open {
			s.shut(c, now)
		}
		return
	}
	if !c.open {
		if r.IsMessage() {
			// The replay's server cut the session where the recorded one
			// did not. The player wrote this in the write the server cut
			// it in (the records of that time), and it went out unread, or
			// it would have written it later, on a connection it no
			// longer had: sent, or not sent, as the loopback driver's
			// client counts it.
			f.stats.AfterCut++
			if s.cfg.OnClientOutcome != nil && c.pop >= 0 {
				o := record.NotSent
				if now == c.cutAt {
					o = record.Sent
				}
				s.cfg.OnClientOutcome(c.pop, s.traceKind(r), o, now)
			}
		}
		return
	}
	s.replayLive(f, c, r, now)
	if !c.open {
		c.cutAt = now
	}
}

// replayLive replays record r of traced session c, which the server has
// open, at its time now.
func (s *Sim) replayLive(f *TraceFeed, c *simConn, r *trace.Record, now int64) {
	udp := s.transportOf(c) == drive.TransportUDP
	switch r.Op {
	case trace.OpAuth:
		account := r.Account
		if f.fresh {
			account = account ^ uint64(f.copy)<<48 | 1<<40
		}
		if udp && !s.replayHandshake(c, now) {
			return
		}
		s.replayHello(c, account, now)
	case trace.OpRead:
		if udp {
			return // each frame is a datagram, charged on its own (replayDatagram)
		}
		c.readVerdict = s.gate.Read(c.h, r.Size, now)
		if c.readVerdict.Action == core.Disconnect {
			s.disconnect(c, c.readVerdict.Reason, now)
		}
	case trace.OpMessage, trace.OpUnchecked:
		f.stats.Frames++
		s.frames++
		c.lastFrame = now
		if s.cfg.OnClientOutcome != nil && c.pop >= 0 {
			// Written, as a loopback client counts what it writes: with
			// the rest of a write the server cut the session in (Sent,
			// above), the frames sent are the frames written, decided or
			// not.
			s.cfg.OnClientOutcome(c.pop, s.traceKind(r), record.Sent, now)
		}
		if udp {
			if at, ok := s.replayDatagram(c, r, now); ok {
				s.replayFrame(c, r, at)
			}
			return
		}
		if r.Flags&core.FlagCharged == 0 {
			// Recorded without a read (the server checked it whole): the
			// frame's own charge is a read of its size.
			c.readVerdict = s.gate.Read(c.h, r.Size, now)
			if c.readVerdict.Action == core.Disconnect {
				s.decide(c, behave.KindRaw, c.readVerdict.Reason, now)
				s.disconnect(c, c.readVerdict.Reason, now)
				return
			}
		}
		s.replayFrame(c, r, now)
	}
}

// replayHandshake charges a traced session's Hello over UDP as the
// server charges the Handshake datagram that carries it (udpDatagram),
// and reports whether the Hello is then handled: a refused read drops it
// (the session stays unauthenticated), or ends the session.
func (s *Sim) replayHandshake(c *simConn, now int64) bool {
	at := s.udp.readAt(now)
	v := s.gate.Read(c.h, uint32(udpHandshakeSize(0)), at)
	switch v.Action {
	case core.Accept:
		return true
	case core.Disconnect:
		s.disconnect(c, v.Reason, at)
	default:
		s.decide(c, behave.KindHello, v.Reason, at)
	}
	return false
}

// replayDatagram charges a traced frame over UDP as the server charges
// the datagram that carries it: its header and the frame, at the instant
// it is read (readAt). The loopback replay writes each recorded read's
// frames together, and over UDP each goes in a datagram of its own, so
// the recorded read's charge does not apply (a flush recorded over a
// stream as one read is many datagrams here, each charged at least the
// minimum). It returns when the frame is read, and false when the
// charge ended the session (the frame is not decided, as the server
// decides none after its session ends).
func (s *Sim) replayDatagram(c *simConn, r *trace.Record, now int64) (int64, bool) {
	at := s.udp.readAt(now)
	c.readVerdict = s.gate.Read(c.h, uint32(wire.DatagramHeaderSize)+r.Size, at)
	if c.readVerdict.Action == core.Disconnect {
		s.disconnect(c, c.readVerdict.Reason, at)
		return at, false
	}
	return at, true
}

// replayOpen opens a traced session, as the server did when it was
// recorded: also one the gate refused then (the client tried), and one of
// a group no population replays (until its label says so), so that the
// gate's address state is as it was.
func (s *Sim) replayOpen(f *TraceFeed, r *trace.Record, now int64) {
	if r.Session != 0 && !f.keep(r.Session) {
		f.stats.Skipped++
		return
	}
	if s.nopen >= s.cfg.MaxConns {
		f.stats.Skipped++
		return
	}
	f.ids++
	// Whose it is until its label says: the default population's, or a
	// label's when Labels name the session.
	pop := f.popOf("", f.labelOf(r.Session, trace.Unknown))
	c := &simConn{id: drive.ConnID{Client: -1, Gen: f.ids}, traced: true, pop: pop, addr: traceAddr(r, f.copy, f.fresh), open: true}
	s.nopen++
	s.openSession(c, now)
	if r.Session == 0 || !c.open {
		if c.open {
			s.shut(c, now) // refused then, accepted now: the client had gone
		}
		f.refused = c
		return
	}
	f.conns[r.Session] = c
	f.stats.Sessions++
	if c.pop >= 0 {
		f.stats.ByPopulation[c.pop]++
	}
}

// replayHello is hello for a traced session's authentication.
func (s *Sim) replayHello(c *simConn, account uint64, now int64) {
	if c.hello {
		s.malformed(c, behave.KindHello, 0, now)
		return
	}
	c.hello = true
	v := s.gate.Authenticate(c.h, account, now)
	if v.Action == core.Disconnect {
		s.verdict(c, behave.KindHello, v, 0, now)
		return
	}
	c.authed = true
	s.decide(c, behave.KindHello, core.None, now)
}

// replayFrame handles one traced frame as frame handles a decoded one:
// its read's refusal drops it unseen; a frame that names no channel is
// oversize (when over the maximum frame, and disconnects) or malformed; a
// frame on the ping channel is a ping; any other is checked on its
// channel, by name, in the replay's policy (a name it lacks is a frame on
// no channel, as from a client).
func (s *Sim) replayFrame(c *simConn, r *trace.Record, now int64) {
	idx := s.channelIndex(r.Kind)
	k := s.kindOfChannel(r.Kind, idx)
	if v := c.readVerdict; v.Action != core.Accept {
		s.decide(c, k, v.Reason, now)
		return
	}
	switch {
	case r.Kind == "" && r.Flags&core.FlagMalformed == 0 && int(r.Size) > s.maxFrame:
		s.gate.Check(core.Message{Session: c.h, Kind: unknownKind, Size: r.Size, Flags: core.FlagCharged}, now)
		s.decide(c, behave.KindRaw, core.Oversize, now)
		s.disconnect(c, core.Oversize, now)
	case idx < 0:
		s.malformed(c, behave.KindRaw, int(r.Size), now)
	case k == behave.KindPing:
		if s.pingKind >= 0 {
			s.gated(c, behave.KindPing, uint16(s.pingKind), 0, int(r.Size), 0, now, true, 0)
			return
		}
		if s.pingLim.TakeAt(&c.pingWord, now, 1).OK() {
			s.decide(c, behave.KindPing, core.None, now)
		} else {
			s.decide(c, behave.KindPing, core.FrameLimit, now)
		}
	default:
		s.gated(c, k, uint16(idx), r.Request, int(r.Size), r.Flags&core.FlagMalformed, now, false, 0)
	}
}

// traceKind returns the kind of a traced frame in the replay's policy.
func (s *Sim) traceKind(r *trace.Record) behave.Kind {
	return s.kindOfChannel(r.Kind, s.channelIndex(r.Kind))
}

// kindOfChannel is traceKind of a frame on channel idx, named name.
func (s *Sim) kindOfChannel(name string, idx int) behave.Kind {
	switch {
	case name == "":
		return behave.KindRaw
	case idx == s.pingKind && idx >= 0 || idx < 0 && name == s.cfg.PingChannel:
		return behave.KindPing
	case idx >= 0 && idx < len(s.kinds):
		return s.kinds[idx]
	}
	return behave.KindRaw
}

// channelIndex returns the index of the policy's channel named name, or
// -1. The last name looked up is kept: a trace's records share their
// kinds' strings, so the comparison is mostly of one pointer.
func (s *Sim) channelIndex(name string) int {
	if name == "" {
		return -1
	}
	if name == s.lastKind {
		return s.lastIdx
	}
	i, ok := s.chanIdx[name]
	if !ok {
		i = -1
	}
	s.lastKind, s.lastIdx = name, i
	return i
}

// push hands a client its event; a traced session has no client to hear it.
func (s *Sim) push(c *simConn, e drive.Event) {
	if !c.traced {
		s.vt.Push(e)
	}
}

// recordLabel pushes the label of a session the sim opened: its
// population's name and whether it is hostile.
func (s *Sim) recordLabel(c *simConn, now int64) {
	r := core.GateRecord{Op: core.OpLabel, Time: now, Session: c.h, Label: uint8(trace.Honest)}
	if c.pop < len(s.cfg.Labels) {
		r.Group = s.cfg.Labels[c.pop]
	}
	if c.pop < len(s.cfg.Hostile) && s.cfg.Hostile[c.pop] {
		r.Label = uint8(trace.Hostile)
	}
	s.cfg.Record.Push(r)
}

// recordUnchecked pushes a frame of a refused read, which the gate never
// sees: what a replay needs to decide it under a policy that would have
// accepted the read. A Hello in such a read is recorded as a frame that
// does not decode.
func (s *Sim) recordUnchecked(c *simConn, m *wire.Msg, err error, v core.Verdict, now int64) {
	r := core.GateRecord{Op: core.OpUnchecked, Time: now, Session: c.h, Size: clampSize(m.Size), Kind: unknownKind, Flags: core.FlagCharged,
		Action: v.Action, Reason: v.Reason, Shadow: v.Shadow}
	switch {
	case err != nil:
		r.Flags |= core.FlagMalformed
	case m.Type == wire.TypeInput || m.Type == wire.TypeRequest:
		r.Kind, r.Request = uint16(m.Kind), m.ID
		if int(m.Kind) < s.nchan && s.chanReq[m.Kind] != (m.Type == wire.TypeRequest) {
			r.Flags |= core.FlagMalformed
		}
	case m.Type == wire.TypePing && s.pingKind >= 0:
		r.Kind = uint16(s.pingKind)
	default:
		r.Flags |= core.FlagMalformed
	}
	s.cfg.Record.Push(r)
}

// traceKey is what makes two trace populations read the same trace: all
// of Trace but its Group and Label, as text (Labels is a slice: no key).
func traceKey(t Trace) string {
	t.Group, t.Label = "", ""
	return fmt.Sprintf("%+v", t)
}

// TraceFeeds opens the feeds of the plan's trace populations: one for
// every copy of every trace (populations that differ only in their Group
// share one, each counting its group's sessions).
func TraceFeeds(p *behave.Plan) (feeds []*TraceFeed, err error) {
	type feedSpec struct {
		t          *Trace
		pops       map[TraceRoute]int
		dflt       int
		start, end time.Duration
	}
	var specs []*feedSpec
	byKey := map[string]*feedSpec{}
	mixed := false
	for i := range p.Populations {
		pop := &p.Populations[i]
		t, ok := pop.Behaviour.(*Trace)
		if !ok {
			mixed = true
			continue
		}
		key := traceKey(*t)
		fs := byKey[key]
		if fs == nil {
			start, end := pop.Window(p.Duration)
			fs = &feedSpec{t: t, pops: map[TraceRoute]int{}, dflt: -1, start: time.Duration(start), end: time.Duration(end)}
			byKey[key] = fs
			specs = append(specs, fs)
		}
		if t.Group == "" && t.Label == "" {
			fs.dflt = i
		} else {
			fs.pops[TraceRoute{t.Group, t.Label}] = i
		}
	}
	for _, fs := range specs {
		for c := range max(fs.t.Repeat, 1) {
			f, err := NewTraceFeed(fs.t, fs.pops, fs.dflt, c, mixed, fs.start, fs.end)
			if err != nil {
				for _, f := range feeds {
					f.Close()
				}
				return nil, err
			}
			feeds = append(feeds, f)
		}
	}
	return feeds, nil
}

// WriteMatchTrace writes a synthetic trace for tests and benchmarks: a
// match of sessions players (each opened from its own 10.x.y.z address,
// authenticated as account i, labelled honest in group "players") sending
// messages movement inputs round robin at 20 Hz each, every one in a read
// of its own, then closing. It returns the trace's length.
func WriteMatchTrace(w *trace.Writer, sessions, messages int) (time.Duration, error) {
	rec := trace.Record{}
	for i := 1; i <= sessions; i++ {
		at := int64(i) * int64(time.Millisecond)
		for _, r := range []trace.Record{
			{Op: trace.OpOpen, Time: at, Session: uint64(i), Addr: simAddr(uint32(i), 1024)},
			{Op: trace.OpLabel, Time: at, Session: uint64(i), Label: trace.Honest, Group: "players"},
			{Op: trace.OpAuth, Time: at, Session: uint64(i), Account: uint64(i)},
		} {
			if err := w.Write(&r); err != nil {
				return 0, err
			}
		}
	}
	start := int64(sessions+1) * int64(time.Millisecond)
	gap := int64(50*time.Millisecond) / int64(sessions)
	var t int64
	for m := 0; m < messages; m++ {
		s := uint64(m%sessions + 1)
		t = start + int64(m)*gap + int64(m%7)*1000
		rec = trace.Record{Op: trace.OpRead, Time: t, Session: s, Size: 18}
		if err := w.Write(&rec); err != nil {
			return 0, err
		}
		rec = trace.Record{Op: trace.OpMessage, Time: t, Session: s, Kind: "move", Size: 18, Flags: core.FlagCharged}
		if err := w.Write(&rec); err != nil {
			return 0, err
		}
	}
	for i := 1; i <= sessions; i++ {
		rec = trace.Record{Op: trace.OpClose, Time: t, Session: uint64(i)}
		if err := w.Write(&rec); err != nil {
			return 0, err
		}
	}
	return time.Duration(t), w.Close()
}

// TraceRole returns the label the trace at path gives the sessions of
// group (any group for ""): the label of the first such session's label
// record among the trace's first maxRecords records, and whether there
// was one. A scenario takes a trace population's role from it.
func TraceRole(path, group string, maxRecords int) (trace.Label, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	r, err := trace.NewReader(f, trace.ReaderOptions{Partial: true})
	if err != nil {
		return 0, false, err
	}
	for range maxRecords {
		rec, err := r.Next()
		if err != nil {
			return 0, false, nil // the end, or damage: no label found
		}
		if rec.Op == trace.OpLabel && (group == "" || rec.Group == group) && rec.Label != trace.Unknown {
			return rec.Label, true, nil
		}
	}
	return 0, false, nil
}
