package server

import (
	"testing"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// TestOutboundBufferBound fills a connection's outbound buffer with no
// writer running: it grows from small to WriteBuffer and never beyond
// WriteBuffer + DisconnectSize, and the frame that does not fit ends the
// connection with QueueFull and a final Disconnect frame.
func TestOutboundBufferBound(t *testing.T) {
	cfg := testConfig()
	cfg.Policy.Queue.Commands = new(uint32(16)) // 16 pending requests: New needs 2 × 16 replies (736 bytes) of room
	cfg.WriteBuffer = 1000
	_, c, _ := pipeConn(t, cfg)
	sent := 0
	for c.push(wire.AppendReply(nil, uint64(sent+1), wire.StatusOK, 0, 0), nil) {
		sent++
		if cap(c.out) > cfg.WriteBuffer+wire.DisconnectSize {
			t.Fatalf("buffer capacity %d after %d replies", cap(c.out), sent)
		}
	}
	if want := cfg.WriteBuffer / wire.ReplySize; sent != want {
		t.Errorf("%d replies fit, want %d", sent, want)
	}
	if n := c.pop.Load().disconnects[cause(core.QueueFull)].Load(); !c.closing.Load() || n != 1 {
		t.Errorf("closing %v, %d QueueFull disconnects counted; want closing and 1", c.closing.Load(), n)
	}
	if cap(c.out) > cfg.WriteBuffer+wire.DisconnectSize {
		t.Errorf("buffer capacity %d", cap(c.out))
	}
	var m wire.Msg
	if _, err := wire.Decode(c.out[len(c.out)-wire.DisconnectSize:], 0, &m); err != nil || m.Type != wire.TypeDisconnect || core.Reason(m.Reason) != core.QueueFull {
		t.Errorf("last frame %+v, %v; want Disconnect QueueFull", m, err)
	}
	if c.push(wire.AppendPong(nil, 1), nil) {
		t.Error("a frame was queued after the connection closed")
	}
}

// A read whose staged frames would not fit ends the connection with
// QueueFull and sends none of them: the Disconnect alone follows what was
// queued before.
func TestPublishBeyondTheBufferEndsTheConnection(t *testing.T) {
	cfg := testConfig()
	cfg.Policy.Queue.Commands = new(uint32(16))
	cfg.WriteBuffer = 1000
	_, c, _ := pipeConn(t, cfg)
	if !c.push(wire.AppendReply(nil, 1, wire.StatusOK, 0, 0), nil) {
		t.Fatal("the first reply was refused")
	}
	for id := uint64(2); len(c.staged) <= cfg.WriteBuffer; id++ {
		c.reply(id, wire.StatusRejected, 1, 0)
	}
	c.publish()
	if n := c.pop.Load().disconnects[cause(core.QueueFull)].Load(); !c.closing.Load() || n != 1 {
		t.Errorf("closing %v, %d QueueFull disconnects counted; want closing and 1", c.closing.Load(), n)
	}
	if len(c.out) != wire.ReplySize+wire.DisconnectSize || len(c.staged) != 0 {
		t.Errorf("%d bytes queued, %d staged; want the first reply and the Disconnect, none staged", len(c.out), len(c.staged))
	}
}
