//go:build unix

package server

import (
	"fmt"
	"io"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/sluicedev/sluice/loadgen/wire"
)

// raiseFDLimit makes sure the process may open n more descriptors, raising
// the soft limit up to the hard one if needed; it skips the test if it
// cannot.
func raiseFDLimit(t *testing.T, n uint64) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	if lim.Cur >= n {
		return
	}
	if lim.Max < n {
		t.Skipf("RLIMIT_NOFILE hard limit %d < %d", lim.Max, n)
	}
	old := lim
	lim.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
}

// TestHeapBoundedUnderManyHostileConnections opens 2000 hostile connections
// (each from its own loopback address) that say Hello, get a reply and
// then hold a partial frame, and checks the memory they cost (heap and
// goroutine stacks, both ends of the sockets included) against the
// documented per-connection bound.
func TestHeapBoundedUnderManyHostileConnections(t *testing.T) {
	const n = 2000
	if testing.Short() {
		t.Skip("opens 2000 connections")
	}
	raiseFDLimit(t, 2*n+256)
	cfg := testConfig()
	cfg.MaxConns = n + 10
	cfg.IdleTimeout = 5 * time.Minute
	cfg.FrameTimeout = 5 * time.Minute
	s := startServer(t, cfg)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	partial := wire.AppendHeader(nil, 3000, wire.TypeInput)
	partial = append(partial, make([]byte, 1500)...)
	cs := make([]*tclient, 0, n)
	defer func() {
		for _, c := range cs {
			c.nc.Close()
		}
	}()
	var buf [wire.ReplySize]byte
	for i := range n {
		c, err := dial(s.Addr())
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		cs = append(cs, c)
		// Every connection's Hello is answered, so the writer's buffer
		// is allocated too; the reply is read raw (no client framer).
		// Each its own account: one account holds at most the policy's
		// connections.perAccount sessions.
		hello, _ := wire.AppendHello(nil, []byte(fmt.Sprintf("x%04d", i)), []byte("hostile"))
		msg := append(append([]byte(nil), hello...), partial...)
		if err := c.write(msg); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(c.nc, buf[:]); err != nil {
			t.Fatalf("connection %d: hello reply: %v", i, err)
		}
		c.fr = nil // the test's own framers are not the server's cost
	}
	helloSize := wire.HelloOverhead + len("x0000") + len("hostile")
	want := uint64(n) * uint64(helloSize+len(partial))
	eventually(t, 30*time.Second, "every byte read", func() bool {
		st := s.Stats()
		return st.Bytes >= want && st.Conns.Open == n
	})
	runtime.GC()
	runtime.ReadMemStats(&after)
	used := int64(after.HeapAlloc+after.StackInuse) - int64(before.HeapAlloc+before.StackInuse)
	per := used / n
	bound := int64(s.ConnMemoryBound())
	t.Logf("%d connections: %d bytes of heap and stacks, %d per connection (bound %d; heap %d, stacks %d per connection)",
		n, used, per, bound, (int64(after.HeapAlloc)-int64(before.HeapAlloc))/n, (int64(after.StackInuse)-int64(before.StackInuse))/n)
	if per > bound {
		t.Errorf("%d bytes per connection, more than the bound %d", per, bound)
	}
	st := s.Stats()
	if p := st.Populations["hostile"]; p.Connections != n {
		t.Errorf("hostile connections %d, want %d", p.Connections, n)
	}
	// Honest players are still served with 2000 hostile connections open.
	if err := honest(s.Addr(), "honest", 3); err != nil {
		t.Error(err)
	}
	for _, c := range cs {
		c.nc.Close()
	}
	eventually(t, 30*time.Second, "connections closed", func() bool { return s.Stats().Conns.Open == 0 })
}
