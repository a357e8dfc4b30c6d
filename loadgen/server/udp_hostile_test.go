//go:build unix

package server

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicedev/sluice/loadgen/wire"
)

// The hostile UDP peers' patterns, one per peer.
const (
	udpFlood      = iota // opens a session and floods it with datagrams
	udpHandshakes        // floods handshakes without a cookie
	udpReplay            // sends handshakes with another source's cookie
	udpAmplify           // tiny handshakes, hoping for a larger answer
	udpGarbage           // random bytes
	udpGuess             // Data datagrams naming random connection ids
	udpPatterns
)

var udpPatternNames = [udpPatterns]string{"flood", "handshake flood", "cookie replay", "amplification", "garbage", "id guessing"}

// TestUDPHostileCrowd runs 2400 hostile peers, each from a source address
// of its own and 400 of each pattern, against the UDP listener, with
// honest players beside them the whole time. The server must not panic,
// the honest players must be served, no peer may receive more bytes than
// it sent unless it holds a session (the flooders, which verified their
// source), only the flooders may open sessions and each must be ended by
// its byte budget, and once they are gone the session table is empty and
// no goroutine is left (goleak, in TestMain).
func TestUDPHostileCrowd(t *testing.T) {
	const n = 2400
	if testing.Short() {
		t.Skip("runs 2400 peers")
	}
	raiseFDLimit(t, n+256)
	cfg := udpConfig()
	cfg.MaxConns = n
	s := startServer(t, cfg)
	srv := s.UDPAddr()

	donor := udpDial(t, srv)
	donated, err := donor.cookie("1", "donor")
	if err != nil {
		t.Fatal(err)
	}
	wait := udpHonestGroup(srv, 4, 40)

	type result struct{ sent, recv int }
	results := make([]result, n)
	var opened atomic.Int64
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				c, err := newUClient(srv, nextSrc())
				if err != nil {
					errs <- err
					return
				}
				r := rand.New(rand.NewPCG(uint64(i), 29))
				switch i % udpPatterns {
				case udpFlood:
					m, err := c.hello(strconv.Itoa(1000+i), "hostile")
					if err != nil || m.Status != wire.StatusOK {
						errs <- fmt.Errorf("flooder %d: hello: %v %+v", i, err, m)
						break
					}
					opened.Add(1)
					in, _ := wire.AppendInput(nil, kMove, []byte{1, 2})
					for range 60 {
						c.sendFrame(in)
					}
				case udpHandshakes:
					for range 20 {
						hs, _ := wire.AppendHandshake(nil, r.Uint64()|1, nil, []byte("x"), nil)
						c.send(hs)
					}
				case udpReplay:
					for range 20 {
						hs, _ := wire.AppendHandshake(nil, c.id, donated, []byte("1"), []byte("donor"))
						c.send(hs)
					}
				case udpAmplify:
					for k := range 20 {
						b := wire.AppendDatagramHeader(nil, wire.DatagramHandshake, c.id)
						b = append(b, 0)
						b, _ = wire.AppendHello(b, []byte{'a' + byte(k)}, nil)
						c.send(b)
					}
				case udpGarbage:
					for range 20 {
						b := make([]byte, 1+r.IntN(200))
						for j := range b {
							b[j] = byte(r.Uint32())
						}
						c.send(b)
					}
				case udpGuess:
					for range 20 {
						c.id = r.Uint64() | 1
						req, _ := wire.AppendRequest(nil, kReq, 1, []byte("buy"))
						c.sendFrame(req)
					}
				}
				c.drain(100 * time.Millisecond)
				results[i] = result{c.sent, c.recv}
				c.pc.Close()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := wait(); err != nil {
		t.Fatalf("honest players beside the crowd: %v", err)
	}
	var sent, recv [udpPatterns]int
	for i, r := range results {
		p := i % udpPatterns
		sent[p] += r.sent
		recv[p] += r.recv
		if p != udpFlood && r.recv > r.sent {
			t.Errorf("peer %d (%s): received %d bytes, sent %d", i, udpPatternNames[p], r.recv, r.sent)
		}
	}
	for p := range udpPatterns {
		t.Logf("%s: %d peers sent %d bytes, received %d", udpPatternNames[p], n/udpPatterns, sent[p], recv[p])
	}
	st := settledStats(t, s)
	u := s.UDPStats()
	t.Logf("udp stats %+v", u)
	if want := uint64(opened.Load()) + 4; u.Opened != want {
		t.Errorf("%d sessions opened, want %d (the flooders and the honest players)", u.Opened, want)
	}
	if u.UnverifiedSent > u.UnverifiedBytes {
		t.Errorf("sent %d bytes to unverified sources, received %d from them", u.UnverifiedSent, u.UnverifiedBytes)
	}
	h := st.Populations["hostile"]
	// Each flooder is ended by its byte budget, or by the lockout its
	// strikes for it earn first.
	if d := h.Disconnects; d["ByteLimit"]+d["Lockout"] != uint64(opened.Load()) || len(d) > 2 {
		t.Errorf("flooders: disconnects %v, want %d ByteLimit or Lockout", d, opened.Load())
	}
	if u.Sessions != 0 {
		t.Errorf("%d sessions left", u.Sessions)
	}
	if hp := st.Populations["honest"]; hp.Requests != 4*40 {
		t.Errorf("honest players: %d requests answered, want %d", hp.Requests, 4*40)
	}
}

// TestUDPHeapBounded holds 1500 sessions open (their peers verified their
// source, said Hello and went quiet: the most a peer can make the server
// keep), then sends 1500 unverified handshakes from as many other
// sources. The sessions must cost at most UDPSessionMemoryBound each (both
// ends included), and the unverified sources nothing: not one table entry.
func TestUDPHeapBounded(t *testing.T) {
	const n = 1500
	if testing.Short() {
		t.Skip("opens 1500 sessions")
	}
	raiseFDLimit(t, 2*n+256)
	cfg := udpConfig()
	cfg.MaxConns = n + 10
	cfg.IdleTimeout = 5 * time.Minute
	s := startServer(t, cfg)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cs := make([]*uclient, 0, n)
	defer func() {
		for _, c := range cs {
			c.pc.Close()
		}
	}()
	for i := range n {
		c := udpDial(t, s.UDPAddr())
		cs = append(cs, c)
		c.mustHello(t, strconv.Itoa(i+1), "held")
	}
	eventually(t, 10*time.Second, "every session held", func() bool { return s.UDPStats().Sessions == n })
	runtime.GC()
	runtime.ReadMemStats(&after)
	used := int64(after.HeapAlloc+after.StackInuse) - int64(before.HeapAlloc+before.StackInuse)
	per, bound := used/n, int64(s.UDPSessionMemoryBound())
	t.Logf("%d UDP sessions: %d bytes of heap and stacks, %d per session (bound %d)", n, used, per, bound)
	if per > bound {
		t.Errorf("%d bytes per session, more than the bound %d", per, bound)
	}
	for i := range n {
		c := udpDial(t, s.UDPAddr())
		hs, _ := wire.AppendHandshake(nil, uint64(i+1), nil, []byte("x"), nil)
		c.send(hs)
		c.send(hs)
		c.pc.Close()
		if i%25 == 24 {
			time.Sleep(5 * time.Millisecond) // paced, as below
		}
	}
	eventually(t, 10*time.Second, "the handshakes answered", func() bool { return s.UDPStats().Handshakes >= 3*n })
	if u := s.UDPStats(); u.Sessions != n || u.Opened != n {
		t.Errorf("after %d unverified handshakes: %d sessions (%d opened), want %d", 2*n, u.Sessions, u.Opened, n)
	}
	if err := udpHonest(s.UDPAddr(), "honest", 3); err != nil {
		t.Error(err)
	}
	// Paced: a burst of 1500 datagrams overflows the socket's receive
	// buffer, and UDP drops what does not fit.
	for i, c := range cs {
		c.leave()
		if i%50 == 49 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	eventually(t, 30*time.Second, "sessions closed", func() bool { return s.Stats().Conns.Open == 0 })
}
