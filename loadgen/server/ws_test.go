package server

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/internal/wsraw"
	"github.com/sluicedev/sluice/loadgen/wire"
)

func wsConfig() Config {
	cfg := testConfig()
	cfg.WebSocket = WSConfig{Addr: "127.0.0.1:0", UpgradeTimeout: 500 * time.Millisecond}
	return cfg
}

// wsclient is an honest test client over WebSocket: the reference frames
// of tclient, one message each.
type wsclient struct {
	c  *wsraw.Conn
	fr *wire.Framer
}

func wsDial(t testing.TB, addr netip.AddrPort) *wsclient {
	t.Helper()
	c, err := wsraw.Dial(context.Background(), addr, nextSrc(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fr, _ := wire.NewFramer(c, wire.DefaultMaxFrame, 0)
	return &wsclient{c: c, fr: fr}
}

func (c *wsclient) write(t testing.TB, b []byte) {
	t.Helper()
	c.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.c.Write(b); err != nil {
		t.Fatal(err)
	}
}

func (c *wsclient) next(d time.Duration) (wire.Msg, error) {
	c.c.SetReadDeadline(time.Now().Add(d))
	var m wire.Msg
	err := c.fr.ReadMsg(&m)
	return m, err
}

func (c *wsclient) hello(t testing.TB, token string) {
	t.Helper()
	b, _ := wire.AppendHello(nil, []byte(token), []byte("ws"))
	c.write(t, b)
	m, err := c.next(5 * time.Second)
	if err != nil || m.Type != wire.TypeReply || m.Status != wire.StatusOK {
		t.Fatalf("hello: %v %+v", err, m)
	}
}

// wsHonest runs one honest player over WebSocket, as honest does over TCP.
func wsHonest(addr netip.AddrPort, token string, n int) error {
	c, err := wsraw.Dial(context.Background(), addr, nextSrc(), 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	fr, _ := wire.NewFramer(c, wire.DefaultMaxFrame, 0)
	next := func() (wire.Msg, error) {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		var m wire.Msg
		return m, fr.ReadMsg(&m)
	}
	b, _ := wire.AppendHello(nil, []byte(token), []byte("honest"))
	if _, err := c.Write(b); err != nil {
		return err
	}
	if m, err := next(); err != nil || m.Status != wire.StatusOK {
		return fmt.Errorf("hello: %v %+v", err, m)
	}
	for i := 1; i <= n; i++ {
		b, _ = wire.AppendInput(b[:0], kMove, []byte{1, 2, 3, 4})
		b, _ = wire.AppendRequest(b, kReq, uint64(i), []byte("buy"))
		b = wire.AppendPing(b, uint64(i))
		c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write(b); err != nil {
			return fmt.Errorf("round %d: %w", i, err)
		}
		for {
			m, err := next()
			if err != nil {
				return fmt.Errorf("round %d: %w", i, err)
			}
			if m.Type == wire.TypePong {
				continue
			}
			if m.Type != wire.TypeReply || m.ID != uint64(i) || m.Status != wire.StatusOK {
				return fmt.Errorf("round %d: got %v id %d status %v reason %v", i, m.Type, m.ID, m.Status, core.Reason(m.Reason))
			}
			break
		}
		time.Sleep(15 * time.Millisecond)
	}
	return nil
}

func TestWSHonestClientIsServed(t *testing.T) {
	s := startServer(t, wsConfig())
	if !s.WSAddr().IsValid() {
		t.Fatal("no WebSocket address")
	}
	if err := wsHonest(s.WSAddr(), "7", 5); err != nil {
		t.Fatal(err)
	}
	st := settledStats(t, s)
	p := st.Populations["honest"]
	// A hello and 5 × (input, request, ping).
	if p.Frames != 16 || p.Requests != 5 || p.Inputs != 5 {
		t.Fatalf("frames %d requests %d inputs %d, want 16, 5, 5", p.Frames, p.Requests, p.Inputs)
	}
	checkAccounting(t, st)
}

// A WebSocket ping is answered by a pong, charged as a reference ping:
// the policy's ping channel (burst 100) answers a flood's first 100 and
// drops the rest; a longer flood is ended by its strikes.
func TestWSPingFloodIsChargedToThePingChannel(t *testing.T) {
	s := startServer(t, wsConfig())
	nc := rawWS(t, s.WSAddr())
	hello, _ := wire.AppendHello(nil, []byte("8"), []byte("ws"))
	var mu sync.Mutex
	pongs, reason, ok := 0, core.None, false
	done := make(chan struct{})
	go func() {
		defer close(done)
		serverFrames(nc, 10*time.Second, func(op byte, p []byte) {
			mu.Lock()
			defer mu.Unlock()
			var m wire.Msg
			switch {
			case op == wsraw.OpPong:
				pongs++
			case op == wsraw.OpBinary && func() bool { _, err := wire.Decode(p, 0, &m); return err == nil }() && m.Type == wire.TypeDisconnect:
				reason, ok = core.Reason(m.Reason), true
			}
		})
	}()
	flood := func(n int) {
		b := wsraw.AppendFrame(nil, true, wsraw.OpBinary, hello)[:0]
		for i := range n {
			b = wsraw.AppendFrame(b, true, wsraw.OpPing, []byte{byte(i)})
		}
		nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
		nc.Write(b)
	}
	nc.Write(wsraw.AppendFrame(nil, true, wsraw.OpBinary, hello))
	const n = 110
	flood(n)
	eventually(t, 5*time.Second, "every ping counted", func() bool { return s.Stats().Populations["ws"].Channels[ChannelPing].Frames == n })
	ping := s.Stats().Populations["ws"].Channels[ChannelPing]
	eventually(t, 5*time.Second, "the pongs of the accepted pings", func() bool { mu.Lock(); defer mu.Unlock(); return uint64(pongs) == ping.Accepted })
	if ping.Accepted < 100 || ping.Accepted > 105 || sumDrops(ping) != n-ping.Accepted {
		t.Fatalf("ping row %+v: want the burst of 100 (and a few ms of refill) accepted and answered, the rest dropped", ping)
	}

	flood(1000)
	<-done
	// The client may see the Disconnect, or a reset (the server closes
	// with the flood's rest unread): the server's count says which.
	if d := settledStats(t, s).Populations["ws"].Disconnects; d[core.Lockout.String()] != 1 {
		t.Fatalf("disconnects %v, want Lockout (the client read Disconnect %v: %v); %+v", d, reason, ok, s.Stats().Populations["ws"])
	}
	if a := s.Stats().Populations["ws"].Channels[ChannelPing].Accepted; a > 110 {
		t.Fatalf("%d pings accepted, more than the burst and its refill", a)
	}
}

// serverFrames calls fn with each WebSocket frame the server sends on nc
// (server frames are not masked), until it closes or d passes.
func serverFrames(nc net.Conn, d time.Duration, fn func(op byte, p []byte)) {
	nc.SetReadDeadline(time.Now().Add(d))
	br := bufio.NewReader(nc)
	for {
		var h [2]byte
		if _, err := io.ReadFull(br, h[:]); err != nil {
			return
		}
		n := int(h[1] & 0x7f)
		switch n {
		case 126:
			var b [2]byte
			io.ReadFull(br, b[:])
			n = int(binary.BigEndian.Uint16(b[:]))
		case 127:
			return // never: the server's frames are small
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(br, p); err != nil {
			return
		}
		fn(h[0]&0x0f, p)
	}
}

func sumDrops(c ChannelStats) uint64 {
	var n uint64
	for _, v := range c.Dropped {
		n += v
	}
	return n
}

// rawWS upgrades a raw socket, from its own source address.
func rawWS(t testing.TB, addr netip.AddrPort) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(nextSrc(), 0)), Timeout: 5 * time.Second}
	nc, err := d.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	if err := wsraw.Upgrade(nc, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	return nc
}

// readClosed reads the server's frames until it closes the socket, and
// returns the reason of the reference Disconnect among them (ok false if
// none came) and the code of a WebSocket close frame (0 if none came).
func readClosed(t testing.TB, nc net.Conn, d time.Duration) (reason core.Reason, ok bool, closeCode int) {
	t.Helper()
	serverFrames(nc, d, func(op byte, p []byte) {
		switch op {
		case wsraw.OpBinary:
			var m wire.Msg
			if _, err := wire.Decode(p, 0, &m); err == nil && m.Type == wire.TypeDisconnect {
				reason, ok = core.Reason(m.Reason), true
			}
		case wsraw.OpClose:
			if len(p) >= 2 {
				closeCode = int(binary.BigEndian.Uint16(p))
			}
		}
	})
	return reason, ok, closeCode
}

// A header that declares more than the maximum frame ends the connection
// with reason Oversize before any of its payload is sent or read.
func TestWSOversizedFrameHeaderDisconnects(t *testing.T) {
	s := startServer(t, wsConfig())
	nc := rawWS(t, s.WSAddr())
	nc.Write(wsraw.AppendHeader(nil, true, wsraw.OpBinary, 1<<40))
	_, _, code := readClosed(t, nc, 5*time.Second)
	if code != websocket.CloseMessageTooBig {
		t.Fatalf("close code %d, want %d (message too big)", code, websocket.CloseMessageTooBig)
	}
	st := settledStats(t, s)
	if n := st.Populations[PopulationNone].Disconnects[core.Oversize.String()]; n != 1 {
		t.Fatalf("disconnects %v, want one Oversize", st.Populations[PopulationNone].Disconnects)
	}
}

// A message sent as one-byte fragments past the maximum frame is refused
// once its fragments add up to more than the maximum frame; it never
// grows the server's buffer beyond it.
func TestWSFragmentFloodIsBounded(t *testing.T) {
	s := startServer(t, wsConfig())
	nc := rawWS(t, s.WSAddr())
	var b []byte
	b = wsraw.AppendFrame(b, false, wsraw.OpBinary, []byte{0})
	for range s.MaxFrame() + 10 {
		b = wsraw.AppendFrame(b, false, wsraw.OpContinuation, []byte{0})
	}
	go func() { nc.SetWriteDeadline(time.Now().Add(5 * time.Second)); nc.Write(b) }()
	_, _, code := readClosed(t, nc, 5*time.Second)
	st := settledStats(t, s)
	d := st.Populations[PopulationNone].Disconnects
	if d[core.Oversize.String()]+d[core.ByteLimit.String()] != 1 {
		t.Fatalf("disconnects %v (close code %d), want one for Oversize or ByteLimit", d, code)
	}
}

// A client that never finishes its upgrade request is closed after
// UpgradeTimeout, and holds no slot after that.
func TestWSSlowUpgradeIsClosed(t *testing.T) {
	s := startServer(t, wsConfig())
	nc, err := net.Dial("tcp", s.WSAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	req := wsraw.Request(s.WSAddr().String())
	nc.Write(req[:20]) // and nothing more
	start := time.Now()
	nc.SetReadDeadline(start.Add(5 * time.Second))
	io.Copy(io.Discard, nc)
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("closed after %v, want about UpgradeTimeout (500ms)", el)
	}
	eventually(t, 2*time.Second, "no connection pending", func() bool { return s.ws.pending.Load() == 0 })
}

// A few hundred hostile WebSocket peers at once (slow upgrades, ping
// floods, fragment floods, oversized headers) leave honest players, over
// WebSocket and TCP, their service, and leave no goroutine behind
// (TestMain's goleak). The heap they hold is ws_memory_test's.
func TestWSHostilePeersLeaveHonestService(t *testing.T) {
	if testing.Short() {
		t.Skip("opens hundreds of sockets")
	}
	cfg := wsConfig()
	cfg.MaxConns = 4096
	s := startServer(t, cfg)
	const perKind = 250
	var hostile sync.WaitGroup
	stop := make(chan struct{})
	conns := make(chan net.Conn, 4*perKind)
	// The oversized headers written: an attacker whose upgrade did not
	// finish in time (a loaded machine, the race detector) sends none.
	var oversized atomic.Int64
	for k := range 4 {
		for range perKind {
			hostile.Go(func() {
				d := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(nextSrc(), 0)), Timeout: 5 * time.Second}
				nc, err := d.Dial("tcp", s.WSAddr().String())
				if err != nil {
					return
				}
				conns <- nc
				if k == 0 { // slow upgrade
					nc.Write(wsraw.Request(s.WSAddr().String())[:30])
					<-stop
					return
				}
				if wsraw.Upgrade(nc, 5*time.Second) != nil {
					return
				}
				var b []byte
				switch k {
				case 1: // ping flood
					for range 200 {
						b = wsraw.AppendFrame(b, true, wsraw.OpPing, []byte("ping"))
					}
				case 2: // fragment flood
					b = wsraw.AppendFrame(b, false, wsraw.OpBinary, []byte{0})
					for range 2000 {
						b = wsraw.AppendFrame(b, false, wsraw.OpContinuation, []byte{0})
					}
				case 3: // oversized header
					b = wsraw.AppendHeader(b, true, wsraw.OpBinary, 1<<62)
				}
				nc.SetWriteDeadline(time.Now().Add(3 * time.Second))
				if _, err := nc.Write(b); err == nil && k == 3 {
					oversized.Add(1)
				}
				<-stop
			})
		}
	}
	wait := honestGroup(s.Addr(), 4, 20)
	var wsErr [4]error
	var wsWG sync.WaitGroup
	for i := range wsErr {
		wsWG.Go(func() { wsErr[i] = wsHonest(s.WSAddr(), fmt.Sprintf("ws-honest-%d", i), 20) })
	}
	if err := wait(); err != nil {
		t.Fatalf("honest TCP players: %v", err)
	}
	wsWG.Wait()
	if err := errors.Join(wsErr[:]...); err != nil {
		t.Fatalf("honest WebSocket players: %v", err)
	}
	close(stop)
	close(conns)
	for nc := range conns {
		nc.Close()
	}
	hostile.Wait()
	st := settledStats(t, s)
	checkAccounting(t, st)
	sent := oversized.Load()
	if sent < perKind/2 {
		t.Fatalf("only %d of %d oversized headers were written: the attack did not happen", sent, perKind)
	}
	if n := st.Populations[PopulationNone].Disconnects[core.Oversize.String()]; n < uint64(sent) {
		t.Fatalf("%d Oversize disconnects, want ≥ %d (every oversized header written, and fragment floods)", n, sent)
	}
}

func TestWSConfigIsChecked(t *testing.T) {
	cfg := testConfig()
	cfg.WebSocket.Addr = "0.0.0.0:0"
	_, err := New(cfg)
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "WebSocket.Addr" || !errors.Is(err, ErrNonLoopback) {
		t.Fatalf("New with a WebSocket address not loopback: %v, want a ConfigError on WebSocket.Addr", err)
	}
	cfg.WebSocket = WSConfig{Addr: "127.0.0.1:0", UpgradeTimeout: -time.Second}
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "WebSocket.UpgradeTimeout") {
		t.Fatalf("New with a negative upgrade timeout: %v", err)
	}
}

// A connection that completes no message for IdleTimeout is closed with
// reason Timeout (gorilla reports the deadline as its own net.Error).
func TestWSIdleConnectionTimesOut(t *testing.T) {
	cfg := wsConfig()
	cfg.IdleTimeout = 300 * time.Millisecond
	s := startServer(t, cfg)
	c := wsDial(t, s.WSAddr())
	c.hello(t, "9")
	st := settledStats(t, s)
	if d := st.Populations["ws"].Disconnects; d["Timeout"] != 1 {
		t.Fatalf("disconnects %v, want one Timeout", d)
	}
}

// Every byte the socket carries after the upgrade is counted and charged,
// WebSocket headers and masks included: a message cut into one-byte
// fragments costs 7 bytes a payload byte, not 1.
func TestWSBytesAreTheSocketsBytes(t *testing.T) {
	s := startServer(t, wsConfig())
	nc := rawWS(t, s.WSAddr())
	hello, _ := wire.AppendHello(nil, []byte("10"), []byte("ws"))
	b := wsraw.AppendFrame(nil, true, wsraw.OpBinary, hello)
	in, _ := wire.AppendInput(nil, kMove, []byte{1, 2, 3, 4})
	for range 10 {
		for i := range in {
			op := byte(wsraw.OpContinuation)
			if i == 0 {
				op = wsraw.OpBinary
			}
			b = wsraw.AppendFrame(b, i == len(in)-1, op, in[i:i+1])
		}
	}
	nc.Write(b)
	eventually(t, 5*time.Second, "every message decided", func() bool { return s.Stats().Frames == 11 })
	nc.Close()
	st := settledStats(t, s)
	if st.Bytes != uint64(len(b)) {
		t.Fatalf("%d bytes counted, want the %d the socket carried (the payloads are %d)", st.Bytes, len(b), len(hello)+10*len(in))
	}
	if m := st.Populations["ws"].Channels["move"]; m.Accepted != 10 {
		t.Fatalf("move row %+v, want the 10 fragmented messages accepted", m)
	}
}
