package drive

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicedev/sluice/loadgen/proto"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// ConnID names one connection of one client: the client's index within
// its worker and the connection's number (1 for the client's first, +1 for
// each new one). A driver treats it as an opaque key; events carry it back.
type ConnID struct {
	Client int32
	Gen    uint32
}

func (c ConnID) String() string { return fmt.Sprintf("c%d/%d", c.Client, c.Gen) }

// ErrConnClosed is returned for a write on a connection the client closed.
var ErrConnClosed = errors.New("loadgen: sim: connection closed")

// EventKind is what an inbound event is.
type EventKind uint8

// The event kinds.
const (
	// EvReply: the server answered a request (ID 0: the hello).
	EvReply EventKind = iota + 1
	// EvPong: the server echoed a ping's Timestamp.
	EvPong
	// EvDisconnect: the server sent a Disconnect frame with Reason.
	EvDisconnect
	// EvClosed: the connection ended (EOF, reset, a frame the client
	// could not decode) without the client closing it.
	EvClosed
)

// Event is something the server did, as a driver reports it: the fields
// of the frame it received and when.
type Event struct {
	Conn ConnID
	Kind EventKind
	// At is the driver's time (ns since the run's start) when the frame
	// arrived: a loopback driver stamps it on its reading goroutine, not
	// when the worker gets to it.
	At         int64
	ID         uint64      // EvReply
	Status     wire.Status // EvReply
	Reason     uint8       // EvReply, EvDisconnect
	RetryAfter uint64      // EvReply, ns
	Timestamp  uint64      // EvPong
}

// EventFromMsg fills ev from a frame a client received (Reply, Pong or
// Disconnect) and reports whether the frame is one a client expects. A
// driver decodes server frames with wire and hands them on through it.
func EventFromMsg(conn ConnID, at int64, m *wire.Msg, ev *Event) bool {
	*ev = Event{Conn: conn, At: at}
	switch m.Type {
	case wire.TypeReply:
		ev.Kind, ev.ID, ev.Status, ev.Reason, ev.RetryAfter = EvReply, m.ID, m.Status, m.Reason, m.RetryAfter
	case wire.TypePong:
		ev.Kind, ev.Timestamp = EvPong, m.Timestamp
	case wire.TypeDisconnect:
		ev.Kind, ev.Reason = EvDisconnect, m.Reason
	default:
		return false
	}
	return true
}

// EventFromFrame fills ev from a frame a Protocol read, as EventFromMsg
// does from a reference frame.
func EventFromFrame(conn ConnID, at int64, f *proto.Frame, ev *Event) bool {
	*ev = Event{Conn: conn, At: at}
	switch f.Kind {
	case proto.Reply:
		ev.Kind, ev.ID, ev.Status, ev.Reason, ev.RetryAfter = EvReply, f.ID, wire.Status(f.Status), f.Reason, f.RetryAfter
	case proto.Pong:
		ev.Kind, ev.Timestamp = EvPong, f.Timestamp
	case proto.Disconnect:
		ev.Kind, ev.Reason = EvDisconnect, f.Reason
	default:
		return false
	}
	return true
}

// Driver carries one worker's actions to a server and brings back what the
// server did. Two implement it: loopback (real sockets to
// loadgen/server on 127.0.0.1, real time) and sim (virtual time, straight
// into core.Gate). A worker owns its driver: the methods are called from
// the worker's goroutine only (a loopback driver's reading goroutines hand
// events to Poll through a channel). Byte slices passed in are only valid
// during the call.
type Driver interface {
	// Now returns the driver's time: ns since the run's start.
	Now() int64
	// Dial opens conn from source-address group addr. An error means the
	// connection could not be opened (recorded as Refused).
	Dial(conn ConnID, addr uint32) error
	// Write writes p on conn as one write (several frames, or any bytes).
	// An error means the connection is gone.
	Write(conn ConnID, p []byte) error
	// Close closes conn from the client's side. Closing a closed or
	// unknown connection does nothing. A driver may still deliver an
	// EvClosed for it; the worker ignores it.
	Close(conn ConnID) error
	// Poll waits for the next event until Now() ≥ until, or ctx ends. It
	// returns true with *ev filled, or false once until is reached (at
	// once when it has passed and no event is waiting). The sim driver
	// hands events out in order of At; the loopback driver in the order
	// its reading goroutines delivered them, which across connections can
	// differ slightly from At order (the worker takes the latest time it
	// has seen).
	Poll(ctx context.Context, until int64, ev *Event) (bool, error)
}

// VirtualTime is a virtual clock with a queue of events for a driver that
// simulates the server in-process (sim): Push queues an event at its time;
// Poll hands out the earliest event due by until, moving the clock to it,
// or moves the clock to until. Events at one time come out in the order
// they were pushed, so a run is deterministic. The zero value is a clock at
// 0 with no events; it is not safe for concurrent use.
type VirtualTime struct {
	now int64
	seq uint64
	q   []queued // min-heap by (At, seq)
}

type queued struct {
	ev  Event
	seq uint64
}

func (a queued) before(b queued) bool {
	return a.ev.At < b.ev.At || a.ev.At == b.ev.At && a.seq < b.seq
}

// Now returns the virtual time.
func (v *VirtualTime) Now() int64 { return v.now }

// Len returns the number of queued events.
func (v *VirtualTime) Len() int { return len(v.q) }

// Peek returns the time of the earliest queued event; ok is false when
// none is queued.
func (v *VirtualTime) Peek() (at int64, ok bool) {
	if len(v.q) == 0 {
		return 0, false
	}
	return v.q[0].ev.At, true
}

// AdvanceTo moves the clock to t (never back), for a driver that acts at t
// (a simulated server's tick) before it hands out what is due. Events
// queued before t are still handed out, in order, with their own At.
func (v *VirtualTime) AdvanceTo(t int64) { v.now = max(v.now, t) }

// Push queues ev; an At before Now is moved to Now.
func (v *VirtualTime) Push(ev Event) {
	ev.At = max(ev.At, v.now)
	v.seq++
	v.q = append(v.q, queued{ev, v.seq})
	for i := len(v.q) - 1; i > 0; {
		p := (i - 1) / 2
		if !v.q[i].before(v.q[p]) {
			break
		}
		v.q[i], v.q[p] = v.q[p], v.q[i]
		i = p
	}
}

// Poll implements Driver.Poll in virtual time. It never blocks.
func (v *VirtualTime) Poll(ctx context.Context, until int64, ev *Event) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if len(v.q) > 0 && v.q[0].ev.At <= max(until, v.now) {
		*ev = v.q[0].ev
		v.now = max(v.now, ev.At)
		last := len(v.q) - 1
		v.q[0] = v.q[last]
		v.q = v.q[:last]
		for i := 0; ; {
			l, r, m := 2*i+1, 2*i+2, i
			if l < last && v.q[l].before(v.q[m]) {
				m = l
			}
			if r < last && v.q[r].before(v.q[m]) {
				m = r
			}
			if m == i {
				break
			}
			v.q[i], v.q[m] = v.q[m], v.q[i]
			i = m
		}
		return true, nil
	}
	v.now = max(v.now, until)
	return false, nil
}

// RealTime is the monotonic clock since a run's start and a Poll over a
// channel of events, for a driver on real sockets (loopback): its reading
// goroutines stamp events with Now and send them on the channel. Make one
// with NewRealTime; it is not safe for concurrent use, except Now. Close
// it once its Polls are done.
type RealTime struct {
	Start  time.Time
	timer  *time.Timer
	Wake   *wakeTimer // made by the first Poll that sleeps
	noWake bool       // no wakeTimer to be had: Go's timer alone
	Woken  int        // waits the wakeTimer ended: only TestLoopbackPollWakesOnTheWakeTimer reads it
}

// NewRealTime returns a clock whose time 0 is now.
func NewRealTime() *RealTime { return newRealTimeAt(time.Now()) }

func newRealTimeAt(start time.Time) *RealTime {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &RealTime{Start: start, timer: t}
}

// Clone returns a clock with the same time 0 and its own timer, for
// another worker of the same run.
func (r *RealTime) Clone() *RealTime { return newRealTimeAt(r.Start) }

// Now returns ns since the start, on the monotonic clock. It is safe for
// concurrent use.
func (r *RealTime) Now() int64 { return int64(time.Since(r.Start)) }

// Poll waits for an event on events until Now() ≥ until, or ctx ends. An
// ended ctx is noticed even while events keep coming, so that a stream of
// events never holds up a cancelled run.
//
// It sleeps on two timers and ends at the first to fire: a wakeTimer and
// Go's own. With the process idle, a
// Go timer fires up to a millisecond late, because the runtime then sleeps
// in epoll_wait, whose timeout is in whole milliseconds; every send after
// such a wake-up is late by as much, which the run records as send lag and
// adds to every response time measured from the intended send. The
// wakeTimer's timerfd ends that epoll_wait when it expires. With every P
// busy, the runtime polls the network seldom and the timerfd can be the
// late one, while Go's timer, checked at each scheduling pass, fires on
// time. Where there is no wakeTimer (not Linux, timerfd_create failed, or
// after Close), Go's timer alone is used.
func (r *RealTime) Poll(ctx context.Context, events <-chan Event, until int64, ev *Event) (bool, error) {
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case e := <-events:
		*ev = e
		return true, nil
	default:
	}
	d := time.Duration(until - r.Now())
	if d <= 0 {
		return false, ctx.Err()
	}
	var woke <-chan struct{} // nil, never ready, without a wakeTimer
	if w := r.wakeTimer(); w != nil {
		if w.Reset(d) == nil {
			woke = w.C
		} else {
			r.Close() // not seen on an open timerfd; Go's timer still works
		}
	}
	// Since Go 1.23 a Reset timer never delivers a stale value, and it
	// never fires early: d was measured before the Reset.
	r.timer.Reset(d)
	defer r.timer.Stop()
	for {
		select {
		case e := <-events:
			*ev = e
			return true, nil
		case <-r.timer.C:
			return false, nil
		case <-woke:
			if r.Now() >= until { // perhaps an expiry this Reset overtook
				r.Woken++
				return false, nil
			}
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// wakeTimer returns the clock's wakeTimer, made on first use; nil if it
// has none. A precise wake-up is a refinement, so a failure falls back to
// Go's timers rather than ending the run.
func (r *RealTime) wakeTimer() *wakeTimer {
	if r.Wake == nil && !r.noWake {
		if w, err := newWakeTimer(); err == nil {
			r.Wake = w
		} else {
			r.noWake = true
		}
	}
	return r.Wake
}

// Close releases the clock's wakeTimer (its timerfd and goroutine); Poll
// sleeps on Go's timers alone from then on.
func (r *RealTime) Close() {
	if r.Wake != nil {
		r.Wake.Close()
		r.Wake = nil
	}
	r.noWake = true
}
