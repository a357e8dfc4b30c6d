package bench

import (
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/internal/cputime"
)

// gateSessions is how many sessions (and accounts, one each) the -100k
// cases of BenchmarkGate draw from.
const gateSessions = 100_000

// gateFixture is a gate with gateSessions authenticated sessions, ten to a
// match, and the messages the -100k cases decide: one input message of a
// session drawn at random per op, from a pre-generated sequence.
type gateFixture struct {
	g    *core.Gate
	msgs []core.Message // gateDraws messages of random sessions
	now  int64          // the latest time a run took at
}

const (
	gateDraws = 1 << 20
	gateMask  = gateDraws - 1
)

var gateFix *gateFixture

func gateFixtureOf(b *testing.B) *gateFixture {
	b.Helper()
	if gateFix != nil {
		return gateFix
	}
	p := gatePolicy()
	p.Tables = core.Tables{Sessions: new(uint32(1 << 17)), Accounts: new(uint32(1 << 17)), Addresses: new(uint32(1 << 17)), Matches: new(uint32(1 << 14))}
	g, err := core.NewGate(p, 0)
	if err != nil {
		b.Fatal(err)
	}
	sessions := make([]core.Session, gateSessions)
	for i := range sessions {
		src := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 4000)
		s, v := g.Open(src, 0)
		if !v.OK() {
			b.Fatalf("open %d: %+v", i, v)
		}
		if v := g.Authenticate(s, uint64(1_000_000+i), 0); !v.OK() {
			b.Fatalf("authenticate %d: %+v", i, v)
		}
		sessions[i] = s
	}
	r := rand.New(rand.NewPCG(30, 100_000))
	msgs := make([]core.Message, gateDraws)
	for i := range msgs {
		j := r.IntN(gateSessions)
		msgs[i] = core.Message{Session: sessions[j], Match: uint64(1 + j/10), Size: 32, Kind: 0}
	}
	gateFix = &gateFixture{g: g, msgs: msgs, now: 1000}
	return gateFix
}

// benchGate100k is BenchmarkGate's accept-100k (batch 0: Check on each
// message) and accept-batch-100k (CheckBatch on batch messages at a time):
// one op is one message of a session drawn from 100,000 (its account one of
// 100,000, its match one of 10,000), every layer passing. The clock
// advances 1µs per message; a batch's messages share the reading of its
// last.
func benchGate100k(b *testing.B, batch int) {
	large(b)
	f := gateFixtureOf(b)
	g, msgs := f.g, f.msgs
	out := make([]core.Verdict, max(batch, 1))
	now, ok := f.now, 0
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cputime.Serial()
	if batch == 0 {
		for i := 0; i < b.N; i++ {
			now += 1000
			if g.Check(msgs[i&gateMask], now).OK() {
				ok++
			}
		}
	} else {
		for i := 0; i < b.N; i += batch {
			c := min(batch, b.N-i)
			start := i & gateMask
			ms := msgs[start:min(start+c, gateDraws)] // a batch ends at the end of the draws
			now += int64(1000 * len(ms))
			g.CheckBatch(ms, now, out)
			for _, v := range out[:len(ms)] {
				if v.OK() {
					ok++
				}
			}
			i -= c - len(ms)
		}
	}
	cpu.Stop(b)
	b.StopTimer()
	f.now = now
	if ok != b.N {
		b.Fatalf("%d of %d messages accepted", ok, b.N)
	}
}
