package core

import (
	"net/netip"
	"testing"
)

// BenchmarkEntityInsert is one login of an account the gate's account
// table does not hold (Open, Authenticate, Close), into an empty table
// and into a table full of 100,000 entries that cannot be forgotten
// (fresh accounts that each sent four malformed frames, 16 strike points,
// from distinct addresses), where the login is refused TableFull. Their
// ratio is what a full table costs a refused login: a constant, not a
// sweep of the table under the gate's lock.
func BenchmarkEntityInsert(b *testing.B) {
	const full = 100_000
	src := func(i int) netip.AddrPort {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 1)
	}
	mk := func(b *testing.B, fill int) *Gate {
		p := testPolicy()
		p.Tables.Accounts = new(uint32(full))
		p.Tables.Addresses = new(uint32(4 * full))
		p.Address = Budget{Disabled: true}
		g := mustGate(b, p)
		for i := range fill {
			s, v := g.Open(src(i), 0)
			if !v.OK() || !g.Authenticate(s, uint64(i+1), 0).OK() {
				b.Fatalf("fill %d: %v", i, v)
			}
			for range 4 {
				g.Check(Message{Session: s, Kind: kMove, Size: 12, Flags: FlagMalformed}, 0)
			}
			g.Close(s, 0)
		}
		return g
	}
	run := func(b *testing.B, g *Gate, wantOK bool) {
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			s, v := g.Open(src(full+i%full), 1)
			if !v.OK() {
				b.Fatal(v)
			}
			if v := g.Authenticate(s, uint64(1<<40+i), 1); v.OK() != wantOK {
				b.Fatal(v)
			}
			g.Close(s, 1)
		}
	}
	b.Run("empty", func(b *testing.B) { run(b, mk(b, 0), true) })
	b.Run("full-100k", func(b *testing.B) { run(b, mk(b, full), false) })
}
