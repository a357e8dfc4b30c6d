package server

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// floodPolicy lets a client through at rates no honest one needs, so a
// test can make the server produce replies faster than a non-reading
// client drains them.
func floodPolicy() core.Policy {
	p := testPolicy()
	p.Transport.Bytes = core.Budget{Rate: new(1e8), Burst: new(1e7)}
	p.Transport.Frames = core.Budget{Rate: new(1e7), Burst: new(1e6)}
	p.Account = core.Budget{Rate: new(1e7), Burst: new(1e6)}
	p.Channels[kPing].Rate, p.Channels[kPing].Burst = new(1e7), new(1e6)
	return p
}

// hostileCase is one hostile pattern. run drives one hostile client (from
// its own source address) and checks what it saw; stats checks the
// hostile population's counters afterwards.
type hostileCase struct {
	name  string
	cfg   func(*Config)
	run   func(t *testing.T, c *tclient)
	stats func(t *testing.T, p PopulationStats)
}

// expectClosed waits for the server to close c and checks the Disconnect
// reason it sent.
func expectClosed(t *testing.T, c *tclient, d time.Duration, want core.Reason) {
	t.Helper()
	r, ok, err := c.waitClosed(d)
	if err != nil {
		t.Fatalf("waiting for the server to close: %v", err)
	}
	if !ok || r != want {
		t.Fatalf("Disconnect reason %v (frame %v), want %v", r, ok, want)
	}
}

// mustClose waits for the server to close c, with any Disconnect reason or
// none.
func mustClose(t *testing.T, c *tclient, d time.Duration) {
	t.Helper()
	if _, _, err := c.waitClosed(d); err != nil {
		t.Fatal(err)
	}
}

// oneCause checks the stats of a client the server closed for any one cause.
func oneCause(t *testing.T, p PopulationStats) {
	t.Helper()
	if len(p.Disconnects) != 1 {
		t.Errorf("stats: %+v", p)
	}
}

// timedOut checks the stats of a client the server closed for a timeout.
func timedOut(t *testing.T, p PopulationStats) {
	t.Helper()
	if p.Disconnects[CauseTimeout] != 1 {
		t.Errorf("stats: %+v", p)
	}
}

var hostileCases = []hostileCase{
	{
		name: "tiny frame flood",
		cfg: func(c *Config) {
			// The channel allows it: the connection's frame budget is
			// what stops it.
			c.Policy.Channels[kMove].Rate, c.Policy.Channels[kMove].Burst = new(1e4), new(1e4)
		},
		run: func(t *testing.T, c *tclient) {
			c.mustHello(t, "hostile", "hostile")
			var b []byte
			for range 1000 { // 6000 bytes: within the byte burst of 8000
				b, _ = wire.AppendInput(b, kMove, nil) // 6-byte frames
			}
			for range 20 { // 240 KB/s: within the byte rate, 40,000 frames/s
				if c.write(b) != nil {
					break // the server has closed
				}
				time.Sleep(25 * time.Millisecond)
			}
			r, _, err := c.waitClosed(10 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if r != core.FrameLimit && r != core.Lockout {
				t.Errorf("Disconnect reason %v, want FrameLimit or Lockout", r)
			}
		},
		stats: func(t *testing.T, p PopulationStats) {
			// Three FrameLimit strikes (weight 4) reach the drop stage,
			// where messages are refused as Lockout until the disconnect
			// rung.
			if p.Dropped["FrameLimit"] == 0 || p.Disconnects["FrameLimit"]+p.Disconnects["Lockout"] != 1 {
				t.Errorf("stats: %+v", p)
			}
		},
	},
	{
		name: "byte flood",
		cfg: func(c *Config) {
			// Channel and frames allow it: the byte budget stops it.
			c.Policy.Channels[kMove].Rate, c.Policy.Channels[kMove].Burst = new(1e5), new(1e5)
			c.Policy.Transport.Frames = core.Budget{Rate: new(1e5), Burst: new(1e5)}
			c.Policy.Account = core.Budget{Rate: new(1e5), Burst: new(1e5)}
		},
		run: func(t *testing.T, c *tclient) {
			c.mustHello(t, "hostile", "hostile")
			var b []byte
			for len(b) < 64<<10 {
				b, _ = wire.AppendInput(b, kMove, make([]byte, 40))
			}
			for range 10 {
				if c.write(b) != nil {
					break
				}
			}
			mustClose(t, c, 10*time.Second)
		},
		stats: func(t *testing.T, p PopulationStats) {
			if p.Dropped["ByteLimit"] == 0 {
				t.Errorf("no ByteLimit drops: %+v", p)
			}
			if len(p.Disconnects) == 0 {
				t.Errorf("not disconnected: %+v", p)
			}
		},
	},
	{
		name: "oversized length prefix",
		run: func(t *testing.T, c *tclient) {
			c.mustHello(t, "hostile", "hostile")
			b := wire.AppendHeader(nil, 1<<30, wire.TypeInput)
			c.mustWrite(t, b)
			expectClosed(t, c, 10*time.Second, core.Oversize)
		},
		stats: func(t *testing.T, p PopulationStats) {
			if p.Disconnects["Oversize"] != 1 || p.Dropped["Oversize"] != 1 {
				t.Errorf("stats: %+v", p)
			}
		},
	},
	{
		name: "oversized for the policy but within the framer",
		cfg: func(c *Config) {
			c.Policy.Transport.MaxFrame = new(uint32(40)) // the framer still takes 64
		},
		run: func(t *testing.T, c *tclient) {
			c.mustHello(t, "hostile", "hostile")
			b, _ := wire.AppendRequest(nil, kReq, 1, make([]byte, 40)) // 54 bytes
			b, _ = wire.AppendRequest(b, kReq, 2, nil)                 // still in sync
			c.mustWrite(t, b)
			if m, err := c.waitReply(2); err != nil || m.Status != wire.StatusOK {
				t.Fatalf("reply 2: %+v %v", m, err)
			}
		},
		stats: func(t *testing.T, p PopulationStats) {
			if p.Dropped["Oversize"] != 1 || p.Requests != 1 {
				t.Errorf("stats: %+v", p)
			}
		},
	},
	{
		name: "lying length prefix",
		cfg:  func(c *Config) { c.FrameTimeout = 300 * time.Millisecond },
		run: func(t *testing.T, c *tclient) {
			c.mustHello(t, "hostile", "hostile")
			b := wire.AppendHeader(nil, 1000, wire.TypeInput) // claims 1000 bytes
			b = append(b, kMove, 1, 2, 3, 4, 5)               // sends 6
			c.mustWrite(t, b)
			expectClosed(t, c, 10*time.Second, core.None)
		},
		stats: timedOut,
	},
	{
		name: "malformed frames",
		run: func(t *testing.T, c *tclient) {
			c.mustHello(t, "hostile", "hostile")
			var b []byte
			b = wire.AppendHeader(b, 1, 99)                  // unknown type
			b = wire.AppendReply(b, 1, wire.StatusOK, 0, 0)  // a server-to-client type
			b = wire.AppendHeader(b, 3, wire.TypeRequest)    // a request body too short
			b = append(b, kReq, 0)                           //
			b = wire.AppendHeader(b, 0, 0)                   // length 0
			b = wire.AppendHeader(b, 4, wire.TypeHello)      // hello lengths that do not add up
			b = append(b, wire.Version, 200, 0)              //
			b, _ = wire.AppendRequest(b, kReq, 0, nil)       // request id 0
			b, _ = wire.AppendInput(b, 200, nil)             // no such channel
			b = wire.AppendHeader(b, 2, wire.TypeDisconnect) // wrong size
			b = append(b, 0)                                 //
			c.mustWrite(t, b)
			expectClosed(t, c, 10*time.Second, core.Malformed)
		},
		stats: func(t *testing.T, p PopulationStats) {
			// Strikes of weight 4 reach the disconnect rung (16) at the
			// fourth.
			if p.Dropped["Malformed"] != 4 || p.Disconnects["Malformed"] != 1 {
				t.Errorf("stats: %+v", p)
			}
		},
	},
	{
		name: "random bytes",
		run: func(t *testing.T, c *tclient) {
			rng := rand.New(rand.NewPCG(1, 2))
			b := make([]byte, 32<<10)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			for i := 0; i < len(b); i += 4096 {
				if c.write(b[i:i+4096]) != nil {
					break
				}
			}
			mustClose(t, c, 10*time.Second)
		},
		stats: oneCause,
	},
	{
		name: "random frames with valid lengths",
		run: func(t *testing.T, c *tclient) {
			c.mustHello(t, "hostile", "hostile")
			rng := rand.New(rand.NewPCG(3, 4))
			var b []byte
			for range 500 {
				n := 1 + rng.IntN(60)
				b = binary.BigEndian.AppendUint32(b, uint32(n))
				for range n {
					b = append(b, byte(rng.IntN(9)))
				}
			}
			c.write(b)
			mustClose(t, c, 10*time.Second)
		},
		stats: oneCause,
	},
	{
		name: "slowloris partial frame",
		cfg:  func(c *Config) { c.FrameTimeout = 300 * time.Millisecond },
		run: func(t *testing.T, c *tclient) {
			hello, _ := wire.AppendHello(nil, []byte("slow"), []byte("hostile"))
			hello = append(hello, hello...)
			start := time.Now()
			for _, by := range hello { // one byte every 20 ms: never a whole frame in time
				if c.write([]byte{by}) != nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
				if time.Since(start) > 10*time.Second {
					t.Fatal("still open after 10s")
				}
			}
			expectClosed(t, c, 10*time.Second, core.None)
		},
		stats: timedOut,
	},
	{
		name: "idle connection",
		cfg:  func(c *Config) { c.IdleTimeout = 300 * time.Millisecond },
		run: func(t *testing.T, c *tclient) {
			expectClosed(t, c, 10*time.Second, core.None)
		},
		stats: timedOut,
	},
	{
		name: "duplicate and replayed request ids",
		run: func(t *testing.T, c *tclient) {
			c.mustHello(t, "hostile", "hostile")
			var b []byte
			b, _ = wire.AppendRequest(b, kReq, 5, nil)
			b, _ = wire.AppendRequest(b, kReq, 5, nil) // duplicate: still pending
			b, _ = wire.AppendRequest(b, kReq, 6, nil)
			c.mustWrite(t, b)
			for _, id := range []uint64{5, 6} {
				if m, err := c.waitReply(id); err != nil || m.Status != wire.StatusOK {
					t.Fatalf("reply %d: %+v %v", id, m, err)
				}
			}
			b, _ = wire.AppendRequest(b[:0], kReq, 5, nil) // replay: already done
			b, _ = wire.AppendRequest(b, kReq, 7, nil)
			c.mustWrite(t, b)
			if m, err := c.waitReply(7); err != nil || m.Status != wire.StatusOK {
				t.Fatalf("reply 7: %+v %v (a second reply to 5?)", m, err)
			}
		},
		stats: func(t *testing.T, p PopulationStats) {
			if p.Dropped["Duplicate"] != 1 || p.Dropped["Replay"] != 1 || p.Requests != 3 {
				t.Errorf("stats: %+v", p)
			}
		},
	},
	{
		name: "client that never reads",
		cfg: func(c *Config) {
			c.Policy = floodPolicy()
			c.SendBuffer = 4096
			c.WriteBuffer = 4096
		},
		run: func(t *testing.T, c *tclient) {
			c.mustHello(t, "hostile", "hostile")
			pings := make([]byte, 0, 1000*wire.PingSize)
			for i := range 1000 {
				pings = wire.AppendPing(pings, uint64(i+1))
			}
			deadline := time.Now().Add(20 * time.Second)
			for off := 0; off >= 0 && time.Now().Before(deadline); {
				off = c.writeStream(pings, off, 200*time.Millisecond)
			}
			r, ok, err := c.waitClosed(10 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if ok && r != core.QueueFull {
				t.Errorf("Disconnect reason %v, want QueueFull", r)
			}
		},
		stats: func(t *testing.T, p PopulationStats) {
			if p.Disconnects["QueueFull"] != 1 {
				t.Errorf("stats: %+v", p)
			}
		},
	},
}

func isTimeout(err error) bool {
	type timeout interface{ Timeout() bool }
	te, ok := err.(timeout)
	return ok && te.Timeout()
}

// TestHostile runs each hostile pattern against a server that three
// honest players use at the same time: the server survives, the honest
// players get every reply, and every frame is accounted for.
func TestHostile(t *testing.T) {
	for _, hc := range hostileCases {
		t.Run(hc.name, func(t *testing.T) {
			cfg := testConfig()
			if hc.cfg != nil {
				hc.cfg(&cfg)
			}
			s := startServer(t, cfg)
			wait := honestGroup(s.Addr(), 3, 15)
			c := mustDial(t, s.Addr())
			hc.run(t, c)
			if err := wait(); err != nil {
				t.Errorf("honest players: %v", err)
			}
			// The server still takes new players.
			if err := honest(s.Addr(), "late", 2); err != nil {
				t.Errorf("a player after the attack: %v", err)
			}
			c.nc.Close()
			st := settledStats(t, s)
			p := st.Populations["hostile"]
			if _, helloed := st.Populations["hostile"]; !helloed {
				p = st.Populations[PopulationNone]
			}
			hc.stats(t, p)
			if h := st.Populations["honest"]; len(h.Dropped)+len(h.Rejected) != 0 || h.Requests != 3*15+2 {
				t.Errorf("honest stats: %+v", h)
			}
			if t.Failed() {
				t.Logf("all populations: %+v", st.Populations)
			}
		})
	}
}

// The idle deadline moves lazily (at most IdleTimeout/8 late), but a busy
// connection is never closed, and an idle one never before IdleTimeout
// since its last frame.
func TestIdleDeadlineNeverEarly(t *testing.T) {
	// A frame every idle/4 leaves a loaded machine three quarters of the
	// timeout (1.2s) of scheduling slack before the busy phase could fail.
	const idle = 1600 * time.Millisecond
	cfg := testConfig()
	cfg.IdleTimeout = idle
	s := startServer(t, cfg)
	c := mustDial(t, s.Addr())
	c.mustHello(t, "hostile", "hostile")
	// Busy for two idle timeouts: a frame every idle/4.
	b, _ := wire.AppendInput(nil, kMove, []byte{1})
	var last time.Time
	for i := range 8 {
		if i > 0 {
			time.Sleep(idle / 4)
		}
		last = time.Now() // before the write: the server reads the frame after it
		if err := c.write(b); err != nil {
			t.Fatalf("write %d: the busy connection was closed: %v", i, err)
		}
	}
	if _, ok, err := c.waitClosed(10 * time.Second); err != nil || !ok {
		t.Fatalf("not closed for idleness: %v (disconnect frame %v)", err, ok)
	}
	if waited := time.Since(last); waited < idle {
		t.Fatalf("closed %v after the last frame, before the idle timeout %v", waited, idle)
	}
}

// The partial-frame deadline moves lazily too (at most FrameTimeout/8
// late): a connection whose every read ends inside a frame but that
// completes a frame every FrameTimeout/4 is never closed, and one that
// then stops is closed no earlier than FrameTimeout after its last
// partial frame began.
func TestFrameDeadlineNeverEarly(t *testing.T) {
	const frameTO = 1600 * time.Millisecond
	cfg := testConfig()
	cfg.FrameTimeout = frameTO
	cfg.IdleTimeout = time.Minute
	s := startServer(t, cfg)
	c := mustDial(t, s.Addr())
	c.mustHello(t, "hostile", "hostile")
	b, _ := wire.AppendInput(nil, kMove, []byte{1})
	// Each write ends the frame the one before began and begins the next.
	var last time.Time
	for i := range 8 {
		if i > 0 {
			time.Sleep(frameTO / 4)
		}
		w := append(append([]byte(nil), b[2:]...), b[:2]...)
		if i == 0 {
			w = b[:2]
		}
		last = time.Now()
		if err := c.write(w); err != nil {
			t.Fatalf("write %d: the busy connection was closed: %v", i, err)
		}
	}
	if _, ok, err := c.waitClosed(10 * time.Second); err != nil || !ok {
		t.Fatalf("not closed for its partial frame: %v (disconnect frame %v)", err, ok)
	}
	if waited := time.Since(last); waited < frameTO {
		t.Fatalf("closed %v after its partial frame began, before the frame timeout %v", waited, frameTO)
	}
	// The server counts the disconnect as the connection ends, after the
	// client has seen the close.
	eventually(t, 5*time.Second, "the timeout counted", func() bool {
		return s.Stats().Populations["hostile"].Disconnects[CauseTimeout] == 1
	})
}
