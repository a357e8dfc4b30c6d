package trace

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"
	"time"

	"github.com/sluicedev/sluice/core"
)

// PolicyDigest returns "sha256:" and the hex SHA-256 of p's normalized
// JSON: two policies with the same digest decide alike.
func PolicyDigest(p core.Policy) string {
	b, err := json.Marshal(p.Normalized())
	if err != nil {
		return ""
	}
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// Recorder turns a gate's GateRecords into trace records: it numbers the
// sessions, names the kinds by the recording policy's channels, hashes
// accounts and addresses when it has a Hasher, and writes records lost
// by the buffer as OpLost records where it found them missing. Drain it
// from one goroutine (Drain), or let Start do so every interval.
//
// Make one with NewRecorder; the zero value is not usable. Its methods
// are safe for concurrent use (they take a mutex; the gate never calls
// them, it only pushes to the buffer).
type Recorder struct {
	mu       sync.Mutex
	buf      *core.RecordBuffer
	w        *Writer
	hash     *Hasher
	names    []string
	sessions map[core.Session]uint64
	next     uint64
	lost     uint64 // of the buffer, already written
	origin   int64  // the gate's clock at trace time 0
	batch    []core.GateRecord
	cache    [sessionCacheSize]sessionEntry // in front of sessions
	rec      Record
	err      error
	stop     chan struct{}
	stopped  chan struct{}
}

// NewRecorder returns a Recorder that drains buf into w, naming kinds by
// the channels of p (the gate's policy). hash may be nil (accounts and
// addresses in the clear); it must be set when w's header says Hashed.
func NewRecorder(buf *core.RecordBuffer, w *Writer, p core.Policy, hash *Hasher) *Recorder {
	names := make([]string, len(p.Channels))
	for i, c := range p.Channels {
		names[i] = c.Name
	}
	return &Recorder{buf: buf, w: w, hash: hash, names: names, sessions: map[core.Session]uint64{},
		batch: make([]core.GateRecord, 0, recorderBatch)}
}

// recorderBatch is how many records a Recorder takes from its buffer at
// a time: its memory is this batch, whatever the buffer's size.
const recorderBatch = 1024

// sessionCacheSize is the size of a Recorder's direct-mapped cache of
// session numbers in front of its map: most records are of a session
// seen a moment ago, and a map lookup is a good part of a record's cost.
const sessionCacheSize = 256

type sessionEntry struct {
	gate  core.Session
	trace uint64
}

// session returns the trace's number of the gate's session g, 0 if it is
// not open.
func (r *Recorder) session(g core.Session) uint64 {
	e := &r.cache[uint64(g)%sessionCacheSize]
	if e.gate == g && g != 0 {
		return e.trace
	}
	s := r.sessions[g]
	if s != 0 {
		*e = sessionEntry{g, s}
	}
	return s
}

// SetOrigin makes trace time 0 the gate's time t (a server's monotonic
// clock reads its uptime, say): every record's time is written less t.
// Call it before the first Drain.
func (r *Recorder) SetOrigin(t int64) { r.origin = t }

// Lost returns how many records the buffer dropped so far.
func (r *Recorder) Lost() uint64 { return r.buf.Lost() }

// Drain writes every record the buffer holds now.
func (r *Recorder) Drain() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.drain()
}

func (r *Recorder) drain() error {
	if r.err != nil {
		return r.err
	}
	for {
		r.batch = r.buf.DrainN(r.batch[:0], recorderBatch)
		if lost := r.buf.Lost(); lost != r.lost {
			// The records lost were missing between the last drain and
			// this one's end: say so before what follows.
			r.rec = Record{Op: OpLost, Lost: lost - r.lost}
			if len(r.batch) > 0 {
				r.rec.Time = max(r.batch[0].Time-r.origin, 0)
			}
			r.lost = lost
			if r.err = r.w.Write(&r.rec); r.err != nil {
				return r.err
			}
		}
		if len(r.batch) == 0 {
			return nil
		}
		for i := range r.batch {
			if r.err = r.write(&r.batch[i]); r.err != nil {
				return r.err
			}
		}
		if len(r.batch) < recorderBatch {
			return nil
		}
	}
}

func (r *Recorder) write(g *core.GateRecord) error {
	rec := &r.rec
	t := g.Time
	if g.Op != core.OpDone { // a Done's time is the record before it's
		t = max(t-r.origin, 0)
	}
	*rec = Record{Time: t, Decision: Decision{Action: g.Action, Reason: g.Reason, Shadow: g.Shadow}}
	switch g.Op {
	case core.OpOpen:
		rec.Op = OpOpen
		if g.Session != 0 {
			r.next++
			r.sessions[g.Session] = r.next
			r.cache[uint64(g.Session)%sessionCacheSize] = sessionEntry{g.Session, r.next}
			rec.Session = r.next
		}
		if r.hash != nil {
			rec.AddrHash = r.hash.Addr(g.Addr.Addr())
		} else {
			rec.Addr = g.Addr
		}
	case core.OpAuthenticate:
		rec.Op, rec.Session, rec.Account = OpAuth, r.session(g.Session), g.Account
		if r.hash != nil && g.Account != 0 {
			rec.Account = r.hash.Account(g.Account)
		}
	case core.OpRead:
		rec.Op, rec.Session, rec.Size = OpRead, r.session(g.Session), g.Size
	case core.OpCheck, core.OpUnchecked:
		rec.Op = OpMessage
		if g.Op == core.OpUnchecked {
			rec.Op = OpUnchecked
		}
		rec.Session, rec.Size, rec.Request, rec.Match, rec.Flags = r.session(g.Session), g.Size, g.Request, g.Match, g.Flags
		if int(g.Kind) < len(r.names) {
			rec.Kind = r.names[g.Kind]
		}
	case core.OpDone:
		rec.Op, rec.Session, rec.Request = OpDone, r.session(g.Session), g.Request
	case core.OpClose:
		s, ok := r.sessions[g.Session]
		if !ok {
			return nil // a Close of no open session: the gate did nothing
		}
		delete(r.sessions, g.Session)
		if e := &r.cache[uint64(g.Session)%sessionCacheSize]; e.gate == g.Session {
			*e = sessionEntry{}
		}
		rec.Op, rec.Session = OpClose, s
	case core.OpLabel:
		rec.Op, rec.Session, rec.Label, rec.Group = OpLabel, r.session(g.Session), Label(min(g.Label, uint8(Hostile))), g.Group
		if len(rec.Group) > maxString {
			rec.Group = rec.Group[:maxString]
		}
	default:
		return nil
	}
	return r.w.Write(rec)
}

// Start drains the buffer every interval on a goroutine of its own until
// Close, and about once a second writes out the block so far (Writer.Flush),
// so that a server that dies loses at most a second of its trace.
func (r *Recorder) Start(interval time.Duration) {
	r.stop, r.stopped = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(r.stopped)
		t := time.NewTicker(interval)
		defer t.Stop()
		flushed := time.Now()
		for {
			select {
			case <-r.stop:
				return
			case now := <-t.C:
				err := r.Drain()
				if err == nil && now.Sub(flushed) >= time.Second {
					flushed = now
					r.mu.Lock()
					err = r.w.Flush()
					r.mu.Unlock()
				}
				if err != nil {
					r.mu.Lock()
					r.err = err
					r.mu.Unlock()
					return
				}
			}
		}
	}()
}

// Close stops the goroutine Start started (if any), drains what is left,
// and closes the Writer (not the file under it).
func (r *Recorder) Close() error {
	if r.stop != nil {
		close(r.stop)
		<-r.stopped
		r.stop = nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.drain()
	if cerr := r.w.Close(); err == nil {
		err = cerr
	}
	return err
}
