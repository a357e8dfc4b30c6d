package sim

import (
	"math"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// errNoHalfClose is CloseWrite's answer over WebSocket and UDP, as the
// loopback driver's: neither has a half-close (a client that stops
// sending closes the connection: the reference server reads the end of a
// WebSocket stream as a peer close, and a UDP client's close sends a
// Disconnect frame, which ends its session; either way it answers nothing
// more), so the worker closes the connection instead and the replies
// awaited are Disconnected.
var errNoHalfClose = drive.ErrConnClosed

// wsClientHeader is the size of the header of a client's WebSocket frame
// carrying n payload bytes: 2, 4 or 10 bytes, and the 4-byte mask every
// client frame has (RFC 6455 §5.2).
func wsClientHeader(n int) int {
	switch {
	case n < 126:
		return 2 + 4
	case n <= math.MaxUint16:
		return 4 + 4
	}
	return 10 + 4
}

// receiveWS reads p, one client write, as the server reads it over
// WebSocket (transport ws): the client sent each whole frame in p as one
// message, and a rest that is not a whole frame as one message of its own
// (wsraw.Conn.Write); the socket carries each message with its header and
// mask. The server charges those bytes in reads of at most maxRead and
// handles each message with the read that completes it (a message longer
// than the maximum frame with the read that completes its header, which
// is all the server reads of it), as server.wsConn does.
func (s *Sim) receiveWS(c *simConn, p []byte, now int64) {
	total := 0 // the write's socket bytes
	for off := 0; off < len(p); {
		size := wsMessageSize(p[off:])
		total += wsClientHeader(size) + size
		off += size
	}
	readEnd := 0 // the end, in the write's socket bytes, of the reads charged so far
	pos := 0     // the socket bytes of the messages before this one
	var v core.Verdict
	for off := 0; off < len(p) && c.open; {
		size := wsMessageSize(p[off:])
		msg := p[off : off+size]
		off += size
		hdr := wsClientHeader(size)
		end := pos + hdr + size
		oversize := size > s.maxFrame
		if oversize {
			end = pos + hdr
		}
		pos += hdr + size
		for readEnd < end {
			n := min(s.maxRead, total-readEnd)
			readEnd += n
			v = s.gate.Read(c.h, uint32(n), now)
			if v.Action == core.Disconnect {
				s.disconnect(c, v.Reason, now)
				return
			}
		}
		c.lastFrame, c.partialSince = now, 0
		s.frames++
		if oversize {
			s.gate.Check(core.Message{Session: c.h, Kind: unknownKind, Size: clampSize(s.maxFrame + 1), Flags: core.FlagCharged}, now)
			s.decide(c, behave.KindRaw, core.Oversize, now)
			s.disconnect(c, core.Oversize, now)
			return
		}
		m := &s.msg
		n, err := wire.Decode(msg, s.maxFrame, m)
		if err == nil && n != len(msg) || err == wire.ErrIncomplete || err == wire.ErrOversize {
			err = wire.ErrMalformed // not exactly one frame
		}
		if err != nil {
			m.Size = len(msg)
		}
		if v.Action != core.Accept {
			s.decide(c, s.kindOf(m, err), v.Reason, now)
			continue
		}
		s.frame(c, m, err, now)
	}
}

// wsMessageSize is the size of the message that starts p: its first
// frame if whole, else all of p.
func wsMessageSize(p []byte) int {
	size, err := wire.Peek(p, math.MaxInt32)
	if err != nil || size > len(p) {
		return len(p)
	}
	return size
}
