package server

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/sluicedev/sluice/loadgen/wire"
)

func udpConfig() Config {
	cfg := testConfig()
	cfg.UDP = UDPConfig{Addr: "127.0.0.1:0"}
	return cfg
}

// uclient is a test peer over UDP: one socket of its own, from its own
// source address, which counts every byte it sends and receives (the
// amplification tests compare them).
type uclient struct {
	pc         *net.UDPConn
	srv        netip.AddrPort
	id         uint64
	buf        []byte
	sent, recv int // bytes
}

func newUClient(srv netip.AddrPort, src netip.Addr) (*uclient, error) {
	pc, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(src, 0)))
	if err != nil {
		return nil, err
	}
	return &uclient{pc: pc, srv: srv, id: rand.Uint64() | 1, buf: make([]byte, 512)}, nil
}

func udpDial(t testing.TB, srv netip.AddrPort) *uclient {
	t.Helper()
	c, err := newUClient(srv, nextSrc())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.pc.Close() })
	return c
}

func (c *uclient) addr() netip.AddrPort { return c.pc.LocalAddr().(*net.UDPAddr).AddrPort() }

func (c *uclient) send(b []byte) error {
	c.sent += len(b)
	_, err := c.pc.WriteToUDPAddrPort(b, c.srv)
	return err
}

// sendFrame sends frame in a Data datagram of the client's session.
func (c *uclient) sendFrame(frame []byte) error {
	return c.send(append(wire.AppendDatagramHeader(make([]byte, 0, wire.DatagramHeaderSize+len(frame)), wire.DatagramData, c.id), frame...))
}

// datagram returns the next datagram the client receives, waiting at most d.
func (c *uclient) datagram(d time.Duration) ([]byte, error) {
	c.pc.SetReadDeadline(time.Now().Add(d))
	n, _, err := c.pc.ReadFromUDPAddrPort(c.buf)
	c.recv += n
	return c.buf[:n], err
}

// drain reads every datagram that arrives within d of the last one.
func (c *uclient) drain(d time.Duration) (n int) {
	for {
		if _, err := c.datagram(d); err != nil {
			return n
		}
		n++
	}
}

// next returns the next frame the server sends, waiting at most d.
func (c *uclient) next(d time.Duration) (wire.Msg, error) {
	b, err := c.datagram(d)
	if err != nil {
		return wire.Msg{}, err
	}
	k, id, rest, err := wire.ParseDatagram(b)
	if err != nil || k != wire.DatagramData || id != c.id {
		return wire.Msg{}, fmt.Errorf("datagram kind %d id %x (mine %x): %v", k, id, c.id, err)
	}
	var m wire.Msg
	if _, err := wire.Decode(rest, 0, &m); err != nil {
		return m, err
	}
	return m, nil
}

// exchange sends b and returns the first datagram of kind k that answers
// it, resending b up to 5 times when none comes within a second (UDP
// drops datagrams when a receive buffer overflows).
func (c *uclient) exchange(b []byte, k wire.DatagramKind) ([]byte, error) {
	var err error
	for range 5 {
		if err = c.send(b); err != nil {
			return nil, err
		}
		var d []byte
		for d, err = c.datagram(time.Second); err == nil; d, err = c.datagram(time.Second) {
			if dk, id, rest, perr := wire.ParseDatagram(d); perr == nil && dk == k && id == c.id {
				return rest, nil
			}
		}
	}
	return nil, err
}

// cookie sends a handshake without a cookie and returns the cookie the
// server answers with.
func (c *uclient) cookie(token, label string) ([]byte, error) {
	hs, err := wire.AppendHandshake(nil, c.id, nil, []byte(token), []byte(label))
	if err != nil {
		return nil, err
	}
	rest, err := c.exchange(hs, wire.DatagramCookie)
	if err != nil {
		return nil, fmt.Errorf("cookie: %w", err)
	}
	return append([]byte(nil), rest...), nil
}

// hello runs the handshake (cookie, then Hello with it) and returns the
// Hello's Reply (or the frame that came instead).
func (c *uclient) hello(token, label string) (wire.Msg, error) {
	ck, err := c.cookie(token, label)
	if err != nil {
		return wire.Msg{}, err
	}
	hs, _ := wire.AppendHandshake(nil, c.id, ck, []byte(token), []byte(label))
	rest, err := c.exchange(hs, wire.DatagramData)
	if err != nil {
		return wire.Msg{}, fmt.Errorf("hello: %w", err)
	}
	var m wire.Msg
	_, err = wire.Decode(rest, 0, &m)
	return m, err
}

func (c *uclient) mustHello(t testing.TB, token, label string) {
	t.Helper()
	m, err := c.hello(token, label)
	if err != nil || m.Type != wire.TypeReply || m.ID != 0 || m.Status != wire.StatusOK {
		t.Fatalf("hello: %v %+v", err, m)
	}
}

// waitReply reads until the reply to id, skipping pongs.
func (c *uclient) waitReply(id uint64) (wire.Msg, error) { return waitReply(c, id) }

// leave sends a Disconnect frame: the client ends its session.
func (c *uclient) leave() error { return c.sendFrame(wire.AppendDisconnect(nil, 0)) }

// udpHonest runs one honest player over UDP, as honest does over TCP: a
// handshake, then n rounds of an input, a request and a ping (a datagram
// each), each request answered StatusOK; then it leaves.
func udpHonest(srv netip.AddrPort, token string, n int) error {
	c, err := newUClient(srv, nextSrc())
	if err != nil {
		return err
	}
	defer c.pc.Close()
	if m, err := c.hello(token, "honest"); err != nil || m.Status != wire.StatusOK {
		return fmt.Errorf("hello: %v %+v", err, m)
	}
	err = honestRounds(c, n, func(in, req, ping []byte) error {
		for _, f := range [][]byte{in, req, ping} {
			if err := c.sendFrame(f); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return c.leave()
}

// udpHonestGroup runs k honest UDP players of n rounds in the background;
// wait returns their errors joined.
func udpHonestGroup(srv netip.AddrPort, k, n int) (wait func() error) {
	return playerGroup(k, func(i int) error { return udpHonest(srv, fmt.Sprintf("honest-%d", i), n) })
}
