package server

import (
	"net"
	"net/netip"
	"testing"

	"github.com/sluicedev/sluice/atomicbucket"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// The listener's work on a datagram allocates nothing: a session's input
// (charged, checked, tallied, queued for the tick) and a handshake
// answered with a cookie (the MAC, the send). The reader is driven
// directly, on a listener whose goroutine is not started.
func TestUDPDatagramPathAllocatesNothing(t *testing.T) {
	cfg := udpConfig()
	cfg.Policy = floodPolicy()
	cfg.Policy.Channels[kMove].Rate, cfg.Policy.Channels[kMove].Burst = new(1e6), new(1e6)
	cfg.QueueSize = 1 << 20
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	sink, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	l := s.newUDPListener(pc)
	src := sink.LocalAddr().(*net.UDPAddr).AddrPort()
	src = netip.AddrPortFrom(src.Addr().Unmap(), src.Port())

	now := atomicbucket.Nanotime()
	hs, _ := wire.AppendHandshake(nil, 5, nil, []byte("1"), []byte("a"))
	cookieAllocs := testing.AllocsPerRun(200, func() { l.datagram(hs, src, now) })
	if cookieAllocs != 0 || l.st.cookies.Load() == 0 {
		t.Errorf("a cookie costs %v allocations (%d sent)", cookieAllocs, l.st.cookies.Load())
	}

	// Open a session the way a valid cookie does, without its writer.
	var ck [wire.CookieSize]byte
	l.mintCookie(&ck, src, now/l.bucketNs)
	hs, _ = wire.AppendHandshake(nil, 6, ck[:], []byte("1"), []byte("a"))
	l.datagram(hs, src, now)
	u := l.sessions[udpKey{6, src}]
	if u == nil || !u.c.authed.Load() {
		t.Fatal("no authenticated session")
	}
	in, _ := wire.AppendInput(nil, kMove, []byte{1, 2})
	d := append(wire.AppendDatagramHeader(nil, wire.DatagramData, 6), in...)
	for range 10 { // the tally's and the queue's first growth
		l.datagram(d, src, now)
	}
	if a := testing.AllocsPerRun(200, func() { l.datagram(d, src, now) }); a != 0 {
		t.Errorf("a session's datagram costs %v allocations", a)
	}
	if u.c.closing.Load() {
		t.Fatal("the session ended")
	}
	u.c.disconnect(cause(0), false)
	<-u.c.writerDone
	s.wg.Wait()
}
