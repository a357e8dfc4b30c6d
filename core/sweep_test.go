package core

import (
	"net/netip"
	"testing"
)

// Step sweeps a keyed table only once it is half full: below that, idle
// keys stay (forgetting them frees nothing); above it, idle full buckets go.
func TestStepSweepsKeyedTablesOnlyWhenHalfFull(t *testing.T) {
	p := testPolicy()
	p.Tables.Accounts = new(uint32(64))
	g := mustGate(t, p)
	auth := func(n int, now int64) {
		for i := range n {
			src := netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(i + 1)}), 4000)
			s := mustOpen(t, g, src, now)
			mustAuth(t, g, s, uint64(1000+i), now)
			if !g.Check(Message{Session: s, Kind: kMove, Size: 10}, now).OK() {
				t.Fatal("check")
			}
			g.Close(s, now)
		}
	}
	auth(10, 0)
	before := g.account.size()
	if before == 0 {
		t.Fatal("no account keys tracked")
	}
	g.Step(10 * sec) // every bucket is full again, but the table is sparse
	if n := g.account.size(); n != before {
		t.Fatalf("a sparse table was swept: %d keys, had %d", n, before)
	}
	auth(40, 10*sec) // now more than half of 64
	g.Step(30 * sec)
	if n := g.account.size(); n != 0 {
		t.Fatalf("a half-full table of idle keys kept %d keys", n)
	}
}
