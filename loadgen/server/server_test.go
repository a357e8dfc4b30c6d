package server

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/wire"
)

func TestHonestClientGetsReplies(t *testing.T) {
	s := startServer(t, testConfig())
	if !s.Addr().Addr().IsLoopback() || s.Addr().Port() == 0 {
		t.Fatalf("Addr() = %v, want a loopback address with a chosen port", s.Addr())
	}
	if err := honestGroup(s.Addr(), 3, 20)(); err != nil {
		t.Fatal(err)
	}
	st := settledStats(t, s)
	p := st.Populations["honest"]
	if p.Connections != 3 || p.Requests != 60 || p.Pongs != 60 || p.Accepted != 3+3*60 {
		t.Errorf("honest stats: %+v", p)
	}
	eventually(t, 5*time.Second, "inputs applied", func() bool { return s.Stats().Populations["honest"].Inputs == 60 })
	if len(p.Dropped)+len(p.Rejected) != 0 {
		t.Errorf("honest traffic was refused: %+v", p)
	}
	if p.Disconnects[CausePeerClosed] != 3 {
		t.Errorf("disconnects %v, want 3 PeerClosed", p.Disconnects)
	}
	if st.Ticks == 0 || st.Frames != p.Frames || st.Bytes == 0 || st.ReadService <= 0 {
		t.Errorf("server stats: %+v", st)
	}
}

func TestRejectCarriesReasonAndRetryAfter(t *testing.T) {
	s := startServer(t, testConfig())
	c := mustDial(t, s.Addr())
	c.mustHello(t, "7", "honest")
	var b []byte
	for id := uint64(1); id <= 3; id++ {
		b, _ = wire.AppendRequest(b, kSlow, id, nil)
	}
	c.mustWrite(t, b)
	got := map[uint64]wire.Msg{}
	for len(got) < 3 {
		m, err := c.next(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		got[m.ID] = m
	}
	if got[1].Status != wire.StatusOK {
		t.Errorf("request 1: %+v", got[1])
	}
	for _, id := range []uint64{2, 3} {
		m := got[id]
		if m.Status != wire.StatusRejected || core.Reason(m.Reason) != core.ChannelLimit || m.RetryAfter == 0 || m.RetryAfter > uint64(time.Second) {
			t.Errorf("request %d: status %v reason %v retry %v", id, m.Status, core.Reason(m.Reason), time.Duration(m.RetryAfter))
		}
	}
	if n := s.Stats().Populations["honest"].Rejected["ChannelLimit"]; n != 2 {
		t.Errorf("rejected ChannelLimit = %d, want 2", n)
	}
}

func TestUnauthenticatedRequestFails(t *testing.T) {
	s := startServer(t, testConfig())
	c := mustDial(t, s.Addr())
	b, _ := wire.AppendRequest(nil, kReq, 9, nil)
	c.mustWrite(t, b)
	m, err := c.waitReply(9)
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != wire.StatusFailed {
		t.Errorf("status %v, want Failed", m.Status)
	}
	if p := s.Stats().Populations[PopulationNone]; p.Failed != 1 {
		t.Errorf("(none) stats: %+v", p)
	}
}

func TestWrongClassFramesAreMalformed(t *testing.T) {
	s := startServer(t, testConfig())
	c := mustDial(t, s.Addr())
	c.mustHello(t, "8", "mixed")
	b, _ := wire.AppendRequest(nil, kMove, 1, nil) // a request on an input channel
	b, _ = wire.AppendInput(b, kReq, nil)          // an input on a request channel
	b, _ = wire.AppendRequest(b, kReq, 2, nil)     // fine
	c.mustWrite(t, b)
	if m, err := c.waitReply(2); err != nil || m.Status != wire.StatusOK {
		t.Fatalf("request 2: %+v %v", m, err)
	}
	if n := s.Stats().Populations["mixed"].Dropped["Malformed"]; n != 2 {
		t.Errorf("dropped Malformed = %d, want 2", n)
	}
}

// TestPingWithoutPingChannel: without a ping channel the server's own
// bucket answers the burst of pings and drops the rest as FrameLimit, all
// counted under (ping); an input naming the missing channel counts under
// (unknown).
func TestPingWithoutPingChannel(t *testing.T) {
	cfg := testConfig()
	cfg.Policy.Channels = cfg.Policy.Channels[:2] // no "ping" channel
	cfg.PingRate = 5
	s := startServer(t, cfg)
	c := mustDial(t, s.Addr())
	c.mustHello(t, "9", "pinger")
	var b []byte
	for i := range 20 {
		b = wire.AppendPing(b, uint64(i+1))
	}
	b, _ = wire.AppendInput(b, kPing, nil) // channel 2 is gone: unknown
	b, _ = wire.AppendRequest(b, kReq, 1, nil)
	c.mustWrite(t, b)
	pongs := 0
	for {
		m, err := c.next(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if m.Type != wire.TypePong {
			if m.Type != wire.TypeReply || m.ID != 1 {
				t.Fatalf("got %v id %d, want pongs then reply 1", m.Type, m.ID)
			}
			break
		}
		pongs++
	}
	if pongs != 5 {
		t.Errorf("%d pongs, want the burst of 5", pongs)
	}
	c.nc.Close()
	st := settledStats(t, s)
	p := st.Populations["pinger"]
	if p.Dropped["FrameLimit"] != 15 || p.Pongs != 5 {
		t.Errorf("pinger stats: %+v", p)
	}
	if cs := p.Channels[ChannelPing]; cs.Accepted != 5 || cs.Dropped["FrameLimit"] != 15 {
		t.Errorf("(ping): %+v", cs)
	}
	if cs := p.Channels[ChannelUnknown]; cs.Dropped["Malformed"] != 1 {
		t.Errorf("(unknown): %+v", cs)
	}
}

func TestAccountStrikesOutliveTheConnection(t *testing.T) {
	s := startServer(t, testConfig())
	c := mustDial(t, s.Addr())
	c.mustHello(t, "cheater", "hostile")
	var b []byte
	for range 10 {
		b = wire.AppendHeader(b, 1, 99) // unknown type: malformed, weight 4
	}
	c.mustWrite(t, b)
	r, ok, err := c.waitClosed(10 * time.Second)
	if err != nil || !ok || r != core.Malformed {
		t.Fatalf("first connection: reason %v (frame %v), err %v; want Malformed", r, ok, err)
	}
	// The same account from another address starts where it left off:
	// its score (16, decaying) is above the shed rung, so its hello is
	// refused with Lockout (a session admitted at the drop stage would
	// have its first message refused, and be back at the disconnect rung).
	c2 := mustDial(t, s.Addr())
	hb, _ := wire.AppendHello(nil, []byte("cheater"), []byte("hostile"))
	c2.mustWrite(t, hb)
	r, ok, err = c2.waitClosed(10 * time.Second)
	if err != nil || !ok || r != core.Lockout {
		t.Fatalf("second connection: reason %v (frame %v), err %v; want Lockout", r, ok, err)
	}
	st := settledStats(t, s)
	p := st.Populations["hostile"]
	if p.Disconnects["Malformed"] != 1 || p.Disconnects["Lockout"] != 1 || p.Connections != 2 {
		t.Errorf("hostile stats: %+v", p)
	}
}

func TestMaxConns(t *testing.T) {
	cfg := testConfig()
	cfg.MaxConns = 3
	s := startServer(t, cfg)
	cs := players(t, s, 3, 'a', "p")
	extra := mustDial(t, s.Addr())
	if r, ok, err := extra.waitClosed(10 * time.Second); err != nil || !ok || r != core.TableFull {
		t.Fatalf("extra connection: reason %v, Disconnect frame %v, err %v; want TableFull", r, ok, err)
	}
	st := s.Stats()
	if st.Conns.Refused != 1 || st.Conns.Open != 3 || st.Conns.Peak != 3 || st.Conns.Accepted != 4 {
		t.Errorf("conn stats: %+v", st.Conns)
	}
	// The admitted ones are still served.
	b, _ := wire.AppendRequest(nil, kReq, 1, nil)
	cs[0].mustWrite(t, b)
	if m, err := cs[0].waitReply(1); err != nil || m.Status != wire.StatusOK {
		t.Fatalf("reply: %+v %v", m, err)
	}
	// Closing one makes room.
	cs[2].nc.Close()
	eventually(t, 10*time.Second, "a slot freed", func() bool { return s.Stats().Conns.Open == 2 })
	c := mustDial(t, s.Addr())
	c.mustHello(t, "d", "p")
}

func TestGracefulShutdown(t *testing.T) {
	s := startServer(t, testConfig())
	cs := players(t, s, 3, 'a', "p")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	for i, c := range cs {
		r, ok, err := c.waitClosed(10 * time.Second)
		if err != nil || !ok || r != core.Closed {
			t.Errorf("client %d: reason %v (frame %v), err %v; want Closed", i, r, ok, err)
		}
	}
	if _, err := dial(s.Addr()); err == nil {
		t.Error("dial after Shutdown succeeded")
	}
	if err := s.Start(); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Shutdown: %v, want ErrClosed", err)
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
	st := s.Stats()
	if st.Conns.Open != 0 || st.Populations["p"].Disconnects["Closed"] != 3 {
		t.Errorf("stats after shutdown: %+v", st)
	}
}

func TestShutdownDeadlineForcesClose(t *testing.T) {
	cfg := testConfig()
	cfg.WriteTimeout = time.Minute // a stuck writer would hold a graceful shutdown
	cfg.SendBuffer = 4096
	cfg.WriteBuffer = 1 << 20
	cfg.Policy = floodPolicy()
	s := startServer(t, cfg)
	c := mustDial(t, s.Addr())
	c.mustHello(t, "x", "sleeper")
	// Pings whose pongs the client never reads, until the server's
	// writer is stuck on a full socket.
	pings := make([]byte, 0, 1000*wire.PingSize)
	for i := range 1000 {
		pings = wire.AppendPing(pings, uint64(i+1))
	}
	defer func() {
		if t.Failed() {
			t.Logf("stats: %+v", s.Stats())
		}
	}()
	var off int
	eventually(t, 20*time.Second, "the writer to block", func() bool {
		off = c.writeStream(pings, off, 100*time.Millisecond)
		return s.Stats().Populations["sleeper"].Pongs > 30_000 // more than the client's receive window (it never reads, so it never grows)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v, want DeadlineExceeded", err)
	}
	if st := s.Stats(); st.Conns.Open != 0 {
		t.Errorf("%d connections open after Shutdown", st.Conns.Open)
	}
}

func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan netip.AddrPort, 1)
	errc := make(chan error, 1)
	go func() { errc <- Run(ctx, testConfig(), func(a netip.AddrPort) { addrc <- a }) }()
	var addr netip.AddrPort
	select {
	case addr = <-addrc:
	case err := <-errc:
		t.Fatal(err)
	}
	if err := honest(addr, "1", 2); err != nil {
		t.Error(err)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("Run: %v", err)
	}
}

func TestConfigValidation(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0", "[::]:0", "example.com:0", "[::ffff:10.0.0.1]:0"} {
		_, err := New(Config{Addr: addr})
		if !errors.Is(err, ErrNonLoopback) || !errors.Is(err, ErrConfig) {
			t.Errorf("New(Addr %q): %v, want ErrNonLoopback", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "127.3.4.5:0", "[::1]:0", "localhost:0", "[::ffff:127.0.0.1]:0"} {
		if _, err := New(Config{Addr: addr}); err != nil {
			t.Errorf("New(Addr %q): %v", addr, err)
		}
	}
	if _, err := New(Config{Addr: "0.0.0.0:0", AllowNonLoopback: true}); err != nil {
		t.Errorf("AllowNonLoopback: %v", err)
	}
	bad := []Config{
		{Addr: "nonsense"},
		{MaxConns: -1},
		{WriteBuffer: 10},
		{IdleTimeout: -1},
		{TickRate: -3},
		{QueueSize: -1},
		{PingRate: -1},
		{ReadBuffer: 10},
	}
	for _, cfg := range bad {
		var ce *ConfigError
		if _, err := New(cfg); !errors.As(err, &ce) || !errors.Is(err, ErrConfig) {
			t.Errorf("New(%+v): %v, want a *ConfigError", cfg, err)
		}
	}
	if _, err := New(Config{Policy: core.Policy{Channels: []core.Channel{{Name: "x"}}}}); !errors.Is(err, core.ErrPolicy) {
		t.Errorf("bad policy: %v, want core.ErrPolicy", err)
	}
}

func TestPopulationsAreBounded(t *testing.T) {
	cfg := testConfig()
	cfg.MaxPopulations = 2
	s := startServer(t, cfg)
	for i, label := range []string{"a", "b", "c", "d", "bad\x00label"} {
		c := mustDial(t, s.Addr())
		c.mustHello(t, string(rune('A'+i)), label)
	}
	st := s.Stats()
	if st.Populations["a"].Connections != 1 || st.Populations["b"].Connections != 1 || st.Populations[PopulationOther].Connections != 3 {
		t.Errorf("populations: %+v", st.Populations)
	}
	if _, ok := st.Populations["c"]; ok {
		t.Error("label c was counted beyond MaxPopulations")
	}
}

func TestMatchOf(t *testing.T) {
	cfg := testConfig()
	cfg.Policy.Match = core.Budget{Rate: new(1.0), Burst: new(2.0)}
	cfg.MatchOf = func(pop string, account uint64) uint64 { return 77 }
	s := startServer(t, cfg)
	// Two players of one match share its bucket of 2.
	cs := players(t, s, 2, 'm', "match")
	reasons := map[core.Reason]int{}
	for i, c := range cs {
		var b []byte
		b, _ = wire.AppendRequest(b, kReq, 1, nil)
		b, _ = wire.AppendRequest(b, kReq, 2, nil)
		c.mustWrite(t, b)
		for id := uint64(1); id <= 2; id++ {
			m, err := c.waitReply(id)
			if err != nil {
				t.Fatalf("client %d: %v", i, err)
			}
			reasons[core.Reason(m.Reason)]++
		}
	}
	if reasons[core.None] != 2 || reasons[core.MatchLimit] != 2 {
		t.Errorf("reply reasons %v, want 2 accepted and 2 MatchLimit", reasons)
	}
}

func TestConnectionFloodFromOneAddress(t *testing.T) {
	cfg := testConfig()
	cfg.Policy.Address = core.Budget{Rate: new(1.0), Burst: new(5.0)}
	s := startServer(t, cfg)
	src := nextSrc()
	var conns []*tclient
	for range 8 {
		c, err := dialFrom(s.Addr(), src)
		if err != nil {
			t.Fatal(err)
		}
		defer c.nc.Close()
		conns = append(conns, c)
	}
	// Each connection's gate session is opened by its own goroutine, so
	// which three of the eight find the address bucket empty is a race:
	// count them once the server has closed them.
	eventually(t, 10*time.Second, "three connections refused", func() bool {
		return s.Stats().Populations[PopulationNone].Disconnects["AddressLimit"] >= 3
	})
	refused := 0
	for i, c := range conns {
		m, err := c.next(50 * time.Millisecond)
		switch {
		case err == nil && m.Type == wire.TypeDisconnect && core.Reason(m.Reason) == core.AddressLimit:
			refused++
		case isTimeout(err): // open: the server said nothing
		default:
			t.Errorf("connection %d: %+v, %v; want AddressLimit or nothing", i, m, err)
		}
	}
	if refused != 3 {
		t.Errorf("%d connections refused AddressLimit, want 3 (burst 5 of 8)", refused)
	}
	// Another host is not affected.
	if err := honest(s.Addr(), "other", 1); err != nil {
		t.Error(err)
	}
	if n := s.Stats().Populations[PopulationNone].Disconnects["AddressLimit"]; n != uint64(refused) {
		t.Errorf("AddressLimit disconnects %d, want %d", n, refused)
	}
}

func TestLockoutCounted(t *testing.T) {
	cfg := testConfig()
	cfg.Policy.Strikes.Weights = map[core.Reason]float64{core.Malformed: 40} // past the lockout rung (32) at once
	s := startServer(t, cfg)
	c := mustDial(t, s.Addr())
	c.mustHello(t, "locked", "hostile")
	c.mustWrite(t, wire.AppendHeader(nil, 1, 99))
	if r, ok, err := c.waitClosed(10 * time.Second); err != nil || !ok || r != core.Malformed {
		t.Fatalf("reason %v (frame %v), err %v; want Malformed", r, ok, err)
	}
	c2 := mustDial(t, s.Addr())
	hb, _ := wire.AppendHello(nil, []byte("locked"), []byte("hostile"))
	c2.mustWrite(t, hb)
	if r, ok, err := c2.waitClosed(10 * time.Second); err != nil || !ok || r != core.Lockout {
		t.Fatalf("reconnect: reason %v (frame %v), err %v; want Lockout", r, ok, err)
	}
	st := settledStats(t, s)
	if p := st.Populations["hostile"]; p.Lockouts != 1 || p.Disconnects["Lockout"] != 1 || p.Disconnects["Malformed"] != 1 {
		t.Errorf("hostile stats: %+v", p)
	}
	if st.Gate.Lockouts != 1 {
		t.Errorf("gate lockouts %d, want 1", st.Gate.Lockouts)
	}
}

// A reply is counted before its client can read it, the reader's
// (Rejected) and the tick's (OK) alike, over a real socket. A smoke test:
// the windows it would catch last nanoseconds against a loopback round
// trip, so it seldom fails when they open. TestReaderFramesWaitForTheirRead
// pins the reader's half; the tick's rests on answer counting under the
// lock that queues the reply (TestOutboundBufferBound checks that every
// queued reply, and no other, was counted).
func TestRepliesAreCountedBeforeTheyAreRead(t *testing.T) {
	cfg := testConfig()
	cfg.Policy.Strikes.Disabled = true              // hundreds of denials, no disconnect
	cfg.Policy.Transport.MinCharge = new(uint32(1)) // and a read costs its bytes, not 800
	s := startServer(t, cfg)
	c := mustDial(t, s.Addr())
	c.mustHello(t, "7", "honest")
	var rejected, ok uint64
	for id := uint64(1); id <= 300; id++ {
		b, _ := wire.AppendRequest(nil, kSlow, id, nil)
		c.mustWrite(t, b)
		m, err := c.next(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case m.Type != wire.TypeReply || m.ID != id:
			t.Fatalf("got %+v, want the reply to %d", m, id)
		case m.Status == wire.StatusOK:
			ok++
		case m.Status == wire.StatusRejected && core.Reason(m.Reason) == core.ChannelLimit:
			rejected++
		default:
			t.Fatalf("reply %+v", m)
		}
		p := s.Stats().Populations["honest"]
		if p.Rejected["ChannelLimit"] != rejected || p.Requests != ok {
			t.Fatalf("after reply %d (%d rejected, %d OK): stats say %d rejected, %d requests", id, rejected, ok, p.Rejected["ChannelLimit"], p.Requests)
		}
	}
	if rejected == 0 || ok == 0 {
		t.Errorf("%d rejected, %d OK: want both kinds of reply", rejected, ok)
	}
}
