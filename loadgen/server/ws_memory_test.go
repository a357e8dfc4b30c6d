//go:build unix

package server

import (
	"net"
	"net/netip"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/sluicedev/sluice/loadgen/internal/wsraw"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// TestWSHeapBoundedUnderManyHostileConnections holds 1000 hostile
// WebSocket peers: half upgraded, having said Hello and begun a message
// they never finish (a fragment flood's start), half still upgrading (a
// slow upgrade's partial request). The memory they cost (heap and
// goroutine stacks, both ends included) must stay within
// WSConnMemoryBound each, and an honest WebSocket player is served.
func TestWSHeapBoundedUnderManyHostileConnections(t *testing.T) {
	const n = 1000
	if testing.Short() {
		t.Skip("opens 1000 connections")
	}
	raiseFDLimit(t, 2*n+256)
	cfg := wsConfig()
	cfg.MaxConns = n + 10
	cfg.IdleTimeout = 5 * time.Minute
	cfg.FrameTimeout = 5 * time.Minute
	cfg.HelloTimeout = 5 * time.Minute
	cfg.WebSocket.UpgradeTimeout = 5 * time.Minute
	s := startServer(t, cfg)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	// Each peer logs in to an account of its own: one account holds at
	// most Connections.PerAccount sessions.
	msgFor := func(i int) []byte {
		hello, _ := wire.AppendHello(nil, strconv.AppendInt(nil, int64(i+1), 10), []byte("hostile"))
		msg := wsraw.AppendFrame(nil, true, wsraw.OpBinary, hello)
		return wsraw.AppendFrame(msg, false, wsraw.OpBinary, make([]byte, 1500)) // a message's first fragment, and no more
	}
	req := wsraw.Request(s.WSAddr().String())
	cs := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	for i := range n {
		d := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(nextSrc(), 0)), Timeout: 5 * time.Second}
		nc, err := d.Dial("tcp", s.WSAddr().String())
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		cs = append(cs, nc)
		if i%2 == 1 {
			nc.Write(req[:len(req)-10])
			continue
		}
		if err := wsraw.Upgrade(nc, 5*time.Second); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := nc.Write(msgFor(i)); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	eventually(t, 30*time.Second, "every peer held", func() bool {
		st := s.Stats()
		return st.Populations["hostile"].Frames == n/2 && st.Conns.Open == n/2 && s.ws.pending.Load() == n/2
	})
	runtime.GC()
	runtime.ReadMemStats(&after)
	used := int64(after.HeapAlloc+after.StackInuse) - int64(before.HeapAlloc+before.StackInuse)
	per := used / n
	bound := int64(s.WSConnMemoryBound())
	t.Logf("%d WebSocket peers: %d bytes of heap and stacks, %d per peer (bound %d)", n, used, per, bound)
	if per > bound {
		t.Errorf("%d bytes per peer, more than the bound %d", per, bound)
	}
	if err := wsHonest(s.WSAddr(), "honest", 3); err != nil {
		t.Error(err)
	}
	for _, c := range cs {
		c.Close()
	}
	eventually(t, 30*time.Second, "connections closed", func() bool { return s.Stats().Conns.Open == 0 && s.ws.pending.Load() == 0 })
}
