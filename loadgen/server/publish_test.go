package server

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicedev/sluice/atomicbucket"
	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// The reader's frames stay with it until its read is counted, even while
// the writer is busy with a tick's answer: a writer that loops after a
// write takes everything queued, so a frame the reader had queued at once
// would reach the client before the read's tally.
func TestReaderFramesWaitForTheirRead(t *testing.T) {
	s, c, b := pipeConn(t, testConfig())
	s.wg.Add(1)
	go c.writeLoop()
	defer c.disconnect(causePeerClosed, false)

	var answered atomic.Uint64
	c.answer(1, wire.StatusOK, &answered) // the tick's: the writer takes it and blocks on the pipe
	eventually(t, 2*time.Second, "the writer to take the tick's answer", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.out) == 0
	})
	c.reply(2, wire.StatusRejected, 1, 0) // the reader's, in the middle of a read

	// Read by hand, not with a tclient: a Framer's read that times out
	// ends it, and the second read here must time out.
	read := func(wait time.Duration) (wire.Msg, error) {
		buf := make([]byte, wire.ReplySize)
		b.SetReadDeadline(time.Now().Add(wait))
		if _, err := io.ReadFull(b, buf); err != nil {
			return wire.Msg{}, err
		}
		var m wire.Msg
		_, err := wire.Decode(buf, 0, &m)
		return m, err
	}
	if m, err := read(2 * time.Second); err != nil || m.ID != 1 {
		t.Fatalf("first frame %+v, %v: want the tick's answer to 1", m, err)
	}
	if m, err := read(100 * time.Millisecond); err == nil {
		t.Fatalf("read %+v before the reader published its read", m)
	}
	c.publish()
	if m, err := read(2 * time.Second); err != nil || m.ID != 2 {
		t.Fatalf("after publish: %+v, %v: want the reply to 2", m, err)
	}
}

// A read that ends the connection is counted, its drop and the disconnect
// alike, before its client can read the Disconnect (endRead's order). A
// check under a race rather than a proof: the disconnect is counted before
// the Disconnect is queued, but a drop counted late would show only when
// the client reads in the window between publish and the count.
func TestDisconnectIsCountedBeforeItIsRead(t *testing.T) {
	s := startServer(t, testConfig())
	for i := range 30 {
		c := mustDial(t, s.Addr())
		c.mustHello(t, fmt.Sprint(1000+i), "honest")
		c.mustWrite(t, []byte{0xFF, 0xFF, 0xFF, 0xFF, 2}) // a length no frame may have
		m, err := c.next(10 * time.Second)
		if err != nil || m.Type != wire.TypeDisconnect {
			t.Fatalf("got %+v, %v: want a Disconnect", m, err)
		}
		p := s.Stats().Populations["honest"]
		if p.Dropped["Oversize"] != uint64(i+1) || p.Disconnects["Oversize"] != uint64(i+1) {
			t.Fatalf("after Disconnect %d: dropped %d, disconnects %d", i+1, p.Dropped["Oversize"], p.Disconnects["Oversize"])
		}
	}
}

// A connection that another goroutine ends just before its Hello is read
// (Shutdown, here) stays in the population it ended in: its disconnect and
// its connection are counted together, not split between "(none)" and the
// label.
func TestHelloAfterTheEndKeepsThePopulation(t *testing.T) {
	cfg := testConfig()
	cfg.NoLimits = true
	s, c, _ := pipeConn(t, cfg)
	c.disconnect(cause(core.Closed), false)
	c.t.frames = 1 // as the read that carries the Hello counts it
	c.helloFrame(&wire.Msg{Type: wire.TypeHello, Version: wire.Version, Label: []byte("honest")}, 1)
	st := s.Stats()
	none, honest := st.Populations["(none)"], st.Populations["honest"]
	if none.Connections != 1 || none.Disconnects["Closed"] != 1 || honest.Connections != 0 || honest.Disconnects["Closed"] != 0 {
		t.Errorf("(none): %d connections, disconnects %v; honest: %d, %v; want the connection and its disconnect in (none)",
			none.Connections, none.Disconnects, honest.Connections, honest.Disconnects)
	}
}

// A read that ends the connection (an oversize length, here) after
// staging a pong that no longer fits beside the frames waiting for its
// client is counted, and its Disconnect sent, with the read's own cause:
// it was the first to end the connection, and the overflow found when the
// read's frames are queued only means that they are not sent. The writer
// starts once the read is over, so the tick's answers wait for it as they
// would for a client that reads nothing (which a real client cannot hold
// exactly: the kernel's buffers fill in steps of their own).
func TestReadCauseWinsOverItsOverflow(t *testing.T) {
	s, c, cl := loopbackConn(t, smallBufferConfig())
	var answered atomic.Uint64
	for len(c.out)+wire.ReplySize <= s.cfg.WriteBuffer {
		c.answer(answered.Load()+1, wire.StatusOK, &answered)
	}
	if len(c.out)+wire.PongSize <= s.cfg.WriteBuffer || c.closing.Load() {
		t.Fatalf("%d bytes waiting, closing %v: a pong would still fit", len(c.out), c.closing.Load())
	}
	b := wire.AppendPing(nil, 1)
	cl.mustWrite(t, append(b, 0xFF, 0xFF, 0xFF, 0xFF, byte(wire.TypeInput))) // a length no frame may have

	s.wg.Add(2)
	go c.readLoop()
	// The writer starts once the read is counted, below, or as the test
	// ends if it fails first: the reader's finish waits for it.
	startWriter := sync.OnceFunc(func() { go c.writeLoop() })
	t.Cleanup(startWriter)
	eventually(t, 10*time.Second, "the read to end the connection", func() bool {
		return len(s.Stats().Populations[PopulationNone].Disconnects) != 0
	})
	p := s.Stats().Populations[PopulationNone]
	if len(p.Disconnects) != 1 || p.Disconnects["Oversize"] != 1 || p.Dropped["Oversize"] != 1 || p.Pongs != 0 {
		t.Errorf("disconnects %v, dropped %v, %d pongs; want one Oversize disconnect and drop, no pong",
			p.Disconnects, p.Dropped, p.Pongs)
	}

	startWriter()
	for id := uint64(1); id <= answered.Load(); id++ {
		if m, err := cl.next(10 * time.Second); err != nil || m.Type != wire.TypeReply || m.ID != id {
			t.Fatalf("frame %d: %v id %d, %v; want the answer to %d", id, m.Type, m.ID, err, id)
		}
	}
	if m, err := cl.next(10 * time.Second); err != nil || m.Type != wire.TypeDisconnect || core.Reason(m.Reason) != core.Oversize {
		t.Errorf("after the answers: %v reason %v, %v; want a Disconnect with reason Oversize", m.Type, core.Reason(m.Reason), err)
	}
	if _, ok, err := cl.waitClosed(10 * time.Second); err != nil || ok {
		t.Errorf("another Disconnect %v, or %v, before the close", ok, err)
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the connection's goroutines did not end")
	}
	if st := s.Stats(); st.Conns.Open != 0 {
		t.Errorf("%d connections open", st.Conns.Open)
	}
}

// A read is counted before what it staged is published (endRead): with
// the connection's lock held, so that publishing must wait, the read's
// frames and bytes are already in Stats; only then do its pongs reach the
// outbound buffer. Published first, the counts would wait on the lock.
func TestReadIsCountedBeforeItsFramesArePublished(t *testing.T) {
	cfg := testConfig()
	cfg.NoLimits = true
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	for i := range 3 {
		data = wire.AppendPing(data, uint64(i))
	}
	c := s.newConn(&fakeConn{data: data})
	if c.framer, err = wire.NewFramer(c, s.maxFrame, s.readBuf); err != nil {
		t.Fatal(err)
	}
	n, err := c.framer.Fill()
	if err != nil || n != len(data) {
		t.Fatalf("read %d of %d bytes: %v", n, len(data), err)
	}

	c.mu.Lock()
	locked := true
	defer func() { // a failed check must not leave the read waiting forever
		if locked {
			c.mu.Unlock()
		}
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.handleRead(n, atomicbucket.Nanotime())
	}()
	eventually(t, 10*time.Second, "the read's frames and bytes to be counted", func() bool {
		p := s.Stats().Populations[PopulationNone]
		return p.Frames == 3 && p.Bytes == uint64(n)
	})
	if len(c.out) != 0 {
		t.Errorf("%d bytes published while the lock was held", len(c.out))
	}
	c.mu.Unlock()
	locked = false
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the read did not end once the lock was free")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if want := 3 * wire.PongSize; len(c.out) != want {
		t.Errorf("%d bytes published, want the three pongs' %d", len(c.out), want)
	}
}
