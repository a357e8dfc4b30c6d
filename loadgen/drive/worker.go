package drive

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"
	"unsafe"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/proto"
	"github.com/sluicedev/sluice/loadgen/record"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// RunConfig bounds a worker. The zero value takes the defaults.
type RunConfig struct {
	// Timeout: how long a request, ping or hello waits for its reply
	// before it counts as Timeout; also how long the worker waits for
	// replies after the end of the run. Default 2s.
	Timeout time.Duration
	// MaxActions: the worker stops carrying out actions after this many,
	// even before the end of the run. Default 100 million.
	MaxActions int64
	// MaxPending: replies awaited per client; requests sent beyond it
	// count as Overflow. Default 1024.
	MaxPending int
	// MaxHeld: bytes a client holds while frozen or logging in; what does
	// not fit counts as NotSent. Default 64 KiB.
	MaxHeld int
}

func (c RunConfig) WithDefaults() RunConfig {
	if c.Timeout == 0 {
		c.Timeout = 2 * time.Second
	}
	if c.MaxActions == 0 {
		c.MaxActions = 100_000_000
	}
	if c.MaxPending == 0 {
		c.MaxPending = 1024
	}
	if c.MaxHeld == 0 {
		c.MaxHeld = 64 << 10
	}
	return c
}

func (c RunConfig) Validate() error {
	switch {
	case c.Timeout < 0 || c.Timeout > time.Hour:
		return &behave.ParamError{Owner: "run", Field: "Timeout", Value: c.Timeout, Reason: "must be in [0, 1h]"}
	case c.MaxActions < 0:
		return &behave.ParamError{Owner: "run", Field: "MaxActions", Value: c.MaxActions, Reason: "must not be negative"}
	case c.MaxPending < 0 || c.MaxPending > 1<<20:
		return &behave.ParamError{Owner: "run", Field: "MaxPending", Value: c.MaxPending, Reason: "must be in [0, 2^20]"}
	case c.MaxHeld < 0 || c.MaxHeld > 1<<30:
		return &behave.ParamError{Owner: "run", Field: "MaxHeld", Value: c.MaxHeld, Reason: "must be in [0, 2^30]"}
	}
	return nil
}

type connState uint8

const (
	down       connState = iota // no connection
	handshake                   // hello sent, reply awaited: sends are held
	open                        // session accepted, or dialled without a hello
	halfClosed                  // the client shut down its sending side: replies still come, nothing is sent
)

// pending is a message whose reply is awaited.
type pending struct {
	seq      uint64
	kind     behave.Kind
	id       uint64 // request id (0 for the hello), or the ping's timestamp
	intended int64
	sent     int64
}

// frameMeta describes frames written together: what to record once the
// write is done.
type frameMeta struct {
	kind     behave.Kind
	id       uint64
	intended int64
	n        int64 // frames (untracked kinds are counted in bulk)
	bytes    int64
	tracked  bool // a reply is awaited
}

// clientState is a worker's client, padded to whole cache lines. What
// every action reads comes first (its next action, its stream, its
// population, window end and connection state), so that it takes two of
// them: a worker goes from client to client in time order, and each one's
// state is likely cold.
type clientState struct {
	clientFields
	_ [(64 - unsafe.Sizeof(clientFields{})%64) % 64]byte
}

type clientFields struct {
	next     behave.Action
	stream   behave.Stream
	end      int64 // c.End
	pop      int   // c.Population
	gen      uint32
	state    connState
	left     bool // the stream is exhausted; next is the leave, if any
	frozen   bool
	lastDial bool // the last connection was opened with OpDial
	held     []byte
	heldMeta []frameMeta
	pending  []pending
	seq      uint64
	nextID   uint64 // last fresh request id issued
	lastID   uint64 // latest request id sent
	doneID   uint64 // latest request id answered
	// The frame an OpRaw with Count dribbles on the current connection (a
	// copy: the action's Data lasts until the stream's next action) and
	// how much of it is written.
	dribble    []byte
	dribbleOff int

	// halfCloseDue: an OpHalfClose came while the hello was awaited; it is
	// carried out once the held frames are written.
	halfCloseDue bool

	// What the run reports per client (see Result).
	FirstDial, FirstSend int64 // -1 until the first dial, the first write
	Cut                  int64 // when the server first disconnected or locked it out; -1 if never
	Disconnected, Locked bool

	C behave.Client
}

type timeout struct {
	deadline int64
	client   int32
	seq      uint64
}

// Worker runs a share of a plan's clients through one Driver, on one
// goroutine: an open-model scheduler. Every action has its intended time;
// the worker carries each out as soon as it is due, and one that is late
// (the worker was busy) is carried out at once, never rescheduled and
// never skipped, while its latency still counts from its intended time and
// its lateness is recorded as send lag; those still due when the run
// ends are counted, not carried out (see Run). Sends never wait for replies. A
// client whose window ends before the run's closes its connection Timeout
// after its window (its last replies have had their chance), and every
// client's connection is closed at the end of the run.
//
// Everything is recorded into one Recorder, at the driver's time of the
// record (a reply when it arrived, a send when it was written): run.go's
// RunSim and RunLoopback also keep a warm-up out of it and feed a time
// series. Kinds go out on the channels of DefaultChannels unless
// SetChannels says otherwise. Make one with NewWorker; Run it once. A
// Worker is not safe for concurrent use.
type Worker struct {
	d        Driver
	rec      *record.Recorder
	cfg      RunConfig
	channels behave.Channels
	Clients  []clientState
	sched    sched // clients with a next action, by (next.At, index)
	timeouts []timeout
	thead    int
	inflight int
	actions  int64
	end      int64
	draining bool
	wbuf     []byte
	meta     []frameMeta
	zeros    []byte
	token    []byte

	// Windows and the series (set by run.go; zero: everything is measured
	// and there is no series).
	Warmup int64
	// clientView: the run cannot read the server's counters (a Remote
	// without Stats), so the series takes the replies' decisions too.
	ClientView bool
	proto      proto.Protocol // how clients frame what they send
	clock      int64          // the latest record time: records are placed at max(t, clock)
	Series     *record.Series
	cur        int                       // the series interval acc holds
	curEnd     int64                     // the end of interval cur (0 before the first record)
	acc        []record.Interval         // per population, not yet merged into series (Response unused)
	Resp       []*hdrhistogram.Histogram // per population: acc's response times, reused
	// onLoop, if set, is called with the driver's time every loopEvery
	// iterations of Run's loop.
	OnLoop func(now int64)
	// untilEnd keeps the run going to its end when no client has anything
	// left to do: the driver has work of its own (a trace it replays).
	UntilEnd bool
}

// loopEvery is how often (in loop iterations) Run calls onLoop.
const loopEvery = 1024

// NewWorker prepares a worker for clients (whose Population indexes the
// recorder's labels) on driver d. The run ends at the latest client End.
func NewWorker(d Driver, rec *record.Recorder, clients []behave.Client, cfg RunConfig) (*Worker, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(clients) > behave.MaxClients {
		return nil, &behave.ParamError{Owner: "run", Field: "clients", Value: len(clients), Reason: "too many"}
	}
	w := &Worker{d: d, rec: rec, cfg: cfg, channels: behave.DefaultChannels, proto: proto.Reference{}, Clients: make([]clientState, len(clients)), cur: -1}
	for _, c := range clients {
		w.end = max(w.end, c.End)
	}
	keys := make([]int64, len(clients))
	for i, c := range clients {
		if c.Population < 0 || c.Population >= len(rec.Labels()) {
			return nil, fmt.Errorf("%w: client %d: population %d has no label", behave.ErrParam, c.Index, c.Population)
		}
		if c.Behaviour == nil {
			return nil, fmt.Errorf("%w: client %d has no behaviour", behave.ErrParam, c.Index)
		}
		cs := &w.Clients[i]
		cs.C = c
		cs.end, cs.pop = c.End, c.Population
		cs.stream = c.Stream()
		cs.FirstDial, cs.FirstSend, cs.Cut = -1, -1, -1
		keys[i] = gone
		if w.advance(cs) {
			keys[i] = cs.next.At
		}
	}
	w.sched.build(keys)
	return w, nil
}

// SetChannels sets the channels the kinds are sent on (see ChannelsOf).
// Call it before Run.
func (w *Worker) SetChannels(ch behave.Channels) { w.channels = ch }

// SetProtocol sets how the clients frame what they send (the reference
// protocol unless set). Call it before Run.
func (w *Worker) SetProtocol(p proto.Protocol) { w.proto = p }

// advance moves cs.next to the client's next action, or to its leave (a
// disconnect Timeout after its window, when that is before the end of the
// run), and reports whether there is one.
func (w *Worker) advance(cs *clientState) bool {
	if cs.left {
		return false
	}
	if cs.stream.Next(&cs.next) && cs.next.At < cs.end {
		return true
	}
	cs.left = true
	if leave := cs.end + int64(w.cfg.Timeout); leave < w.end {
		cs.next = behave.Action{At: leave, Op: behave.OpDisconnect}
		return true
	}
	return false
}

// Run carries out every action up to the end of the run (or MaxActions of
// them), counts those still due at the end, which a worker behind its
// schedule never got to, as HeldAtEnd (see overdue), then waits up to
// Timeout for the replies still awaited, counts the rest as Timeout, and
// closes every connection. It returns ctx's error if ctx ends first, or
// the driver's.
func (w *Worker) Run(ctx context.Context) error {
	defer w.rec.Flush()
	defer w.FlushSeries()
	var ev Event
	for loops := 1; ; loops++ {
		if w.OnLoop != nil && loops%loopEvery == 0 {
			w.OnLoop(w.d.Now())
		}
		until := w.end
		if w.sched.live > 0 {
			until = min(until, w.sched.tree[0].at)
		}
		if w.thead < len(w.timeouts) {
			until = min(until, w.timeouts[w.thead].deadline)
		}
		got, err := w.d.Poll(ctx, until, &ev)
		if err != nil {
			w.closeAll(w.d.Now())
			return err
		}
		if got {
			w.handle(&ev)
			continue
		}
		now := w.d.Now()
		if w.thead < len(w.timeouts) && w.timeouts[w.thead].deadline <= now {
			w.expire(now)
		}
		if now >= w.end {
			// Every action is due before the end: those left (the worker
			// fell behind) are counted, not carried out, so that a run
			// ends on time however far behind it is.
			w.overdue(now)
			break
		}
		if w.sched.live == 0 && w.inflight == 0 && !w.UntilEnd {
			break
		}
		if !w.fireDue(now) {
			w.rec.Stats.Stopped++
			break
		}
	}
	w.draining = true
	for w.inflight > 0 {
		got, err := w.d.Poll(ctx, w.timeouts[w.thead].deadline, &ev)
		if err != nil {
			w.closeAll(w.d.Now())
			return err
		}
		if got {
			w.handle(&ev)
		} else {
			w.expire(w.d.Now())
		}
	}
	w.closeAll(w.d.Now())
	return nil
}

// overdue counts every action still scheduled when the run ended at now,
// each due before the end (a worker behind its schedule), without carrying
// it out: what it would have sent is HeldAtEnd (in flight, not dropped:
// the run ended first), with its send lag to now recorded, so that a run
// that fell behind shows it in its send lag. Stats.Overdue counts them.
func (w *Worker) overdue(now int64) {
	// Whether each client would be up, and last dialled without a login,
	// had its actions been carried out: a connect brings it up (its
	// retries are then skipped), a disconnect takes it down.
	type conn struct{ up, dial bool }
	would := map[int32]conn{}
	for w.sched.live > 0 {
		i := w.sched.tree[0].i
		cs := &w.Clients[i]
		a, pop := &cs.next, cs.pop
		c, ok := would[i]
		if !ok {
			c = conn{up: cs.state != down, dial: cs.lastDial}
		}
		w.rec.Stats.Overdue++
		switch a.Op {
		case behave.OpSend:
			// As send counts it: what could never be written, or is due on
			// a client that would be down, is NotSent.
			kind, _, _, count, ok := w.sendable(a)
			o := record.HeldAtEnd
			if !ok || !c.up {
				o = record.NotSent
			}
			w.Record(now, pop, kind, record.SendLag, now-a.At)
			w.Add(now, pop, kind, o, count)
		case behave.OpFrames:
			w.framesOverdue(a, pop, c.up, now) // worker_frames.go
		case behave.OpRaw:
			o := record.HeldAtEnd
			if !c.up {
				o = record.NotSent
			}
			w.Record(now, pop, behave.KindRaw, record.SendLag, now-a.At)
			w.Add(now, pop, behave.KindRaw, o, 1)
		case behave.OpConnect, behave.OpDial, behave.OpRetry:
			// As connect counts them: a retry of a client that would be up
			// is skipped, and only a connect that logs in sends a hello.
			if a.Op == behave.OpRetry && c.up {
				w.rec.Stats.Skipped++
				break
			}
			if a.Op != behave.OpRetry {
				c.dial = a.Op == behave.OpDial
			}
			c.up = true
			w.Record(now, pop, behave.KindHello, record.SendLag, now-a.At)
			if !c.dial {
				w.Add(now, pop, behave.KindHello, record.HeldAtEnd, 1)
			}
		case behave.OpDisconnect, behave.OpHalfClose:
			c.up = false
		}
		would[i] = c
		if w.advance(cs) {
			w.sched.replace(cs.next.At)
		} else {
			w.sched.live--
			w.sched.replace(gone)
		}
	}
}

// batch bounds how many due actions are carried out between two polls, so
// that events keep flowing when the worker is behind.
const batch = 256

// fireDue carries out due actions up to the end of the run; false when
// MaxActions is reached.
func (w *Worker) fireDue(now int64) bool {
	for n := 0; n < batch && w.sched.live > 0; n++ {
		if n > 0 {
			now = w.d.Now()
		}
		// At the end, Run counts what is left (overdue): a batch that
		// takes long does not carry the run past it.
		if w.sched.tree[0].at > now || now >= w.end {
			return true
		}
		i := w.sched.tree[0].i
		cs := &w.Clients[i]
		if w.actions >= w.cfg.MaxActions {
			return false
		}
		w.actions++
		w.rec.Stats.Actions++
		w.exec(i, cs, &cs.next, now)
		// The action is done with: only now may its stream overwrite it.
		if w.advance(cs) {
			w.sched.replace(cs.next.At)
		} else {
			w.sched.live--
			w.sched.replace(gone)
		}
	}
	return true
}

func (w *Worker) exec(i int32, cs *clientState, a *behave.Action, now int64) {
	pop := cs.pop
	switch a.Op {
	case behave.OpConnect, behave.OpRetry, behave.OpDial:
		w.connect(i, cs, a, now)
	case behave.OpDisconnect:
		if cs.left {
			// The leave: the client's window is over, and what it still
			// holds (or awaits) was in flight at its end, as at the end
			// of the run, not dropped.
			w.heldAtEnd(cs, now)
		}
		if cs.state != down || len(cs.heldMeta) > 0 {
			w.lost(i, cs, true, now)
		}
	case behave.OpSend:
		w.send(i, cs, a, now)
	case behave.OpRaw:
		w.Record(now, pop, behave.KindRaw, record.SendLag, now-a.At)
		if cs.state == down || cs.state == halfClosed {
			w.Add(now, pop, behave.KindRaw, record.NotSent, 1)
			return
		}
		data, off := a.Data, cs.dribbleOff
		if a.Count > 0 {
			data = cs.dribblePiece(a.Data, a.Count)
		}
		w.wbuf = append(w.wbuf[:0], data...)
		w.meta = append(w.meta[:0], frameMeta{kind: behave.KindRaw, intended: a.At, n: 1, bytes: int64(len(data))})
		if !w.transmit(i, cs, now) {
			// A piece never sent is not part of the frame: the next one
			// goes on from where this one started.
			cs.dribbleOff = off
		}
	case behave.OpFreeze:
		cs.frozen = true
	case behave.OpFlush:
		cs.frozen = false
		w.flush(i, cs, now)
	case behave.OpHalfClose:
		w.halfClose(i, cs, now)
	case behave.OpFrames:
		w.frames(i, cs, a, now) // worker_frames.go
	}
}

func (w *Worker) connect(i int32, cs *clientState, a *behave.Action, now int64) {
	pop := cs.pop
	dial := a.Op == behave.OpDial
	if a.Op == behave.OpRetry {
		if cs.state != down {
			w.rec.Stats.Skipped++
			return
		}
		dial = cs.lastDial
	}
	cs.lastDial = dial
	if cs.state != down || len(cs.heldMeta) > 0 {
		w.lost(i, cs, true, now)
	}
	w.Record(now, pop, behave.KindHello, record.SendLag, now-a.At)
	cs.gen++
	cs.dribbleOff = 0 // a new connection starts a dribbled frame afresh
	conn := ConnID{i, cs.gen}
	if cs.FirstDial < 0 {
		cs.FirstDial = now
	}
	addr := cs.C.Addr
	if a.Addr != 0 && a.Op != behave.OpRetry {
		addr = a.Addr
	}
	if err := w.dial(conn, addr, a.Server); err != nil {
		w.Add(now, pop, behave.KindHello, record.Refused, 1)
		return
	}
	if dial {
		cs.state = open
		return
	}
	account := a.Account
	if account == 0 {
		account = cs.C.Account
	}
	// The token is the account in decimal, which the server reads back as
	// the same number (server.AccountID).
	w.token = strconv.AppendUint(w.token[:0], account, 10)
	label := cs.C.Label
	if len(label) > wire.MaxLabel {
		label = label[:wire.MaxLabel]
	}
	w.wbuf = w.proto.AppendHello(w.wbuf[:0], w.token, []byte(label))
	if err := w.d.Write(conn, w.wbuf); err != nil {
		w.Add(now, pop, behave.KindHello, record.Disconnected, 1)
		cs.state = open // so that lost closes it
		w.lost(i, cs, true, now)
		return
	}
	w.wrote(now, cs, behave.KindHello, 1, int64(len(w.wbuf)))
	cs.state = handshake
	w.track(i, cs, behave.KindHello, 0, a.At, now)
}

// SparseID is the n-th sparse request id (ReuseSparse): n scrambled by
// splitmix64's finaliser, a bijection of the 64-bit integers, so distinct
// n give distinct ids; 0 (which no request may carry) becomes 1, which
// the n that scrambles to 1 would also give, once in 2^64.
func SparseID(n uint64) uint64 {
	z := n + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return max(z, 1)
}

// halfClose shuts down the sending side of an open connection. A client
// still logging in does it once the hello is answered and what it held is
// written; a frozen or down one just closes.
func (w *Worker) halfClose(i int32, cs *clientState, now int64) {
	if cs.state == handshake && !cs.frozen {
		cs.halfCloseDue = true
		return
	}
	if cs.state != open || cs.frozen {
		if cs.state != down || len(cs.heldMeta) > 0 {
			w.lost(i, cs, true, now)
		}
		return
	}
	hc, ok := w.d.(halfCloser)
	if !ok {
		w.lost(i, cs, true, now)
		return
	}
	if err := hc.CloseWrite(ConnID{i, cs.gen}); err != nil {
		w.lost(i, cs, true, now)
		return
	}
	cs.state = halfClosed
}

// halfCloser is a Driver that can shut down a connection's sending side
// and keep reading it (OpHalfClose); a driver without it closes instead.
type halfCloser interface {
	CloseWrite(conn ConnID) error
}

// requestID picks the id of a request frame.
func (cs *clientState) requestID(r behave.Reuse) uint64 {
	switch {
	case r == behave.ReuseLast && cs.lastID != 0:
		return cs.lastID
	case r == behave.ReuseDone && cs.doneID != 0:
		cs.lastID = cs.doneID
		return cs.doneID
	case r == behave.ReuseSparse:
		cs.nextID++
		cs.lastID = SparseID(cs.nextID)
		return cs.lastID
	}
	cs.nextID++
	cs.lastID = cs.nextID
	return cs.nextID
}

// sendable resolves what an OpSend action sends: the kind it is counted
// under (an invalid kind under raw), its frame type and channel code, how
// many messages it stands for, and whether it can be written at all (a
// kind with a frame, a channel the policy has, a valid size), whatever the
// state of the client's connection.
func (w *Worker) sendable(a *behave.Action) (kind behave.Kind, t wire.Type, code uint8, count int64, ok bool) {
	kind, count = a.Kind, int64(max(a.Count, 1))
	t, _, ok = kind.Wire()
	if kind >= behave.NumKinds {
		kind = behave.KindRaw // an invalid kind is still counted, under raw
	}
	if ok && t != wire.TypePing {
		ch := w.channels[kind]
		ok = ch >= 0 && ch <= 255
		code = uint8(ch)
	}
	return kind, t, code, count, ok && a.Size >= 0 && a.Size <= wire.MaxFrameLimit
}

func (w *Worker) send(i int32, cs *clientState, a *behave.Action, now int64) {
	pop := cs.pop
	kind, t, code, count, ok := w.sendable(a)
	w.Record(now, pop, kind, record.SendLag, now-a.At)
	if !ok || cs.state == down || cs.state == halfClosed {
		w.Add(now, pop, kind, record.NotSent, count)
		return
	}
	if len(w.zeros) < a.Size {
		w.zeros = make([]byte, a.Size)
	}
	payload := w.zeros[:a.Size]
	w.wbuf, w.meta = w.wbuf[:0], w.meta[:0]
	ch := proto.Channel{Name: kind.String(), Code: code}
	if t == wire.TypeInput {
		for range count {
			w.wbuf = w.proto.AppendInput(w.wbuf, ch, payload)
		}
		w.meta = append(w.meta, frameMeta{kind: kind, intended: a.At, n: count, bytes: int64(len(w.wbuf))})
		w.transmit(i, cs, now)
		return
	}
	for range count {
		before := len(w.wbuf)
		var id uint64
		if t == wire.TypePing {
			id = uint64(a.At)
			w.wbuf = w.proto.AppendPing(w.wbuf, id)
		} else {
			id = cs.requestID(a.Reuse)
			w.wbuf = w.proto.AppendRequest(w.wbuf, ch, id, payload)
		}
		w.meta = append(w.meta, frameMeta{kind: kind, id: id, intended: a.At, n: 1, bytes: int64(len(w.wbuf) - before), tracked: true})
	}
	w.transmit(i, cs, now)
}

// transmit writes w.wbuf (described by w.meta) now, or holds it while the
// client is frozen or logging in. It reports false when it refused to hold
// it (MaxHeld), counting it NotSent.
func (w *Worker) transmit(i int32, cs *clientState, now int64) bool {
	if cs.frozen || cs.state == handshake {
		if len(cs.held)+len(w.wbuf) > w.cfg.MaxHeld {
			w.countAll(now, cs, w.meta, record.NotSent)
			return false
		}
		cs.held = append(cs.held, w.wbuf...)
		cs.heldMeta = append(cs.heldMeta, w.meta...)
		return true
	}
	w.write(i, cs, w.wbuf, w.meta, now)
	return true
}

func (w *Worker) countAll(t int64, cs *clientState, meta []frameMeta, o record.Outcome) {
	for _, m := range meta {
		w.Add(t, cs.pop, m.kind, o, m.n)
	}
}

func (w *Worker) write(i int32, cs *clientState, buf []byte, meta []frameMeta, now int64) {
	if err := w.d.Write(ConnID{i, cs.gen}, buf); err != nil {
		w.countAll(now, cs, meta, record.Disconnected)
		w.lost(i, cs, true, now)
		return
	}
	pop := cs.pop
	for _, m := range meta {
		w.wrote(now, cs, m.kind, m.n, m.bytes)
		if m.tracked {
			w.track(i, cs, m.kind, m.id, m.intended, now)
		} else {
			w.Add(now, pop, m.kind, record.Sent, m.n)
		}
	}
}

// flush writes what the client held, if it may send now.
func (w *Worker) flush(i int32, cs *clientState, now int64) {
	if cs.frozen || cs.state != open || len(cs.held) == 0 {
		return
	}
	buf, meta := cs.held, cs.heldMeta
	cs.held, cs.heldMeta = buf[:0], meta[:0]
	if w.draining {
		// The run is over: nothing more is written, and what was held
		// was in flight at the end, not dropped.
		w.countAll(now, cs, meta, record.HeldAtEnd)
		return
	}
	w.write(i, cs, buf, meta, now)
}

func (w *Worker) track(i int32, cs *clientState, kind behave.Kind, id uint64, intended, sent int64) {
	if len(cs.pending) >= w.cfg.MaxPending {
		w.Add(sent, cs.pop, kind, record.Overflow, 1)
		return
	}
	cs.seq++
	cs.pending = append(cs.pending, pending{seq: cs.seq, kind: kind, id: id, intended: intended, sent: sent})
	w.timeouts = append(w.timeouts, timeout{deadline: sent + int64(w.cfg.Timeout), client: i, seq: cs.seq})
	w.inflight++
}

// take removes and returns the oldest pending entry matching f.
func (w *Worker) take(cs *clientState, f func(*pending) bool) (pending, bool) {
	for j := range cs.pending {
		if f(&cs.pending[j]) {
			p := cs.pending[j]
			cs.pending = append(cs.pending[:j], cs.pending[j+1:]...)
			w.inflight--
			return p, true
		}
	}
	return pending{}, false
}

// dribblePiece returns the next n bytes of the frame the connection is
// dribbling, starting frame (a copy of it) when none is under way.
func (cs *clientState) dribblePiece(frame []byte, n int) []byte {
	if cs.dribbleOff == 0 {
		cs.dribble = append(cs.dribble[:0], frame...)
	}
	if len(cs.dribble) == 0 {
		return nil
	}
	end := min(cs.dribbleOff+n, len(cs.dribble))
	piece := cs.dribble[cs.dribbleOff:end]
	cs.dribbleOff = end % len(cs.dribble)
	return piece
}

// lost ends the client's connection: what was awaited is Disconnected,
// what was held is NotSent. close also closes it through the driver.
func (w *Worker) lost(i int32, cs *clientState, close bool, now int64) {
	w.forget(cs, now, record.Disconnected, record.NotSent)
	if close && cs.state != down {
		_ = w.d.Close(ConnID{i, cs.gen})
	}
	cs.state = down
	cs.halfCloseDue = false
}

// cutOff notes that the server disconnected the client (or, with locked,
// refused it with reason Lockout) at t.
func (cs *clientState) cutOff(t int64, locked bool) {
	cs.Disconnected = cs.Disconnected || !locked
	cs.Locked = cs.Locked || locked
	if cs.Cut < 0 {
		cs.Cut = t
	}
}

func (w *Worker) handle(ev *Event) {
	w.rec.Stats.Events++
	i := ev.Conn.Client
	if i < 0 || int(i) >= len(w.Clients) {
		w.rec.Stats.Unmatched++
		return
	}
	cs := &w.Clients[i]
	pop := cs.pop
	if ev.Conn.Gen != cs.gen || cs.state == down {
		// A stale connection's event: its awaited replies were settled
		// when it ended.
		if ev.Kind == EvReply || ev.Kind == EvPong {
			w.rec.Stats.Unmatched++
		}
		return
	}
	switch ev.Kind {
	case EvReply:
		p, ok := w.take(cs, func(p *pending) bool {
			return p.id == ev.ID && (p.kind == behave.KindHello) == (ev.ID == 0) && p.kind != behave.KindPing
		})
		if !ok {
			w.rec.Stats.Unmatched++
			return
		}
		o := record.ReplyOutcome(ev.Status, ev.Reason)
		if o == record.Outcome(core.Lockout) {
			cs.cutOff(ev.At, true)
		}
		w.settle(pop, p, ev.At, o)
		if o != record.Accepted && p.kind != behave.KindHello {
			w.throttled(cs, ev.At)
		}
		if p.kind != behave.KindHello {
			cs.doneID = ev.ID
		} else if o == record.Accepted {
			cs.state = open
			// The held frames are written now, which may be later than
			// the reply arrived (a loopback worker that was busy): their
			// service time and reply deadline count from the write.
			w.flush(i, cs, w.d.Now())
			if cs.halfCloseDue {
				cs.halfCloseDue = false
				w.halfClose(i, cs, w.d.Now())
			}
		} else {
			// The server refused the session (its Disconnect follows):
			// what that Disconnect would record, recorded here, since the
			// connection is closed now (a Lockout marked the client locked
			// above; the Disconnect also marks it disconnected).
			cs.cutOff(ev.At, false)
			w.Add(ev.At, pop, behave.KindSession, o, 1)
			w.lost(i, cs, true, ev.At)
		}
	case EvPong:
		p, ok := w.take(cs, func(p *pending) bool { return p.kind == behave.KindPing && p.id == ev.Timestamp })
		if !ok {
			w.rec.Stats.Unmatched++
			return
		}
		w.settle(pop, p, ev.At, record.Accepted)
	case EvDisconnect:
		o := record.Disconnected
		if ev.Reason != 0 {
			o = record.ReasonOutcome(ev.Reason)
		}
		if cs.state == handshake {
			// The server ended the session before it opened, without
			// answering the hello (a server answers the hello it checks,
			// so it never checked this one: it refused the connection, as
			// Gate.Open does by address, or dropped the read the hello came
			// in): that is the hello's outcome, and
			// its reason the server's decision on the hello, which the
			// server itself could not count under the client's population.
			if _, ok := w.take(cs, func(p *pending) bool { return p.kind == behave.KindHello }); ok {
				w.Add(ev.At, pop, behave.KindHello, o, 1)
				if ev.Reason != 0 {
					w.Decide(ev.At, pop, behave.KindHello, o, 1)
				}
			}
		}
		cs.cutOff(ev.At, false)
		if o == record.Outcome(core.Lockout) {
			cs.cutOff(ev.At, true)
		}
		w.Add(ev.At, pop, behave.KindSession, o, 1)
		w.lost(i, cs, true, ev.At)
		w.throttled(cs, ev.At)
	case EvClosed:
		if cs.state == halfClosed {
			// The close that follows the client's own half-close.
			w.lost(i, cs, false, ev.At)
			return
		}
		cs.cutOff(ev.At, false)
		w.Add(ev.At, pop, behave.KindSession, record.Disconnected, 1)
		w.lost(i, cs, false, ev.At)
		w.throttled(cs, ev.At)
	}
}

// settle records a reply to p that arrived at at.
func (w *Worker) settle(pop int, p pending, at int64, o record.Outcome) {
	w.Record(at, pop, p.kind, record.Response, at-p.intended)
	w.Record(at, pop, p.kind, record.Service, at-p.sent)
	w.Add(at, pop, p.kind, o, 1)
}

// expire counts replies awaited past their deadline as Timeout. A hello
// that times out gives up on its connection.
func (w *Worker) expire(now int64) {
	for w.thead < len(w.timeouts) && w.timeouts[w.thead].deadline <= now {
		t := w.timeouts[w.thead]
		w.thead++
		cs := &w.Clients[t.client]
		p, ok := w.take(cs, func(p *pending) bool { return p.seq == t.seq })
		if !ok {
			continue
		}
		w.Add(now, cs.pop, p.kind, record.Timeout, 1)
		if p.kind == behave.KindHello {
			w.lost(t.client, cs, true, now)
		}
	}
	if w.thead > 1024 && w.thead*2 > len(w.timeouts) {
		w.timeouts = w.timeouts[:copy(w.timeouts, w.timeouts[w.thead:])]
		w.thead = 0
	}
}

// closeAll ends the run: it closes every connection still open. Replies
// still awaited (only in a run stopped early: a finished run has waited for
// them) are Timeout once past their deadline, else HeldAtEnd, as are the
// frames still held: in flight at the end, not the Disconnected or NotSent
// drops that lost would count them as.
func (w *Worker) closeAll(now int64) {
	for i := range w.Clients {
		cs := &w.Clients[i]
		w.heldAtEnd(cs, now)
		if cs.state != down {
			w.lost(int32(i), cs, true, now)
		}
	}
}

// heldAtEnd counts what the client still holds or awaits a reply to as
// HeldAtEnd, and forgets it; replies already past their deadline (of any
// client) are Timeouts first.
func (w *Worker) heldAtEnd(cs *clientState, now int64) {
	w.expire(now)
	w.forget(cs, now, record.HeldAtEnd, record.HeldAtEnd)
}

// forget counts each reply cs awaits as awaited and each frame it holds
// as held, and drops both.
func (w *Worker) forget(cs *clientState, now int64, awaited, held record.Outcome) {
	for _, p := range cs.pending {
		w.Add(now, cs.pop, p.kind, awaited, 1)
	}
	w.inflight -= len(cs.pending)
	cs.pending = cs.pending[:0]
	w.countAll(now, cs, cs.heldMeta, held)
	cs.held, cs.heldMeta = cs.held[:0], cs.heldMeta[:0]
}

// sched orders a worker's clients by next action, (At, index), so equal
// times go in client order and a run is deterministic. It is a tournament
// (loser) tree over every client: tree[0] is the winner, the client whose
// action is next; tree[p], 0 < p < n, the loser of the match at node p,
// whose children are 2p and 2p+1, positions from n on being the clients
// (client c at n+c). A client with no action left takes part with the time
// gone, after every real one. The worker only ever changes the winner's
// time (its next action, or gone), and then replays the matches on its
// path to the root against the losers stored there: the nodes it visits do
// not depend on the comparisons, so their loads do not wait on each other
// (a heap's sift, whose every step waits on the last comparison, took
// three times as long). The keys are
// distinct (the index breaks ties), so the order in which clients come out
// depends on the keys only. The zero value has no clients.
type sched struct {
	tree []schedEntry
	live int // clients whose time is not gone
}

// gone is the time of a client with no action left: after every real one
// (an action's At is below its client's End, a leave below the run's end).
const gone = math.MaxInt64

type schedEntry struct {
	at int64 // w.clients[i].next.At, or gone
	i  int32
}

func (a schedEntry) less(b schedEntry) bool {
	return a.at < b.at || a.at == b.at && a.i < b.i
}

// build plays every match, client c's time being at[c] (gone: none).
func (s *sched) build(at []int64) {
	n := len(at)
	s.tree, s.live = make([]schedEntry, n), 0
	if n == 0 {
		return
	}
	// win[x] is the winner at node x: client x-n for x ≥ n.
	win := make([]schedEntry, 2*n)
	for c, t := range at {
		win[n+c] = schedEntry{t, int32(c)}
		if t != gone {
			s.live++
		}
	}
	for x := n - 1; x > 0; x-- {
		a, b := win[2*x], win[2*x+1]
		if b.less(a) {
			a, b = b, a
		}
		win[x], s.tree[x] = a, b
	}
	s.tree[0] = win[1]
}

// replace sets the winner's time to at and replays its matches. Each
// match's outcome only selects values (conditional moves, not branches:
// which way it goes cannot be predicted).
func (s *sched) replace(at int64) {
	t := s.tree
	cat, ci := at, t[0].i
	for p := (len(t) + int(ci)) >> 1; p > 0; p >>= 1 {
		o := &t[p]
		oat, oi := o.at, o.i
		win := oat < cat // o beats the current winner
		if oat == cat {
			win = oi < ci
		}
		// The loser stays at p; the winner goes on.
		lat, li := oat, oi
		if win {
			lat = cat
		}
		if win {
			li = ci
		}
		if win {
			cat = oat
		}
		if win {
			ci = oi
		}
		o.at, o.i = lat, li
	}
	t[0] = schedEntry{cat, ci}
}
