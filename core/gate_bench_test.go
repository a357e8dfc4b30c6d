package core

import (
	"net/netip"
	"sync/atomic"
	"testing"
)

// BenchmarkGate measures Check on its three common paths, from one
// goroutine and from GOMAXPROCS goroutines (one session each, as a server
// with one reader per connection has):
//
//   - accept: an authenticated session's message passes every layer
//     (transport bytes and frames, account, channel);
//   - deny-kind: a request denied at the channel layer, after the transport
//     and account layers took their tokens, which are given back;
//   - deny-transport: a message denied by the spent byte budget.
//
// Strikes are disabled in the deny cases so that every iteration takes the
// path named instead of escalating to the drop stage; every verdict is
// checked to carry the reason of the path named.
func BenchmarkGate(b *testing.B) {
	type setup struct {
		policy func() Policy
		prep   func(b *testing.B, g *Gate, s Session)
		msg    func(s Session, i uint64) Message
		step   int64  // how far now advances per op
		reason Reason // every verdict's
	}
	cases := []struct {
		name string
		setup
	}{
		{"accept", setup{
			policy: benchPolicy,
			msg:    func(s Session, _ uint64) Message { return Message{Session: s, Kind: kMove, Size: 40} },
			step:   1000,
			reason: None,
		}},
		{"deny-kind", setup{
			policy: func() Policy { p := benchPolicy(); p.Strikes.Disabled = true; return p },
			prep: func(b *testing.B, g *Gate, s Session) {
				for i := range 2 {
					id := uint64(1 + i)
					if !g.Check(Message{Session: s, Kind: kChat, Size: 40, Request: id}, 0).OK() {
						b.Fatal("setup")
					}
					// Answered: a request left pending holds its slot of
					// the session's pending table, and the timed requests
					// whose ids fall on it (2 in 64) would be refused
					// QueueFull before the account and channel layers.
					g.Done(s, id)
				}
			},
			msg:    func(s Session, i uint64) Message { return Message{Session: s, Kind: kChat, Size: 40, Request: 100 + i} },
			reason: ChannelLimit,
		}},
		{"deny-transport", setup{
			policy: func() Policy {
				p := benchPolicy()
				p.Strikes.Disabled = true
				p.Transport.Bytes = Budget{} // the defaults: 8,000 bytes, 800 per read
				return p
			},
			prep: func(b *testing.B, g *Gate, s Session) {
				for range 10 {
					if !g.Check(Message{Session: s, Kind: kMove, Size: 40}, 0).OK() {
						b.Fatal("setup")
					}
				}
			},
			msg:    func(s Session, _ uint64) Message { return Message{Session: s, Kind: kMove, Size: 40} },
			reason: ByteLimit,
		}},
	}
	open := func(b *testing.B, c setup, n int) (*Gate, []Session) {
		g, err := NewGate(c.policy(), 0)
		if err != nil {
			b.Fatal(err)
		}
		ss := make([]Session, n)
		for i := range ss {
			src := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}), 1)
			s, v := g.Open(src, 0)
			if !v.OK() || !g.Authenticate(s, uint64(i+1), 0).OK() {
				b.Fatal("open")
			}
			if c.prep != nil {
				c.prep(b, g, s)
			}
			ss[i] = s
		}
		return g, ss
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.Run("serial", func(b *testing.B) {
				g, ss := open(b, c.setup, 1)
				s := ss[0]
				now := int64(0)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					now += c.step
					if v := g.Check(c.msg(s, uint64(i)), now); v.Reason != c.reason || v.OK() != (c.reason == None) {
						b.Fatalf("wrong path: %v", v)
					}
				}
			})
			b.Run("parallel", func(b *testing.B) {
				g, ss := open(b, c.setup, 256)
				var next atomic.Int64
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					s := ss[int(next.Add(1)-1)%len(ss)]
					now := int64(0)
					i := uint64(0)
					for pb.Next() {
						now += c.step
						i++
						if v := g.Check(c.msg(s, i), now); v.Reason != c.reason || v.OK() != (c.reason == None) {
							b.Errorf("wrong path: %v", v)
							return
						}
					}
				})
			})
		})
	}
}
