package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// Distinct tokens name distinct accounts: a decimal account, the same
// number with leading zeros, a string and the decimal form of what a hash
// of it would be, short and long opaque names; the same token names the
// same account every time; an empty token names none.
func TestTokensAreOneToOne(t *testing.T) {
	tk := NewTokens(0)
	tokens := []string{
		"77001", "077001", "00000000000000077001", "1", "01", "0", "a", "ab", "abcdefg", "abcdefgh",
		"player-1", "player-2", "18446744073709551615", "13835058055282163711", "13835058055282163712",
		strings.Repeat("x", 255), strings.Repeat("x", 254), "\x00", "\x00\x00",
	}
	seen := map[uint64]string{}
	for _, tok := range tokens {
		a, r := tk.Account([]byte(tok))
		if r != core.None || a == 0 {
			t.Fatalf("Account(%q) = %d, %v", tok, a, r)
		}
		if prev, dup := seen[a]; dup {
			t.Fatalf("%q and %q both name account %d", prev, tok, a)
		}
		seen[a] = tok
		if again, _ := tk.Account([]byte(tok)); again != a {
			t.Fatalf("Account(%q) changed: %d then %d", tok, a, again)
		}
	}
	if a, _ := tk.Account([]byte("77001")); a != 77001 {
		t.Errorf("the harness's decimal tokens are their own accounts: got %d", a)
	}
	if a, r := tk.Account(nil); a != 0 || r != core.Malformed {
		t.Errorf("empty token: %d, %v; want 0, Malformed", a, r)
	}
	small := NewTokens(2)
	for i, tok := range []string{"long-token-1", "long-token-2", "long-token-1"} {
		if _, r := small.Account([]byte(tok)); r != core.None {
			t.Fatalf("%d %q: %v", i, tok, r)
		}
	}
	if _, r := small.Account([]byte("long-token-3")); r != core.TableFull {
		t.Errorf("a new long token past the bound: %v, want TableFull", r)
	}
}

// helloRefused says Hello with raw bytes and returns the reason of the
// refusal's reply and of the Disconnect, and how long the close took.
func helloRefused(t *testing.T, c *tclient, frame []byte) (reply, disc core.Reason, took time.Duration) {
	t.Helper()
	start := time.Now()
	c.mustWrite(t, frame)
	m, err := c.next(5 * time.Second)
	if err != nil {
		t.Fatalf("no reply to the hello: %v", err)
	}
	if m.Type != wire.TypeReply || m.ID != 0 || m.Status != wire.StatusRejected {
		t.Fatalf("hello: got %v id %d status %v", m.Type, m.ID, m.Status)
	}
	r, ok, err := c.waitClosed(5 * time.Second)
	if err != nil || !ok {
		t.Fatalf("no Disconnect: %v %v", ok, err)
	}
	return core.Reason(m.Reason), r, time.Since(start)
}

// A Hello whose inner lengths do not add up, and a Hello with an empty
// token, are answered Malformed and the connection is closed at once, not
// at the hello timeout.
func TestBadHelloIsAnsweredAndClosed(t *testing.T) {
	cfg := testConfig()
	cfg.HelloTimeout = 30 * time.Second
	s := startServer(t, cfg)
	good, _ := wire.AppendHello(nil, []byte("5"), []byte("p"))
	short := append([]byte(nil), good...)
	short[6] = 40 // tokenLen past the frame's end
	long := append([]byte(nil), good...)
	long[len(long)-2] = 0 // tokenLen 0: the label length byte is then "5", past the end
	empty, _ := wire.AppendHello(nil, nil, []byte("p"))
	for name, frame := range map[string][]byte{"token length past the end": short, "lengths short of the end": long, "empty token": empty} {
		t.Run(name, func(t *testing.T) {
			c := mustDial(t, s.Addr())
			reply, disc, took := helloRefused(t, c, frame)
			if reply != core.Malformed || disc != core.Malformed {
				t.Errorf("reply %v, disconnect %v; want Malformed, Malformed", reply, disc)
			}
			if took > 2*time.Second {
				t.Errorf("closed after %v", took)
			}
		})
	}
}

// A connection past MaxConns gets a Disconnect saying why (TableFull)
// before the close.
func TestMaxConnsRefusalSaysWhy(t *testing.T) {
	cfg := testConfig()
	cfg.MaxConns = 1
	s := startServer(t, cfg)
	a := mustDial(t, s.Addr())
	a.mustHello(t, "1", "p")
	b := mustDial(t, s.Addr())
	r, ok, err := b.waitClosed(5 * time.Second)
	if err != nil || !ok || r != core.TableFull {
		t.Fatalf("refused past MaxConns: reason %v, frame %v, err %v; want TableFull", r, ok, err)
	}
}

// The policy's connection caps hold over sockets: one source address
// holds at most connections.perAddress sessions, and a refusal comes as a
// Disconnect with reason ConnLimit; another address still joins at once.
// One account holds at most connections.perAccount, refused at its Hello.
func TestConnCapsOverSockets(t *testing.T) {
	cfg := testConfig()
	cfg.Policy.Connections = core.Connections{PerAddress: new(uint32(4)), PerAccount: new(uint32(2))}
	s := startServer(t, cfg)
	holder := nextSrc()
	for i := range 4 {
		c, err := dialFrom(s.Addr(), holder)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.nc.Close() })
		c.mustHello(t, string(rune('a'+i))+"-slot", "holder")
	}
	for range 3 {
		c, err := dialFrom(s.Addr(), holder)
		if err != nil {
			t.Fatal(err)
		}
		r, ok, err := c.waitClosed(5 * time.Second)
		c.nc.Close()
		if err != nil || !ok || r != core.ConnLimit {
			t.Fatalf("fifth connection from one address: reason %v, frame %v, err %v; want ConnLimit", r, ok, err)
		}
	}
	start := time.Now()
	honest := mustDial(t, s.Addr())
	honest.mustHello(t, "42", "honest")
	if d := time.Since(start); d > time.Second {
		t.Errorf("an honest join took %v", d)
	}
	// Per account.
	for range 2 {
		mustDial(t, s.Addr()).mustHello(t, "7", "p")
	}
	c := mustDial(t, s.Addr())
	b, _ := wire.AppendHello(nil, []byte("7"), []byte("p"))
	reply, disc, _ := helloRefused(t, c, b)
	if reply != core.ConnLimit || disc != core.ConnLimit {
		t.Errorf("third session of an account: reply %v, disconnect %v; want ConnLimit", reply, disc)
	}
}

// A connection that never says Hello cannot hold slots by reopening: at
// most connections.preAuthPerAddress of one address's sessions are
// unauthenticated at once.
func TestPreAuthCapOverSockets(t *testing.T) {
	cfg := testConfig()
	cfg.Policy.Connections = core.Connections{PreAuthPerAddress: new(uint32(3))}
	s := startServer(t, cfg)
	src := nextSrc()
	for range 3 {
		c, err := dialFrom(s.Addr(), src)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.nc.Close() })
	}
	// Three sessions in the gate, not three sockets accepted: the accept
	// loop counts a connection open before its reader opens its session,
	// so a fourth dialled on the socket count alone can race the third to
	// the gate, be opened itself, and leave the third refused.
	eventually(t, 5*time.Second, "three sessions open in the gate", func() bool {
		g := s.Stats().Gate
		return g.Count("(session)", core.None) == 3
	})
	c, err := dialFrom(s.Addr(), src)
	if err != nil {
		t.Fatal(err)
	}
	defer c.nc.Close()
	r, ok, err := c.waitClosed(5 * time.Second)
	if err != nil || !ok || r != core.ConnLimit {
		t.Fatalf("fourth silent connection: reason %v, frame %v, err %v; want ConnLimit", r, ok, err)
	}
}

// A client that sends requests and then shuts down its sending side gets
// the answers to what was admitted, then the close.
func TestHalfCloseAnswersAdmittedRequests(t *testing.T) {
	cfg := testConfig()
	cfg.TickRate = 5 // 200 ms a tick: the EOF comes long before the answers
	s := startServer(t, cfg)
	c := mustDial(t, s.Addr())
	c.mustHello(t, "9", "p")
	var b []byte
	for id := uint64(1); id <= 3; id++ {
		b, _ = wire.AppendRequest(b, kReq, id, []byte("x"))
	}
	c.mustWrite(t, b)
	if err := c.nc.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got := map[uint64]bool{}
	for {
		m, err := c.next(5 * time.Second)
		if err != nil {
			break // the close
		}
		if m.Type == wire.TypeReply && m.Status == wire.StatusOK {
			got[m.ID] = true
		}
	}
	if len(got) != 3 {
		t.Errorf("answered %v of requests 1..3 after the half-close", got)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("closed %v after the half-close; bound 1s", d)
	}
	// Nothing owed: the close is at once.
	c2 := mustDial(t, s.Addr())
	c2.mustHello(t, "10", "p")
	c2.nc.CloseWrite()
	start = time.Now()
	if _, _, err := c2.waitClosed(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("closed %v after a half-close with nothing owed", d)
	}
}

// Request ids that share their low bits are both in flight over a socket,
// and the replay of the first after both are answered is refused.
func TestRequestIdsOverSockets(t *testing.T) {
	s := startServer(t, testConfig())
	c := mustDial(t, s.Addr())
	c.mustHello(t, "11", "p")
	b, _ := wire.AppendRequest(nil, kReq, 1, nil)
	b, _ = wire.AppendRequest(b, kReq, 65, nil)
	c.mustWrite(t, b)
	got := map[uint64]wire.Status{}
	for len(got) < 2 {
		m, err := c.next(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if m.Type == wire.TypeReply {
			got[m.ID] = m.Status
		}
	}
	if got[1] != wire.StatusOK || got[65] != wire.StatusOK {
		t.Fatalf("ids 1 and 65 together: %v", got)
	}
	b, _ = wire.AppendRequest(nil, kReq, 1, nil)
	b, _ = wire.AppendRequest(b, kReq, 2, nil) // a fresh id after it, to see the replay got no answer
	c.mustWrite(t, b)
	m, err := c.waitReply(2)
	if err != nil || m.Status != wire.StatusOK {
		t.Fatalf("reply to 2: %v %v (a reply to the replay of 1 came first?)", m, err)
	}
	eventually(t, 5*time.Second, "the replay counted", func() bool {
		st := s.Gate().Stats()
		return st.Count("req", core.Replay) == 1
	})
}

// Over sockets, a handshake that authenticates and stays costs the address
// less than one that is abandoned: with a bucket of 2 tokens that does not
// refill and a refund of a whole token, any number of sessions that log in
// and stay past connections.authRefundAfter are admitted one after
// another, while the third abandoned connection is refused AddressLimit.
func TestAuthRefundOverSockets(t *testing.T) {
	cfg := testConfig()
	cfg.Policy.Address = core.Budget{Rate: new(1e-5), Burst: new(2.0)}
	cfg.Policy.Connections = core.Connections{AuthRefund: new(1.0), AuthRefundAfter: new(core.Duration(10 * time.Millisecond))}
	s := startServer(t, cfg)
	src := nextSrc()
	for i := range 5 {
		c, err := dialFrom(s.Addr(), src)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.hello(fmt.Sprint(100+i), "p"); err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		time.Sleep(30 * time.Millisecond)
		c.nc.Close()
		eventually(t, 5*time.Second, "the session closed", func() bool { return s.Stats().Conns.Open == 0 })
	}
	other := nextSrc()
	for i := range 3 {
		c, err := dialFrom(s.Addr(), other)
		if err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			eventually(t, 5*time.Second, "the session opened", func() bool { return s.Stats().Conns.Open == 1 })
			c.nc.Close()
			eventually(t, 5*time.Second, "the session closed", func() bool { return s.Stats().Conns.Open == 0 })
			continue
		}
		r, ok, err := c.waitClosed(5 * time.Second)
		c.nc.Close()
		if err != nil || !ok || r != core.AddressLimit {
			t.Fatalf("third abandoned handshake: reason %v, frame %v, err %v; want AddressLimit", r, ok, err)
		}
	}
}
