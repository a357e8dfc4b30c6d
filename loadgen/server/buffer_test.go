package server

import (
	"sync/atomic"
	"testing"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// TestOutboundBufferBound fills a connection's outbound buffer with no
// writer running: it grows from small to WriteBuffer and never beyond
// WriteBuffer + DisconnectSize, and the frame that does not fit ends the
// connection with QueueFull and a final Disconnect frame.
func TestOutboundBufferBound(t *testing.T) {
	_, c, _ := pipeConn(t, smallBufferConfig())
	limit := c.s.cfg.WriteBuffer
	var answered atomic.Uint64
	for !c.closing.Load() {
		c.answer(answered.Load()+1, wire.StatusOK, &answered)
		if cap(c.out) > limit+wire.DisconnectSize {
			t.Fatalf("buffer capacity %d after %d replies", cap(c.out), answered.Load())
		}
	}
	if want := uint64(limit / wire.ReplySize); answered.Load() != want {
		t.Errorf("%d replies queued and counted, want %d", answered.Load(), want)
	}
	if n := c.pop.Load().disconnects[cause(core.QueueFull)].Load(); n != 1 {
		t.Errorf("%d QueueFull disconnects counted; want 1", n)
	}
	var m wire.Msg
	if _, err := wire.Decode(c.out[len(c.out)-wire.DisconnectSize:], 0, &m); err != nil || m.Type != wire.TypeDisconnect || core.Reason(m.Reason) != core.QueueFull {
		t.Errorf("last frame %+v, %v; want Disconnect QueueFull", m, err)
	}
	c.answer(1, wire.StatusOK, &answered)
	if want := uint64(limit / wire.ReplySize); answered.Load() != want || len(c.out) != int(want)*wire.ReplySize+wire.DisconnectSize {
		t.Errorf("a reply was queued or counted after the connection closed")
	}
}

// smallBufferConfig is testConfig with a 1000-byte WriteBuffer: 16 pending
// requests, as New needs room for 2 × 16 replies (736 bytes).
func smallBufferConfig() Config {
	cfg := testConfig()
	cfg.Policy.Queue.Commands = new(uint32(16))
	cfg.WriteBuffer = 1000
	return cfg
}

// A read that stages frames past WriteBuffer ends the connection with
// QueueFull: staging stops at WriteBuffer, the reader leaves there. Here a
// reply was queued before, so the staged frames do not fit beside it and
// none is sent: the Disconnect alone follows that reply.
func TestPublishBeyondTheBufferEndsTheConnection(t *testing.T) {
	_, c, _ := pipeConn(t, smallBufferConfig())
	var answered atomic.Uint64
	c.answer(1, wire.StatusOK, &answered)
	if answered.Load() != 1 {
		t.Fatal("the first reply was refused")
	}
	staged := 0
	for id := uint64(2); c.leaving == 0; id++ {
		c.reply(id, wire.StatusRejected, 1, 0)
		staged++
		if cap(c.staged) > c.s.cfg.WriteBuffer {
			t.Fatalf("staged capacity %d after %d replies", cap(c.staged), staged)
		}
	}
	if c.leaving != cause(core.QueueFull) || len(c.staged) != c.s.cfg.WriteBuffer/wire.ReplySize*wire.ReplySize {
		t.Errorf("leaving %v with %d bytes staged; want QueueFull with %d", c.leaving, len(c.staged), c.s.cfg.WriteBuffer/wire.ReplySize*wire.ReplySize)
	}
	c.publish()
	if n := c.pop.Load().disconnects[cause(core.QueueFull)].Load(); !c.closing.Load() || n != 1 {
		t.Errorf("closing %v, %d QueueFull disconnects counted; want closing and 1", c.closing.Load(), n)
	}
	if len(c.out) != wire.ReplySize+wire.DisconnectSize || len(c.staged) != 0 {
		t.Errorf("%d bytes queued, %d staged; want the first reply and the Disconnect, none staged", len(c.out), len(c.staged))
	}
}
