package core

import (
	"math/rand/v2"
	"net/netip"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// defaultsPolicy is a policy at default settings but for the channels it
// names (with default rates).
func defaultsPolicy() Policy {
	return Policy{Channels: []Channel{
		{Name: "move", Class: ClassInput},
		{Name: "aim", Class: ClassInput},
		{Name: "chat", Class: ClassRequest},
	}}
}

type arrival struct {
	at      int64
	kind    uint16
	size    uint32
	request uint64
}

// An honest player on a bad connection: move at 30 Hz and aim at 20 Hz
// (both within their default 30/s), the odd chat, network jitter of ±15 ms.
// The connection freezes for one second; what the client sent meanwhile
// arrives at once when it thaws, in a few MSS-sized reads (a TCP stream
// delivers its backlog together), including a chat the client retried
// while frozen. At default settings this reaches at most warn (in fact it
// costs a ChannelLimit or two just after the flush, and the duplicate).
func TestStrikesFreezeThenFlushReachesAtMostWarn(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		g := mustGate(t, defaultsPolicy())
		var rec recorder
		g.Observe(rec.observer())
		s := mustOpen(t, g, addrA, 0)
		mustAuth(t, g, s, 1, 0)
		rng := rand.New(rand.NewPCG(seed, 99))
		jitter := func() int64 { return 30*ms + rng.Int64N(30*ms+1) - 15*ms }
		var arr []arrival
		for i := int64(0); i*sec/30 < 40*sec; i++ {
			arr = append(arr, arrival{at: i*sec/30 + jitter(), kind: 0, size: 40})
		}
		for i := int64(0); i*sec/20 < 40*sec; i++ {
			arr = append(arr, arrival{at: i*sec/20 + jitter(), kind: 1, size: 24})
		}
		id := uint64(0)
		for at := 3 * sec; at < 40*sec; at += 3 * sec {
			id++
			arr = append(arr, arrival{at: at + 500*ms + jitter(), kind: 2, size: 120, request: id})
		}
		id++ // a chat sent while frozen, and its retry
		arr = append(arr, arrival{at: 10*sec + 300*ms, kind: 2, size: 120, request: id}, arrival{at: 10*sec + 900*ms, kind: 2, size: 120, request: id})
		sort.Slice(arr, func(i, j int) bool { return arr[i].at < arr[j].at })

		const freezeFrom, thaw = 10 * sec, 11 * sec
		var flushed []arrival
		maxStage := StageNone
		denied := map[Reason]int{}
		accepted := 0
		check := func(a arrival, now int64, flags MessageFlags) {
			v := g.Check(Message{Session: s, Kind: a.kind, Size: a.size, Request: a.request, Flags: flags}, now)
			maxStage = max(maxStage, v.Stage)
			require.NotEqual(t, Disconnect, v.Action, "seed %d", seed)
			if v.OK() {
				accepted++
				if a.request != 0 {
					g.Done(s, a.request) // the handler answers within the tick
				}
			} else {
				denied[v.Reason]++
			}
		}
		for _, a := range arr {
			if a.at >= freezeFrom && a.at < thaw {
				flushed = append(flushed, a)
				continue
			}
			if len(flushed) > 0 && a.at >= thaw {
				// The backlog arrives as a few reads of up to one MSS.
				var held []uint64
				for len(flushed) > 0 {
					n, k := uint32(0), 0
					for k < len(flushed) && n+flushed[k].size <= 1460 {
						n += flushed[k].size
						k++
					}
					require.True(t, g.Read(s, n, thaw).OK(), "seed %d: the backlog fits the byte budget", seed)
					// The retried chat is a duplicate of a request whose
					// handler is still running: the handlers of the
					// backlog run after it has been read.
					for _, f := range flushed[:k] {
						v := g.Check(Message{Session: s, Kind: f.kind, Size: f.size, Request: f.request, Flags: FlagCharged}, thaw)
						maxStage = max(maxStage, v.Stage)
						if v.OK() {
							accepted++
							if f.request != 0 {
								held = append(held, f.request)
							}
						} else {
							denied[v.Reason]++
						}
					}
					flushed = flushed[k:]
				}
				for _, r := range held {
					g.Done(s, r)
				}
			}
			check(a, a.at, 0)
			if a.at/(sec/60) != (a.at+1)/(sec/60) {
				g.Step(a.at)
			}
		}
		t.Logf("seed %d: max stage %v, denials %v, accepted %d of %d", seed, maxStage, denied, accepted, len(arr))
		assert.LessOrEqual(t, maxStage, StageWarn, "seed %d: denials %v", seed, denied)
		assert.LessOrEqual(t, rec.maxStage(), StageWarn, "seed %d", seed)
		assert.Zero(t, denied[ByteLimit]+denied[FrameLimit], "seed %d: the transport never objects to an honest flush", seed)
		assert.Equal(t, 1, denied[Duplicate], "seed %d: the retried chat", seed)
		assert.GreaterOrEqual(t, float64(accepted)/float64(len(arr)), 0.99, "seed %d: denials %v", seed, denied)
	}
}

// A sustained flood reaches disconnect within a fraction of a second, and
// as it goes on (the server has not closed the socket yet, or the client
// comes back) a lockout of the account, which refuses it on reconnect.
func TestStrikesSustainedFloodDisconnectsThenLocksOut(t *testing.T) {
	g := mustGate(t, defaultsPolicy())
	var rec recorder
	g.Observe(rec.observer())
	s := mustOpen(t, g, addrA, 0)
	mustAuth(t, g, s, 1, 0)
	var disconnectAt, lockoutAt int64 = -1, -1
	for at := int64(0); at < 10*sec && lockoutAt < 0; at += sec / 2000 { // 2,000 tiny frames a second, one read each
		v := g.Check(Message{Session: s, Kind: 0, Size: 40}, at)
		if v.Action == Disconnect && disconnectAt < 0 {
			disconnectAt = at
		}
		if v.Stage == StageLockout || v.Reason == Lockout && v.Action == Disconnect && g.accounts.m[1].lock.locked(at) {
			lockoutAt = at
		}
	}
	require.GreaterOrEqual(t, disconnectAt, int64(0), "never disconnected")
	require.GreaterOrEqual(t, lockoutAt, int64(0), "never locked out")
	assert.Less(t, disconnectAt, sec, "disconnect within a second")
	assert.Less(t, lockoutAt, 2*sec)
	assert.Equal(t, []StrikeStage{StageWarn, StageShed, StageDrop, StageDisconnect, StageLockout}, stagesOf(&rec))
	st := g.Stats()
	assert.Equal(t, uint64(1), st.Lockouts)
	assert.Positive(t, st.Count("move", ByteLimit))

	g.Close(s, lockoutAt)
	at := lockoutAt + sec
	s2 := mustOpen(t, g, addrA, at)
	v := g.Authenticate(s2, 1, at)
	assert.Equal(t, Disconnect, v.Action)
	assert.Equal(t, Lockout, v.Reason)
	assert.Equal(t, time.Minute-time.Second, v.RetryAfter, "the default lockout is a minute")
	mustAuth(t, g, s2, 2, at) // the address is not locked: another account behind the same NAT plays on
	assert.True(t, g.Check(Message{Session: s2, Kind: 0, Size: 40}, at).OK())

	// After the lockout and the decay of the score, the account may return.
	later := lockoutAt + 3*time.Minute.Nanoseconds()
	s3 := mustOpen(t, g, addrA, later)
	mustAuth(t, g, s3, 1, later)
	assert.True(t, g.Check(Message{Session: s3, Kind: 0, Size: 40}, later).OK())
}

// Before authentication the strikes are the session's and the lockout is
// its source address's.
func TestStrikesPreAuthFloodLocksTheAddress(t *testing.T) {
	g := mustGate(t, defaultsPolicy())
	s := mustOpen(t, g, addrA, 0)
	var locked bool
	for at := int64(0); at < 5*sec && !locked; at += ms {
		g.Check(Message{Session: s, Kind: 0, Size: 40, Flags: FlagMalformed}, at)
		locked = g.lookup(s).addr.lock.locked(at)
	}
	require.True(t, locked)
	_, v := g.Open(netip.MustParseAddrPort("192.0.2.1:5555"), 5*sec)
	assert.Equal(t, Lockout, v.Reason)
	assert.Equal(t, Disconnect, v.Action)
	mustOpen(t, g, netip.MustParseAddrPort("192.0.2.2:5555"), 5*sec)
}

func stagesOf(r *recorder) []StrikeStage {
	r.mu.Lock()
	defer r.mu.Unlock()
	// A score hovering at a rung (drain between two strikes takes it just
	// under, the next strike back over) reports the rise again: keep
	// distinct consecutive stages.
	var out []StrikeStage
	for _, e := range r.strikes {
		if len(out) == 0 || out[len(out)-1] != e.Stage {
			out = append(out, e.Stage)
		}
	}
	return out
}

// Strikes decay linearly: the disconnect rung's worth of points per window.
func TestStrikesDecay(t *testing.T) {
	g := mustGate(t, testPolicy()) // default strikes: window 30s, disconnect 16
	s := mustOpen(t, g, addrA, 0)
	rec := &g.lookup(s).pre
	pts := func(at int64) float64 { return g.ladder.points(rec.score(at)) }

	v := g.Check(Message{Session: s, Kind: kMove, Size: 10, Flags: FlagMalformed}, 0)
	assert.Equal(t, StageWarn, v.Stage, "one malformed frame (4 points) warns")
	assert.InDelta(t, 4, pts(0), 1e-6)
	assert.Equal(t, StageWarn, g.Check(Message{Session: s, Kind: kMove, Size: 10}, 0).Stage)
	assert.InDelta(t, 4-16.0/30*3, pts(3*sec), 1e-6)
	assert.Equal(t, StageNone, g.Check(Message{Session: s, Kind: kMove, Size: 10}, 3*sec).Stage)
	assert.Positive(t, pts(7500*ms-1))
	assert.Zero(t, pts(7500*ms), "4 points are gone after a quarter of the window")

	// Light strikes spaced out never build up.
	at := 20 * sec
	for i := range 20 {
		for range 11 {
			g.Check(Message{Session: s, Kind: kMove, Size: 10}, at) // 10 pass, 1 ChannelLimit
		}
		assert.LessOrEqual(t, pts(at), 1.0+1e-9, "round %d", i)
		at += 2 * sec
	}

	// Heavy strikes in a burst escalate; decay brings the stage back down.
	at += 10 * sec
	for range 3 {
		g.Check(Message{Session: s, Kind: kMove, Size: 10, Flags: FlagMalformed}, at)
	}
	v = g.Check(Message{Session: s, Kind: kMove, Size: 10}, at)
	assert.Equal(t, Lockout, v.Reason, "12 points: the drop stage drops everything")
	assert.Equal(t, Drop, v.Action)
	after := at + 15*sec
	v = g.Check(Message{Session: s, Kind: kMove, Size: 10}, after)
	assert.True(t, v.OK())
	assert.Equal(t, StageWarn, v.Stage, "13 points less 8 in 15s")
	assert.Equal(t, StageNone, g.Check(Message{Session: s, Kind: kMove, Size: 10}, after+10*sec).Stage)
}

// At the shed stage every cost is multiplied by the shed factor.
func TestStrikesShed(t *testing.T) {
	g := mustGate(t, testPolicy())
	s := mustOpen(t, g, addrA, 0)
	for range 2 {
		g.Check(Message{Session: s, Kind: kMove, Size: 10, Flags: FlagMalformed}, 0)
	}
	n := 0
	for range 10 {
		v := g.Check(Message{Session: s, Kind: kMove, Size: 10}, 0)
		if v.OK() {
			require.Equal(t, StageShed, v.Stage)
			n++
		}
	}
	assert.Equal(t, 5, n, "move's burst of 10 at cost 2")
}

func TestStrikeRecord(t *testing.T) {
	var r strikeRecord
	r.zeroAt.Store(100)
	assert.Zero(t, r.score(100))
	b, a := r.add(50, 1000, 100)
	assert.Equal(t, int64(0), b)
	assert.Equal(t, int64(50), a)
	b, a = r.add(50, 1000, 120)
	assert.Equal(t, int64(30), b)
	assert.Equal(t, int64(80), a)
	_, a = r.add(5000, 1000, 120)
	assert.Equal(t, int64(1000), a, "capped at the ceiling")
	_, a = r.add(1, 1000, 120)
	assert.Equal(t, int64(1000), a)
	assert.Equal(t, int64(1070), r.score(50), "read at an earlier time, the score is higher by the drain in between")

	// Concurrent adds are all counted.
	var c strikeRecord
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				c.add(3, 1<<40, 0)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int64(8*1000*3), c.score(0))
}

func TestStrikesDisabled(t *testing.T) {
	p := testPolicy()
	p.Strikes.Disabled = true
	g := mustGate(t, p)
	s := mustOpen(t, g, addrA, 0)
	for range 100 {
		v := g.Check(Message{Session: s, Kind: kMove, Size: 10, Flags: FlagMalformed}, 0)
		assert.Equal(t, Drop, v.Action)
		assert.Equal(t, StageNone, v.Stage)
	}
	assert.True(t, g.Check(Message{Session: s, Kind: kMove, Size: 10}, 0).OK())
}

func TestStrikeWeightsFromPolicy(t *testing.T) {
	p := testPolicy()
	p.Strikes.Weights = map[Reason]float64{Malformed: 0, ChannelLimit: 16}
	g := mustGate(t, p)
	s := mustOpen(t, g, addrA, 0)
	assert.Equal(t, StageNone, g.Check(Message{Session: s, Kind: kMove, Size: 10, Flags: FlagMalformed}, 0).Stage, "weight 0 earns nothing")
	for range 10 {
		require.True(t, g.Check(Message{Session: s, Kind: kMove, Size: 10}, 0).OK())
	}
	v := g.Check(Message{Session: s, Kind: kMove, Size: 10}, 0)
	assert.Equal(t, ChannelLimit, v.Reason)
	assert.Equal(t, Disconnect, v.Action, "one heavy strike straight to the disconnect rung")
}
