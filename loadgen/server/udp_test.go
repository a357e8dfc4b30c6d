package server

import (
	"context"
	"errors"
	"net"

	"testing"
	"time"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/wire"
)

func TestUDPHonestClientIsServed(t *testing.T) {
	s := startServer(t, udpConfig())
	if !s.UDPAddr().IsValid() {
		t.Fatal("no UDP address")
	}
	if err := udpHonest(s.UDPAddr(), "7", 5); err != nil {
		t.Fatal(err)
	}
	st := settledStats(t, s)
	p := st.Populations["honest"]
	// A hello and 5 × (input, request, ping).
	if p.Frames != 16 || p.Requests != 5 || p.Inputs != 5 || p.Pongs != 5 {
		t.Fatalf("frames %d requests %d inputs %d pongs %d, want 16, 5, 5, 5", p.Frames, p.Requests, p.Inputs, p.Pongs)
	}
	if p.Disconnects[CausePeerClosed] != 1 {
		t.Errorf("disconnects %v, want one PeerClosed", p.Disconnects)
	}
	if u := s.UDPStats(); u.Opened != 1 || u.Cookies != 1 || u.Sessions != 0 {
		t.Errorf("udp stats %+v", u)
	}
}

// A session that sends nothing for IdleTimeout is ended by the sweep, with
// a Disconnect datagram, and forgotten.
func TestUDPIdleSessionIsSweptAway(t *testing.T) {
	cfg := udpConfig()
	cfg.IdleTimeout = 200 * time.Millisecond
	s := startServer(t, cfg)
	c := udpDial(t, s.UDPAddr())
	c.mustHello(t, "1", "idle")
	start := time.Now()
	m, err := c.next(5 * time.Second)
	if err != nil || m.Type != wire.TypeDisconnect {
		t.Fatalf("got %+v, %v; want a Disconnect", m, err)
	}
	if took := time.Since(start); took < 150*time.Millisecond || took > 2*time.Second {
		t.Errorf("ended after %v, want about the idle timeout of 200ms", took)
	}
	st := settledStats(t, s)
	if st.Populations["idle"].Disconnects[CauseTimeout] != 1 {
		t.Errorf("disconnects %v", st.Populations["idle"].Disconnects)
	}
	if u := s.UDPStats(); u.Sessions != 0 {
		t.Errorf("%d sessions left in the table", u.Sessions)
	}
}

// A resent handshake (its Reply was lost) is answered again and opens no
// second session.
func TestUDPHandshakeRetransmitIsAnsweredAgain(t *testing.T) {
	s := startServer(t, udpConfig())
	c := udpDial(t, s.UDPAddr())
	ck, err := c.cookie("5", "retry")
	if err != nil {
		t.Fatal(err)
	}
	hs, _ := wire.AppendHandshake(nil, c.id, ck, []byte("5"), []byte("retry"))
	for i := range 2 {
		c.send(hs)
		m, err := c.next(5 * time.Second)
		if err != nil || m.Type != wire.TypeReply || m.ID != 0 || m.Status != wire.StatusOK {
			t.Fatalf("handshake %d: %+v, %v", i, m, err)
		}
	}
	if u := s.UDPStats(); u.Opened != 1 || u.Retransmits != 1 {
		t.Errorf("udp stats %+v", u)
	}
	c.leave()
	settledStats(t, s)
}

// TestUDPAmplification sends every kind of handshake an unverified
// source can send, each from a socket of its own, and checks that no
// source receives more bytes than it sent, and that the server's own
// count agrees.
func TestUDPAmplification(t *testing.T) {
	cfg := udpConfig()
	cfg.UDP.CookieLifetime = 100 * time.Millisecond
	cfg.MaxConns = 3 // the table-full path
	p := cfg.Policy
	p.Connections.PerAddress = new(uint32(1)) // the gate's own refusal of a verified source
	cfg.Policy = p
	s := startServer(t, cfg)
	srv := s.UDPAddr()

	peer := func() *uclient { return udpDial(t, srv) }
	hello, _ := wire.AppendHello(nil, []byte("1"), nil)
	unpadded := append(wire.AppendDatagramHeader(nil, wire.DatagramHandshake, 7), 0)
	unpadded = append(unpadded, hello...)
	validCookie := func(c *uclient, token string) []byte {
		t.Helper()
		ck, err := c.cookie(token, "amp")
		if err != nil {
			t.Fatal(err)
		}
		return ck
	}
	type path struct {
		name string
		run  func(c *uclient)
	}
	paths := []path{
		{"one byte", func(c *uclient) { c.send([]byte{1}) }},
		{"header only", func(c *uclient) { c.send(wire.AppendDatagramHeader(nil, wire.DatagramHandshake, 7)) }},
		{"unpadded handshake", func(c *uclient) { c.send(unpadded) }},
		{"padded handshake without cookie", func(c *uclient) {
			hs, _ := wire.AppendHandshake(nil, c.id, nil, []byte("1"), nil)
			c.send(hs)
		}},
		{"forged cookie", func(c *uclient) {
			hs, _ := wire.AppendHandshake(nil, c.id, make([]byte, wire.CookieSize), []byte("1"), nil)
			c.send(hs)
		}},
		{"another source's cookie", func(c *uclient) {
			other := peer()
			ck := validCookie(other, "1")
			hs, _ := wire.AppendHandshake(nil, c.id, ck, []byte("1"), nil)
			c.send(hs)
		}},
		{"expired cookie", func(c *uclient) {
			ck := validCookie(c, "1")
			time.Sleep(cfg.UDP.CookieLifetime + 20*time.Millisecond)
			hs, _ := wire.AppendHandshake(nil, c.id, ck, []byte("1"), nil)
			c.send(hs)
		}},
		{"valid cookie, bad version", func(c *uclient) {
			ck := validCookie(c, "1")
			hs, _ := wire.AppendHandshake(nil, c.id, ck, []byte("1"), nil)
			hs[wire.DatagramHeaderSize+1+len(ck)+wire.HeaderSize] = wire.Version + 1
			c.send(hs)
		}},
		{"valid cookie, bad token", func(c *uclient) {
			ck := validCookie(c, "")
			hs, _ := wire.AppendHandshake(nil, c.id, ck, nil, nil) // an empty token is refused
			c.send(hs)
		}},
		{"valid cookie, accepted", func(c *uclient) {
			ck := validCookie(c, "2")
			hs, _ := wire.AppendHandshake(nil, c.id, ck, []byte("2"), nil)
			c.send(hs)
		}},
		{"valid cookie, gate refuses the address", func(c *uclient) {
			// A second session of the same address: PerAddress is 1.
			first := peer()
			first.pc.Close()
			pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: c.addr().Addr().AsSlice()})
			if err != nil {
				t.Fatal(err)
			}
			second := &uclient{pc: pc, srv: srv, id: 99, buf: make([]byte, 1<<16)}
			t.Cleanup(func() { pc.Close() })
			ck := validCookie(c, "3")
			hs, _ := wire.AppendHandshake(nil, c.id, ck, []byte("3"), nil)
			c.send(hs)
			c.next(time.Second) // its session is open: the source is c's address
			ck = validCookie(second, "4")
			hs, _ = wire.AppendHandshake(nil, second.id, ck, []byte("4"), nil)
			second.send(hs)
			second.drain(200 * time.Millisecond)
			if second.recv > second.sent {
				t.Errorf("refused by the gate: received %d bytes, sent %d", second.recv, second.sent)
			}
		}},
		{"valid cookie, table full", func(c *uclient) {
			for i := range 4 { // MaxConns is 3
				o := peer()
				o.id = uint64(100 + i)
				ck := validCookie(o, "t")
				hs, _ := wire.AppendHandshake(nil, o.id, ck, []byte{'t', byte('a' + i)}, nil)
				o.send(hs)
				o.drain(200 * time.Millisecond)
				if o.recv > o.sent {
					t.Errorf("table full, peer %d: received %d bytes, sent %d", i, o.recv, o.sent)
				}
			}
			c.send(unpadded)
		}},
		{"client sends a cookie datagram", func(c *uclient) {
			c.send(wire.AppendCookieDatagram(nil, 7, new([wire.CookieSize]byte)))
		}},
		{"data for no session", func(c *uclient) { c.sendFrame(wire.AppendPing(nil, 1)) }},
	}
	for _, p := range paths {
		c := peer()
		p.run(c)
		c.drain(200 * time.Millisecond)
		if c.recv > c.sent {
			t.Errorf("%s: received %d bytes, sent %d", p.name, c.recv, c.sent)
		}
		t.Logf("%s: sent %d, received %d", p.name, c.sent, c.recv)
	}
	u := s.UDPStats()
	if u.UnverifiedSent > u.UnverifiedBytes || u.UnverifiedSent == 0 {
		t.Errorf("server: sent %d bytes to unverified sources, received %d from them", u.UnverifiedSent, u.UnverifiedBytes)
	}
	if u.ShortHandshake != 3 || u.BadCookies != 3 || u.Refused == 0 {
		t.Errorf("udp stats %+v", u)
	}
}

// A cookie opens a session only from the source it was minted for, and
// only within its lifetime.
func TestUDPCookieReplay(t *testing.T) {
	cfg := udpConfig()
	cfg.UDP.CookieLifetime = 200 * time.Millisecond
	s := startServer(t, cfg)
	a := udpDial(t, s.UDPAddr())
	ck, err := a.cookie("1", "replay")
	if err != nil {
		t.Fatal(err)
	}
	// Replayed from another address, and from another port of the same
	// address: each is answered with a fresh cookie of its own, not a
	// session.
	b := udpDial(t, s.UDPAddr())
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: a.addr().Addr().AsSlice()})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	samehost := &uclient{pc: pc, srv: s.UDPAddr(), id: a.id, buf: make([]byte, 1<<16)}
	for _, r := range []*uclient{b, samehost} {
		hs, _ := wire.AppendHandshake(nil, a.id, ck, []byte("1"), []byte("replay"))
		r.send(hs)
		d, err := r.datagram(2 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if k, _, rest, _ := wire.ParseDatagram(d); k != wire.DatagramCookie || string(rest) == string(ck) {
			t.Errorf("replay from %v: datagram kind %d, want a fresh cookie", r.addr(), k)
		}
	}
	// Expired: a fresh cookie again.
	time.Sleep(cfg.UDP.CookieLifetime + 20*time.Millisecond)
	hs, _ := wire.AppendHandshake(nil, a.id, ck, []byte("1"), []byte("replay"))
	a.send(hs)
	d, err := a.datagram(2 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	k, _, fresh, _ := wire.ParseDatagram(d)
	if k != wire.DatagramCookie {
		t.Fatalf("expired cookie: datagram kind %d, want a cookie", k)
	}
	if u := s.UDPStats(); u.Opened != 0 || u.BadCookies != 3 {
		t.Fatalf("udp stats %+v: a replayed or expired cookie opened a session", u)
	}
	// The fresh one works.
	hs, _ = wire.AppendHandshake(nil, a.id, fresh, []byte("1"), []byte("replay"))
	a.send(hs)
	if m, err := a.next(2 * time.Second); err != nil || m.Type != wire.TypeReply || m.Status != wire.StatusOK {
		t.Fatalf("fresh cookie: %+v, %v", m, err)
	}
	a.leave()
	settledStats(t, s)
}

// A session is found by its connection id and its source address: a peer
// that knows (or guesses) another's id reaches nothing from its own
// address, gets no answer, and cannot end the session.
func TestUDPSessionIDGuessing(t *testing.T) {
	s := startServer(t, udpConfig())
	victim := udpDial(t, s.UDPAddr())
	victim.mustHello(t, "1", "victim")
	for i := range 50 {
		g := udpDial(t, s.UDPAddr())
		g.id = victim.id
		if i%2 == 1 {
			g.id = victim.id + uint64(i) // a guess next to it
		}
		g.sendFrame(wire.AppendDisconnect(nil, 0))
		req, _ := wire.AppendRequest(nil, kReq, 1, nil)
		g.sendFrame(req)
		if n := g.drain(50 * time.Millisecond); n != 0 {
			t.Fatalf("guesser %d got %d datagrams", i, n)
		}
	}
	req, _ := wire.AppendRequest(nil, kReq, 1, []byte("buy"))
	victim.sendFrame(req)
	if m, err := victim.waitReply(1); err != nil || m.Status != wire.StatusOK {
		t.Fatalf("victim after the guessing: %+v, %v", m, err)
	}
	if u := s.UDPStats(); u.UnknownSession != 100 || u.Opened != 1 {
		t.Errorf("udp stats %+v", u)
	}
	victim.leave()
	st := settledStats(t, s)
	if p := st.Populations["victim"]; p.Frames != 2 || p.Disconnects[CausePeerClosed] != 1 {
		t.Errorf("victim: %+v", p)
	}
}

// A session flooding datagrams is held to the gate's byte budget per
// datagram (each charged at least the policy's minimum charge, however
// small) and ended by it, while honest players beside it are served. The
// channel and the frame budget allow the flood: the per-datagram charge is
// what stops it.
func TestUDPDatagramFloodIsLimited(t *testing.T) {
	cfg := udpConfig()
	cfg.Policy.Channels[kMove].Rate, cfg.Policy.Channels[kMove].Burst = new(1e5), new(1e5)
	cfg.Policy.Transport.Frames = core.Budget{Rate: new(1e7), Burst: new(1e6)}
	s := startServer(t, cfg)
	wait := udpHonestGroup(s.UDPAddr(), 3, 10)
	f := udpDial(t, s.UDPAddr())
	f.mustHello(t, "9", "flood")
	in, _ := wire.AppendInput(nil, kMove, []byte{1})
	start := time.Now()
	sent := 0
	for ; sent < 20000; sent++ {
		if err := f.sendFrame(in); err != nil {
			break
		}
		if sent%256 == 255 && len(s.Stats().Populations["flood"].Disconnects) > 0 {
			break
		}
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the flooder ended", func() bool { return len(s.Stats().Populations["flood"].Disconnects) > 0 })
	elapsed := time.Since(start)
	st := settledStats(t, s)
	p := st.Populations["flood"]
	pol := s.Gate().Policy()
	charge := float64(*pol.Transport.MinCharge)
	// Each datagram costs the minimum charge: the bucket's burst, and its
	// rate over the flood, pay for this many.
	most := uint64((*pol.Transport.Bytes.Burst + *pol.Transport.Bytes.Rate*elapsed.Seconds()) / charge)
	t.Logf("flood: sent %d in %v, %d frames counted, %d accepted (at most %d), dropped %v, disconnects %v", sent, elapsed, p.Frames, p.Inputs, most, p.Dropped, p.Disconnects)
	if p.Inputs > most {
		t.Errorf("flood: %d inputs accepted, more than the %d the byte budget pays for", p.Inputs, most)
	}
	if p.Disconnects[core.ByteLimit.String()] != 1 {
		t.Errorf("flood: disconnects %v, want one ByteLimit", p.Disconnects)
	}
}

// Garbage from a session's own source, in datagrams of kinds a client may
// not send, is charged to the session as malformed frames (a Data
// datagram's frame is checked like any frame); garbage from anywhere else
// is dropped unanswered.
func TestUDPGarbageDatagrams(t *testing.T) {
	s := startServer(t, udpConfig())
	c := udpDial(t, s.UDPAddr())
	c.mustHello(t, "1", "garbage")
	g := udpDial(t, s.UDPAddr())
	for i := range 200 {
		b := make([]byte, 1+i%80)
		for j := range b {
			b[j] = byte(i*31 + j*7)
		}
		g.send(b)
		// From the session's own source and id: any kind, any layout.
		kinds := []wire.DatagramKind{0, wire.DatagramCookie, 4, 200}
		c.send(append(wire.AppendDatagramHeader(nil, kinds[i%len(kinds)], c.id), b...))
	}
	if n := g.drain(100 * time.Millisecond); n != 0 {
		t.Errorf("garbage got %d answers", n)
	}
	eventually(t, 10*time.Second, "the garbage session ended by its strikes", func() bool {
		return len(s.Stats().Populations["garbage"].Disconnects) > 0
	})
	st := settledStats(t, s)
	p := st.Populations["garbage"]
	if p.Dropped[core.Malformed.String()] == 0 {
		t.Errorf("garbage: %+v", p)
	}
}

// Shutdown ends every UDP session with a Disconnect datagram and stops
// the listener's goroutines (goleak checks none is left).
func TestUDPShutdownDisconnectsSessions(t *testing.T) {
	s, err := New(udpConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	cs := make([]*uclient, 5)
	for i := range cs {
		cs[i] = udpDial(t, s.UDPAddr())
		cs[i].mustHello(t, string(rune('a'+i)), "stop")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for i, c := range cs {
		m, err := c.next(time.Second)
		if err != nil || m.Type != wire.TypeDisconnect || core.Reason(m.Reason) != core.Closed {
			t.Errorf("client %d: %+v, %v", i, m, err)
		}
	}
	if st := s.Stats(); st.Conns.Open != 0 {
		t.Errorf("%d sessions open after Shutdown", st.Conns.Open)
	}
}

func TestUDPConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		u     UDPConfig
		field string
	}{
		{UDPConfig{Addr: "10.1.2.3:0"}, "UDP.Addr"},
		{UDPConfig{Addr: "127.0.0.1:0", CookieLifetime: time.Millisecond}, "UDP.CookieLifetime"},
		{UDPConfig{Addr: "127.0.0.1:0", HandshakeRate: -1}, "UDP.HandshakeRate"},
	} {
		cfg := udpConfig()
		cfg.UDP = tc.u
		_, err := New(cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%+v: %v, want a ConfigError for %s", tc.u, err, tc.field)
		}
	}
}
