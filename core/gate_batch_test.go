package core

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// batchTestPolicy is testPolicy with budgets tight enough that the random
// traffic of TestCheckBatchMatchesCheck is denied at every layer, earns
// strikes, escalates to drops and lockouts, and locks keys out.
func batchTestPolicy() Policy {
	p := testPolicy()
	p.Transport.Bytes = Budget{Rate: new(20000.0), Burst: new(4000.0)}
	p.Transport.Frames = Budget{Rate: new(200.0), Burst: new(20.0)}
	p.Account = Budget{Rate: new(50.0), Burst: new(12.0)}
	p.Address = Budget{Rate: new(50.0), Burst: new(12.0)}
	p.Match = Budget{Rate: new(100.0), Burst: new(25.0)}
	return p
}

// gateTwin is one of two gates driven through the same history.
type gateTwin struct {
	g   *Gate
	rec recorder
}

func newGateTwin(t *testing.T) *gateTwin {
	tw := &gateTwin{g: mustGate(t, batchTestPolicy(), WithReproducibleTables(7))}
	tw.g.Observe(tw.rec.observer())
	return tw
}

// TestCheckBatchMatchesCheck drives a gate through random traffic by
// CheckBatch and its twin by Check on each message in order: batches of 1
// to 100 messages (across chunks) of many sessions, the same session many
// times in one batch, unknown, closed and forged sessions, malformed,
// oversized and unknown-kind messages, requests with repeated ids, matches;
// between batches requests are answered, sessions closed and opened and
// authenticated, Step run. Every verdict, the counters and every event
// must be the same. Every other batch goes through CheckBatchUntilDisconnect
// instead, and its twin stops at the first Disconnect as it must.
func TestCheckBatchMatchesCheck(t *testing.T) {
	stopped := 0 // batches CheckBatchUntilDisconnect ended early, over every seed
	t.Cleanup(func() {
		if !t.Failed() && stopped == 0 {
			t.Errorf("no batch of CheckBatchUntilDisconnect met a Disconnect: the stop is untested")
		}
		t.Logf("%d batches ended at a Disconnect", stopped)
	})
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			a, b := newGateTwin(t), newGateTwin(t)
			r := rand.New(rand.NewPCG(seed, 3))
			var open []Session
			now := int64(0)
			openOne := func() {
				src := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, byte(r.IntN(3)), byte(r.IntN(12))}), uint16(1000+r.IntN(50000)))
				sa, va := a.g.Open(src, now)
				sb, vb := b.g.Open(src, now)
				require.Equal(t, vb, va)
				require.Equal(t, sb, sa)
				if !va.OK() {
					return
				}
				if r.IntN(3) != 0 { // some stay unauthenticated (address layer)
					acct := 1 + r.Uint64N(15) // accounts shared by sessions
					require.Equal(t, b.g.Authenticate(sb, acct, now), a.g.Authenticate(sa, acct, now))
				}
				open = append(open, sa)
			}
			for range 40 {
				openOne()
			}
			msgs := make([]Message, 100)
			out := make([]Verdict, 100)
			for round := range 400 {
				now += r.Int64N(30 * ms)
				switch k := r.IntN(20); {
				case k == 0 && len(open) > 0:
					i := r.IntN(len(open))
					a.g.Close(open[i], now)
					b.g.Close(open[i], now)
					open = append(open[:i], open[i+1:]...)
				case k == 1:
					openOne()
				case k == 2:
					a.g.Step(now)
					b.g.Step(now)
				case k == 3 && len(open) > 0:
					s, id := open[r.IntN(len(open))], 1+r.Uint64N(40)
					a.g.Done(s, id)
					b.g.Done(s, id)
				}
				ms := msgs[:1+r.IntN(len(msgs))]
				hot := Session(0)
				if len(open) > 0 {
					hot = open[r.IntN(len(open))]
				}
				for i := range ms {
					m := Message{Kind: uint16(r.IntN(5)), Size: uint32(8 + r.IntN(200))}
					switch {
					case r.IntN(3) == 0:
						m.Session = hot // one session many times in a batch
					case len(open) > 0 && r.IntN(20) != 0:
						m.Session = open[r.IntN(len(open))]
					default:
						m.Session = Session(r.Uint64N(1 << 40)) // not open
					}
					switch r.IntN(40) {
					case 0:
						m.Kind = uint16(kSnap) // server-to-client: malformed
					case 1:
						m.Kind = 17 // unknown
					case 2:
						m.Flags = FlagMalformed
					case 3:
						m.Size = 5000
					}
					if m.Kind == kChat || m.Kind == kBuy || m.Kind == kAsk {
						m.Request = 1 + r.Uint64N(40)
					}
					if r.IntN(2) == 0 {
						m.Match = 1 + r.Uint64N(4)
					}
					ms[i] = m
				}
				if round%2 == 1 {
					// CheckBatchUntilDisconnect: the same verdicts up to
					// the first Disconnect, and nothing of the rest
					// checked (the twin stops there too, so the counters
					// and events compared below tell).
					n := a.g.CheckBatchUntilDisconnect(ms, now, out)
					want := len(ms)
					for i, m := range ms {
						v := b.g.Check(m, now)
						if out[i] != v {
							t.Fatalf("round %d: message %d of %d (%+v): batch until disconnect %v, one by one %v", round, i, len(ms), m, out[i], v)
						}
						if v.Action == Disconnect {
							want = i + 1
							break
						}
					}
					if n != want {
						t.Fatalf("round %d: CheckBatchUntilDisconnect decided %d of %d messages, want %d", round, n, len(ms), want)
					}
					if want < len(ms) {
						stopped++
					}
					continue
				}
				a.g.CheckBatch(ms, now, out)
				for i, m := range ms {
					if v := b.g.Check(m, now); out[i] != v {
						t.Fatalf("round %d: message %d of %d (%+v): batch %v, one by one %v", round, i, len(ms), m, out[i], v)
					}
				}
			}
			require.Equal(t, b.g.Stats(), a.g.Stats())
			for _, pair := range [][2]any{{a.rec.limited, b.rec.limited}, {a.rec.floods, b.rec.floods}, {a.rec.strikes, b.rec.strikes}} {
				if !reflect.DeepEqual(pair[0], pair[1]) {
					t.Fatalf("events differ:\n%v\n%v", pair[0], pair[1])
				}
			}
			if len(b.rec.strikes) == 0 || b.g.Stats().Lockouts == 0 {
				t.Logf("seed %d: %d strike events, %d lockouts", seed, len(b.rec.strikes), b.g.Stats().Lockouts)
			}
		})
	}
}

func TestCheckBatchZeroAllocs(t *testing.T) {
	g := mustGate(t, benchPolicy())
	var msgs []Message
	for i := range 50 {
		s := mustOpen(t, g, netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, 0, byte(i)}), 4000), 0)
		mustAuth(t, g, s, uint64(100+i), 0)
		msgs = append(msgs, Message{Session: s, Kind: kMove, Size: 40, Match: uint64(1 + i%3)})
	}
	msgs = append(msgs, msgs[:20]...) // sessions twice in a batch
	out := make([]Verdict, len(msgs))
	now := int64(0)
	if a := testing.AllocsPerRun(100, func() {
		now += 1000
		g.CheckBatch(msgs, now, out)
	}); a != 0 {
		t.Fatalf("CheckBatch: %v allocs per batch", a)
	}
	if a := testing.AllocsPerRun(100, func() {
		now += 1000
		if n := g.CheckBatchUntilDisconnect(msgs, now, out); n != len(msgs) {
			t.Fatalf("CheckBatchUntilDisconnect stopped at %d of %d", n, len(msgs))
		}
	}); a != 0 {
		t.Fatalf("CheckBatchUntilDisconnect: %v allocs per batch", a)
	}
	for i, v := range out {
		require.True(t, v.OK(), "message %d: %v", i, v)
	}
}
