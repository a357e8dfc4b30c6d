package server

import (
	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// runMax is the most frames of one read checked in one call of
// Gate.CheckBatchUntilDisconnect. A run lives on the reader's stack (72
// bytes a frame), so it is kept short; a read with more frames checks
// them in runs of this size.
const runMax = 16

// frameRun is the frames of one read that are checked together: frames
// on a channel (inputs, requests, and pings on a ping channel) decoded
// without error, in a row, whose handling after their check makes no gate
// call and stages nothing that later frames' checks or handling depend on.
// A request or a ping ends its run (an answer it cannot queue calls
// Gate.Done, which a later request's check reads; its reply or pong may
// fill the staging buffer, which ends the read), and so does any frame
// that is not on a channel (a Hello, a malformed or oversized frame),
// which is handled on its own after the run before it, as before.
//
// The frames of a run are checked at the read's now in order, and the
// check stops at the first Disconnect (Gate.CheckBatchUntilDisconnect):
// the verdicts, and everything the gate counts, are those of checking
// them one by one, as conn.frame does. Each is then handled, in order, as
// conn.gated handles its verdict. The zero value is an empty run.
type frameRun struct {
	n     int
	msgs  [runMax]core.Message
	out   [runMax]core.Verdict
	extra [runMax]runFrame
}

// runFrame is what handling a checked frame needs besides its Message.
type runFrame struct {
	ts   uint64 // a ping's timestamp
	row  int    // the channel row it counts under (Server.rowOf)
	ping bool
}

// add appends m (decoded with error err) to the run if it can be checked
// in one, and reports whether it did, and whether the run must be checked
// now: it is full, or m ends it.
func (r *frameRun) add(c *conn, m *wire.Msg, err error) (added, flush bool) {
	s := c.s
	if err != nil || s.noLimits {
		return false, false
	}
	var msg core.Message
	var f runFrame
	switch m.Type {
	case wire.TypeInput, wire.TypeRequest:
		var fl core.MessageFlags
		if req := s.chanReq; int(m.Kind) < len(req) && req[m.Kind] != (m.Type == wire.TypeRequest) {
			fl = core.FlagMalformed // as conn.frame
		}
		msg = c.message(uint16(m.Kind), m.ID, m.Size, fl)
	case wire.TypePing:
		if s.pingKind < 0 {
			return false, false
		}
		msg = c.message(uint16(s.pingKind), 0, m.Size, 0)
		f.ping, f.ts = true, m.Timestamp
	default:
		return false, false
	}
	f.row = s.rowOf(m, nil)
	r.msgs[r.n], r.extra[r.n] = msg, f
	r.n++
	return true, r.n == runMax || f.ping || msg.Request != 0
}

// checkRun checks the frames of run and handles each as conn.gated would,
// counting it as handleRead counts a frame, then empties run. It reports
// whether the connection is ending (a Disconnect, or staging that
// overflowed): the frames after that one were not checked, and are not
// counted, as handleRead counts no frame after the one that stops it.
func (c *conn) checkRun(run *frameRun, now int64) (stop bool) {
	n := run.n
	run.n = 0
	if n == 0 {
		return false
	}
	decided := c.s.gate.CheckBatchUntilDisconnect(run.msgs[:n], now, run.out[:n])
	if n > 1 {
		c.s.batchedFrames.Add(uint64(decided))
	}
	for i := range decided {
		m, f := &run.msgs[i], &run.extra[i]
		c.t.frames++
		c.t.row = f.row
		if c.checked(run.out[i], m.Kind, m.Request, f.ping, f.ts) || c.leaving != 0 {
			return true
		}
	}
	return false
}

// message is the gate's Message for a frame of the connection on channel
// kind, as the read's bytes have already been charged (Gate.Read).
func (c *conn) message(kind uint16, id uint64, size int, fl core.MessageFlags) core.Message {
	return core.Message{Session: c.h, Request: id, Match: c.match, Size: clampSize(size), Kind: kind, Flags: fl | core.FlagCharged}
}
