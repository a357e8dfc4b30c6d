package server

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/wire"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// Channel indices of testPolicy.
const (
	kMove = 0
	kReq  = 1
	kPing = 2
	kSlow = 3
)

// testPolicy has room for the honest clients of the tests (each from its
// own source address) and the defaults everywhere else.
func testPolicy() core.Policy {
	return core.Policy{
		Channels: []core.Channel{
			{Name: "move", Class: core.ClassInput, Rate: new(60.0), Burst: new(90.0), MaxSize: new(uint32(64))},
			{Name: "req", Class: core.ClassRequest, Rate: new(100.0), Burst: new(100.0)},
			{Name: "ping", Class: core.ClassInput, Rate: new(100.0), Burst: new(100.0)},
			{Name: "slow", Class: core.ClassRequest, Rate: new(1.0), Burst: new(1.0)},
		},
	}
}

func testConfig() Config {
	return Config{
		Policy:       testPolicy(),
		IdleTimeout:  5 * time.Second,
		FrameTimeout: time.Second,
		WriteTimeout: time.Second,
	}
}

func startServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// pipeConn returns a server built from cfg (not started) and one of its
// connections over an in-memory pipe, with the pipe's client end: the
// connection's state can be driven and inspected directly. Both ends close
// when the test ends.
func pipeConn(t testing.TB, cfg Config) (*Server, *conn, net.Conn) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return s, s.newConn(a), b
}

// loopbackConn returns a server built from cfg (not started) and one of
// its connections over a real loopback socket, with a test client on the
// other end: like pipeConn, but with the kernel's sockets, deadlines and
// buffering. The connection is registered as the accept loop would
// register it, and neither of its goroutines runs: start them with
// s.wg.Add and go, as the test's scenario needs. The client closes when
// the test ends, which ends a reader still waiting on it.
func loopbackConn(t testing.TB, cfg Config) (*Server, *conn, *tclient) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr, _ := addrPortOf(ln.Addr())
	cl := mustDial(t, addr)
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(10 * time.Second))
	nc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	c := s.newConn(nc)
	s.conns[c] = struct{}{}
	s.open.Add(1)
	return s, c, cl
}

// srcN hands out distinct loopback source addresses (127.a.b.c, none of
// a, b, c zero or 255), so each test client is its own "host" to the gate.
var srcN atomic.Uint32

func nextSrc() netip.Addr {
	n := srcN.Add(1)
	return netip.AddrFrom4([4]byte{127, byte(1 + n/(254*254)%254), byte(1 + n/254%254), byte(1 + n%254)})
}

// tclient is a test client over a real loopback socket.
type tclient struct {
	nc *net.TCPConn
	fr *wire.Framer
}

func dial(addr netip.AddrPort) (*tclient, error) { return dialFrom(addr, nextSrc()) }

// dialFrom connects from the given source address.
func dialFrom(addr netip.AddrPort, src netip.Addr) (*tclient, error) {
	d := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(src, 0)), Timeout: 10 * time.Second}
	nc, err := d.Dial("tcp", addr.String())
	if err != nil {
		return nil, err
	}
	fr, err := wire.NewFramer(nc, wire.DefaultMaxFrame, 0)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &tclient{nc: nc.(*net.TCPConn), fr: fr}, nil
}

func mustDial(t testing.TB, addr netip.AddrPort) *tclient {
	t.Helper()
	c, err := dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.nc.Close() })
	return c
}

func (c *tclient) write(b []byte) error {
	c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := c.nc.Write(b)
	return err
}

func (c *tclient) mustWrite(t testing.TB, b []byte) {
	t.Helper()
	if err := c.write(b); err != nil {
		t.Fatal(err)
	}
}

// writeStream writes stream[off:] with a deadline d from now and returns
// where the next call should start (wrapping around), so frames stay whole
// across writes that time out; -1 once the connection has failed.
func (c *tclient) writeStream(stream []byte, off int, d time.Duration) int {
	c.nc.SetWriteDeadline(time.Now().Add(d))
	n, err := c.nc.Write(stream[off:])
	if err != nil && !isTimeout(err) {
		return -1
	}
	return (off + n) % len(stream)
}

// next returns the next frame from the server, waiting at most d.
func (c *tclient) next(d time.Duration) (wire.Msg, error) {
	c.nc.SetReadDeadline(time.Now().Add(d))
	var m wire.Msg
	err := c.fr.ReadMsg(&m)
	return m, err
}

// hello says Hello and waits for its reply.
func (c *tclient) hello(token, label string) error {
	b, err := wire.AppendHello(nil, []byte(token), []byte(label))
	if err != nil {
		return err
	}
	if err := c.write(b); err != nil {
		return err
	}
	m, err := c.next(10 * time.Second)
	if err != nil {
		return fmt.Errorf("hello reply: %w", err)
	}
	if m.Type != wire.TypeReply || m.ID != 0 || m.Status != wire.StatusOK {
		return fmt.Errorf("hello reply: got %v id %d status %v reason %v", m.Type, m.ID, m.Status, core.Reason(m.Reason))
	}
	return nil
}

func (c *tclient) mustHello(t testing.TB, token, label string) {
	t.Helper()
	if err := c.hello(token, label); err != nil {
		t.Fatal(err)
	}
}

// waitReply reads until the reply to id, skipping pongs.
func (c *tclient) waitReply(id uint64) (wire.Msg, error) { return waitReply(c, id) }

// frameReader is a test client of any transport: next returns the next
// frame the server sends, waiting at most d.
type frameReader interface {
	next(d time.Duration) (wire.Msg, error)
}

// waitReply reads frames from c until the reply to id, skipping pongs.
func waitReply(c frameReader, id uint64) (wire.Msg, error) {
	for {
		m, err := c.next(10 * time.Second)
		if err != nil {
			return m, err
		}
		switch {
		case m.Type == wire.TypePong:
		case m.Type == wire.TypeReply && m.ID == id:
			return m, nil
		default:
			return m, fmt.Errorf("waiting for reply %d: got %v id %d status %v reason %v", id, m.Type, m.ID, m.Status, core.Reason(m.Reason))
		}
	}
}

// waitClosed reads until the server closes the connection and returns the
// reason of the Disconnect frame it sent (ok false if none came).
func (c *tclient) waitClosed(d time.Duration) (reason core.Reason, ok bool, err error) {
	deadline := time.Now().Add(d)
	for {
		c.nc.SetReadDeadline(deadline)
		var m wire.Msg
		err := c.fr.ReadMsg(&m)
		switch {
		case err == nil && m.Type == wire.TypeDisconnect:
			reason, ok = core.Reason(m.Reason), true
		case err == nil:
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed), isReset(err):
			return reason, ok, nil
		default:
			return reason, ok, err
		}
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// honest runs one honest player: Hello, then n rounds of an input, a
// request and a ping in one write, each request answered StatusOK.
func honest(addr netip.AddrPort, token string, n int) error {
	c, err := dial(addr)
	if err != nil {
		return err
	}
	defer c.nc.Close()
	if err := c.hello(token, "honest"); err != nil {
		return err
	}
	var b []byte
	return honestRounds(c, n, func(in, req, ping []byte) error {
		b = append(append(append(b[:0], in...), req...), ping...)
		return c.write(b)
	})
}

// honestRounds plays n honest rounds on a client that has said hello:
// round i sends, with send, an input, request i and ping i, then reads
// from c until request i's reply, which must be StatusOK, and pauses
// 15ms.
func honestRounds(c frameReader, n int, send func(in, req, ping []byte) error) error {
	for i := 1; i <= n; i++ {
		in, _ := wire.AppendInput(nil, kMove, []byte{1, 2, 3, 4})
		req, _ := wire.AppendRequest(nil, kReq, uint64(i), []byte("buy"))
		if err := send(in, req, wire.AppendPing(nil, uint64(i))); err != nil {
			return fmt.Errorf("round %d: %w", i, err)
		}
		m, err := waitReply(c, uint64(i))
		if err != nil {
			return fmt.Errorf("round %d: %w", i, err)
		}
		if m.Status != wire.StatusOK {
			return fmt.Errorf("round %d: status %v reason %v", i, m.Status, core.Reason(m.Reason))
		}
		time.Sleep(15 * time.Millisecond)
	}
	return nil
}

// honestGroup runs k honest players of n rounds in the background; wait
// returns their errors joined.
func honestGroup(addr netip.AddrPort, k, n int) (wait func() error) {
	return playerGroup(k, func(i int) error { return honest(addr, fmt.Sprintf("honest-%d", i), n) })
}

// playerGroup runs play(0) to play(k-1) in the background; wait returns
// their errors joined.
func playerGroup(k int, play func(i int) error) (wait func() error) {
	var wg sync.WaitGroup
	errs := make([]error, k)
	for i := range k {
		wg.Go(func() { errs[i] = play(i) })
	}
	return func() error {
		wg.Wait()
		return errors.Join(errs...)
	}
}

// eventually polls cond until it holds or d passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// players dials n clients to s and says hello from each, in population
// pop, with the one-letter tokens first, first+1, and so on.
func players(t testing.TB, s *Server, n int, first rune, pop string) []*tclient {
	t.Helper()
	cs := make([]*tclient, n)
	for i := range cs {
		cs[i] = mustDial(t, s.Addr())
		cs[i].mustHello(t, string(first+rune(i)), pop)
	}
	return cs
}

// settledStats waits until every connection to s has closed, then returns
// s's stats, checked with checkAccounting (which holds only from then on).
func settledStats(t testing.TB, s *Server) Stats {
	t.Helper()
	eventually(t, 10*time.Second, "connections closed", func() bool { return s.Stats().Conns.Open == 0 })
	st := s.Stats()
	checkAccounting(t, st)
	return st
}

// checkAccounting asserts checkPopulation for every population.
func checkAccounting(t testing.TB, st Stats) {
	t.Helper()
	for name, p := range st.Populations {
		checkPopulation(t, name, p)
	}
}

// checkPopulation asserts that each frame the population's connections
// decoded (its Frames counter) was accepted, dropped or rejected exactly
// once in its channel rows, which its Accepted, Dropped and Rejected sum
// (valid once every connection is closed).
func checkPopulation(t testing.TB, name string, p PopulationStats) {
	t.Helper()
	var n uint64
	for _, v := range p.Dropped {
		n += v
	}
	for _, v := range p.Rejected {
		n += v
	}
	if p.Accepted+n != p.Frames {
		t.Errorf("population %q: %d frames, but %d accepted + %d dropped or rejected: %+v", name, p.Frames, p.Accepted, n, p)
	}
}
