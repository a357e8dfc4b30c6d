package server

import (
	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// What the server adds to a trace when its gate has a recorder
// (core.WithRecorder in Config.GateOptions): what the gate cannot see.
// Every push is to the gate's lock-free buffer and never waits.

// recordLabel pushes the label of a session whose Hello named a
// population: its group. The server cannot tell honest from hostile.
func (c *conn) recordLabel(group string, now int64) {
	if rb := c.s.gate.Recorder(); rb != nil {
		rb.Push(core.GateRecord{Op: core.OpLabel, Time: now, Session: c.h, Group: group})
	}
}

// recordUnchecked pushes a frame of a read the byte budget refused, which
// the gate never sees, with the read's verdict: what a replay needs to
// decide it under a policy that would have taken the read.
func (c *conn) recordUnchecked(m *wire.Msg, err error, v core.Verdict, now int64) {
	rb := c.s.gate.Recorder()
	if rb == nil {
		return
	}
	r := core.GateRecord{Op: core.OpUnchecked, Time: now, Session: c.h, Size: clampSize(m.Size), Kind: unknownKind,
		Flags: core.FlagCharged, Action: v.Action, Reason: v.Reason, Shadow: v.Shadow}
	switch {
	case err != nil:
		r.Flags |= core.FlagMalformed
	case m.Type == wire.TypeInput || m.Type == wire.TypeRequest:
		r.Kind, r.Request = uint16(m.Kind), m.ID
	case m.Type == wire.TypePing && c.s.pingKind >= 0:
		r.Kind = uint16(c.s.pingKind)
	default:
		r.Flags |= core.FlagMalformed
	}
	rb.Push(r)
}
