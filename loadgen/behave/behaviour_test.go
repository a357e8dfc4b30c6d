package behave

import (
	"cmp"
	"errors"
	"math"
	"math/bits"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/loadgen/wire"
)

const (
	ms  = int64(time.Millisecond)
	sec = int64(time.Second)
)

// planOf returns a plan with one population of n clients of b.
func planOf(seed uint64, d time.Duration, b Behaviour, n int) *Plan {
	return &Plan{Seed: seed, Duration: d, Populations: []Population{{Name: b.Name(), Clients: n, Behaviour: b}}}
}

// actionsOf collects every client's actions.
func actionsOf(t *testing.T, p *Plan) [][]Action {
	t.Helper()
	require.NoError(t, p.Validate())
	var out [][]Action
	for _, c := range p.Clients() {
		out = append(out, Collect(c.Stream(), 200_000))
	}
	return out
}

func allBehaviours(t *testing.T) []Behaviour {
	var out []Behaviour
	for _, n := range BehaviourNames() {
		b, err := NewBehaviour(n)
		require.NoError(t, err)
		require.Equal(t, n, b.Name())
		out = append(out, b)
	}
	return out
}

func TestEveryBehaviourIsDeterministicAndWellFormed(t *testing.T) {
	require.Len(t, BehaviourNames(), 29)
	for _, b := range allBehaviours(t) {
		t.Run(b.Name(), func(t *testing.T) {
			require.NoError(t, b.Validate())
			a1 := actionsOf(t, planOf(7, 20*time.Second, b, 3))
			a2 := actionsOf(t, planOf(7, 20*time.Second, b, 3))
			assert.Equal(t, a1, a2, "same seed, same actions")
			other := actionsOf(t, planOf(8, 20*time.Second, b, 3))
			assert.NotEqual(t, a1, other, "another seed changes them")
			// Clients of one plan differ from each other too.
			assert.NotEqual(t, a1[0], a1[1])
			for ci, acts := range a1 {
				require.NotEmpty(t, acts, "client %d", ci)
				assert.Contains(t, []Op{OpConnect, OpDial}, acts[0].Op, "client %d starts by connecting", ci)
				prev := int64(0)
				for _, a := range acts {
					assert.GreaterOrEqual(t, a.At, prev, "time goes forward: %v", a)
					assert.Less(t, a.At, 20*sec, "within the run: %v", a)
					assert.True(t, a.Op > 0 && a.Op < numOps, "op: %v", a)
					if a.Op == OpSend {
						assert.True(t, a.Kind.Sendable(), "kind: %v", a)
						assert.GreaterOrEqual(t, a.Size, 0)
					}
					if a.Op == OpRaw {
						assert.NotEmpty(t, a.Data)
					}
					prev = a.At
				}
			}
		})
	}
}

func TestValidateNamesTheField(t *testing.T) {
	cases := []struct {
		b     Behaviour
		field string
	}{
		{&Honest{TickRate: 2e6}, "TickRate"},
		{&Honest{TickJitter: 25 * time.Hour}, "TickJitter"},
		{&Honest{DoubleClick: 1.5}, "DoubleClick"},
		{&Honest{DoubleClick: math.NaN()}, "DoubleClick"},
		{&Honest{DoubleClickGap: -1}, "DoubleClickGap"},
		{&Honest{MoveSize: -1}, "MoveSize"},
		{&Laggy{FreezeFor: -1}, "FreezeFor"},
		{&Laggy{Ladder: Ladder{Factor: 0.5}}, "Ladder.Factor"},
		{&Laggy{Ladder: Ladder{Jitter: 2}}, "Ladder.Jitter"},
		{&MassReconnect{Detect: -time.Second}, "Detect"},
		{&TinyFlood{FramesPerWrite: -1}, "FramesPerWrite"},
		{&TinyFlood{Kind: KindRaw}, "Kind"},
		{&ByteFlood{Kind: KindPing}, "Kind"},
		{&ByteFlood{MaxFrame: 64, Under: 60}, "Under"},
		{&BadLength{Mode: "sideways"}, "Mode"},
		{&BadLength{MaxFrame: 10}, "MaxFrame"},
		{&Malformed{Mode: "x"}, "Mode"},
		{&Slowloris{BytesPerWrite: -2}, "BytesPerWrite"},
		{&Replay{Kind: KindMove}, "Kind"},
		{&Replay{Mode: "twice"}, "Mode"},
		{&ChannelHop{Margin: 1.5}, "Margin"},
		{&ChannelHop{Targets: []HopTarget{{Kind: KindMove, Rate: 0}}}, "Targets[0].Rate"},
		{&ChannelHop{Targets: []HopTarget{{Kind: KindMove, Rate: 5}, {Kind: KindHello, Rate: 5}}}, "Targets[1].Kind"},
		{&ResetReconnect{Every: -1}, "Every"},
		{&KeyChurn{Messages: -1}, "Messages"},
		{&HotKey{Rate: -1}, "Rate"},
		{&HotKey{Persist: Persist{ConnectSpread: 25 * time.Hour}}, "ConnectSpread"},
		{&Replay{Every: -1}, "Every"},
		// A replay reuses an id already answered, which the original sent
		// at the same instant cannot be: no negative (none) here.
		{&Replay{ReplayDelay: -1}, "ReplayDelay"},
	}
	for _, c := range cases {
		err := c.b.Validate()
		require.Error(t, err, "%s %s", c.b.Name(), c.field)
		assert.ErrorIs(t, err, ErrParam)
		var pe *ParamError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, c.field, pe.Field, "%s", c.b.Name())
		assert.Equal(t, c.b.Name(), pe.Owner)
	}
	_, err := NewBehaviour("nope")
	assert.ErrorIs(t, err, ErrParam)
}

func count(acts []Action, f func(Action) bool) int {
	n := 0
	for _, a := range acts {
		if f(a) {
			n++
		}
	}
	return n
}

func sends(k Kind) func(Action) bool {
	return func(a Action) bool { return a.Op == OpSend && a.Kind == k }
}

func TestHonestPlaysAtItsRates(t *testing.T) {
	acts := actionsOf(t, planOf(1, 100*time.Second, &Honest{}, 1))[0]
	require.Equal(t, OpConnect, acts[0].Op)
	assert.Less(t, acts[0].At, sec)
	assert.Equal(t, 1, count(acts, func(a Action) bool { return a.Op == OpConnect }))
	// 20 Hz movement for ~99-100 s, one ping a second.
	assert.InDelta(t, 1990, count(acts, sends(KindMove)), 20)
	assert.InDelta(t, 99.5, float64(count(acts, sends(KindPing))), 1.5)
	// Abilities every 2 s on average, some as double clicks: two uses at
	// most 180ms apart.
	abil := filter(acts, sends(KindAbility))
	assert.InDelta(t, 60, len(abil), 25)
	doubles := 0
	for i := 1; i < len(abil); i++ {
		if abil[i].At-abil[i-1].At <= 180*ms {
			doubles++
		}
	}
	assert.Positive(t, doubles)
	assert.Less(t, doubles, len(abil)/2)
	assert.InDelta(t, 7, count(acts, sends(KindChat)), 6)
	assert.LessOrEqual(t, count(acts, sends(KindPurchase)), 5)
	// Movement ticks keep the tick period with bounded jitter.
	move := filter(acts, sends(KindMove))
	for i := 1; i < len(move); i++ {
		gap := move[i].At - move[i-1].At
		assert.True(t, gap >= 40*ms && gap <= 60*ms, "tick gap %v", time.Duration(gap))
	}
	// Turning streams off.
	quiet := actionsOf(t, planOf(1, 10*time.Second, &Honest{TickRate: -1, AbilityEvery: -1, ChatEvery: -1, PurchaseEvery: -1, PingEvery: -1}, 1))[0]
	assert.Len(t, quiet, 1)
}

// TestNegativeMeansNone covers the parameters whose zero means their
// default, so that only a negative value can ask for none.
func TestNegativeMeansNone(t *testing.T) {
	// ConnectSpread, TickJitter: connect at the arrival, tick exactly on
	// the period.
	p := planOf(1, 10*time.Second, &Honest{ConnectSpread: -1, TickJitter: -1}, 3)
	for i, acts := range actionsOf(t, p) {
		c := p.Clients()[i]
		require.Equal(t, OpConnect, acts[0].Op)
		assert.Equal(t, max(c.Arrive, c.Start), acts[0].At, "client %d connects at its arrival", i)
		move := filter(acts, sends(KindMove))
		require.Greater(t, len(move), 150)
		for j := 1; j < len(move); j++ {
			require.Equal(t, 50*ms, move[j].At-move[j-1].At, "client %d tick %d", i, j)
		}
	}
	// Every negative spread is none, the most negative too (whose minus
	// one wraps round).
	for _, spread := range []time.Duration{-1, math.MinInt64} {
		hot := planOf(1, 5*time.Second, &HotKey{Persist: Persist{ConnectSpread: spread}}, 2)
		for i, acts := range actionsOf(t, hot) {
			c := hot.Clients()[i]
			require.NotEmpty(t, acts, "spread %v, hostile client %d", spread, i)
			assert.Equal(t, max(c.Arrive, c.Start), acts[0].At, "spread %v: hostile client %d connects at its arrival", spread, i)
		}
	}

	// DoubleClick: never. The probability is drawn per use whatever it
	// is, so a negative value gives exactly the actions of the least
	// positive one, and not those of the default.
	never := actionsOf(t, planOf(2, 60*time.Second, &Honest{DoubleClick: -1}, 2))
	least := actionsOf(t, planOf(2, 60*time.Second, &Honest{DoubleClick: math.SmallestNonzeroFloat64}, 2))
	dflt := actionsOf(t, planOf(2, 60*time.Second, &Honest{}, 2))
	assert.Equal(t, least, never)
	assert.NotEqual(t, dflt, never)
	assert.Equal(t, never, actionsOf(t, planOf(2, 60*time.Second, &Honest{DoubleClick: math.Inf(-1)}, 2)), "-Inf is none too")

	// Ladder.Jitter: the delays are exactly Base × Factor^i, capped.
	l := &Laggy{FreezeEvery: -1, DropEvery: 5 * time.Second,
		Ladder: Ladder{Base: 100 * time.Millisecond, Factor: 2, Max: time.Second, Jitter: -1, Attempts: 5}}
	acts := actionsOf(t, planOf(3, 60*time.Second, l, 1))[0]
	ladders := ladderDelays(acts, 5)
	assert.Greater(t, len(ladders), 3)
	for _, delays := range ladders {
		for j, d := range delays {
			assert.Equal(t, min(100*ms<<j, sec), d, "attempt %d", j)
		}
	}
}

// ladderDelays returns, for every drop (OpDisconnect) followed by a whole
// ladder of n retries, the delays from the drop to the first retry and
// from each retry to the next. Ladders cut by the end of the run or by the
// next drop are left out.
func ladderDelays(acts []Action, n int) [][]int64 {
	var out [][]int64
	for i, a := range acts {
		if a.Op != OpDisconnect {
			continue
		}
		var delays []int64
		prev := a.At
		for _, b := range acts[i+1:] {
			if b.Op == OpDisconnect || len(delays) == n {
				break
			}
			if b.Op == OpRetry {
				delays = append(delays, b.At-prev)
				prev = b.At
			}
		}
		if len(delays) == n {
			out = append(out, delays)
		}
	}
	return out
}

func filter(acts []Action, f func(Action) bool) []Action {
	var out []Action
	for _, a := range acts {
		if f(a) {
			out = append(out, a)
		}
	}
	return out
}

func TestLaggyFreezesFlushesAndClimbsLadders(t *testing.T) {
	l := &Laggy{FreezeEvery: 3 * time.Second, DropEvery: 10 * time.Second,
		Ladder: Ladder{Base: 100 * time.Millisecond, Factor: 2, Max: time.Second, Jitter: 0.2, Attempts: 5}}
	acts := actionsOf(t, planOf(3, 120*time.Second, l, 1))[0]
	// Freezes and flushes alternate, each freeze 0.4-1.2s long.
	var frozeAt int64 = -1
	freezes := 0
	for _, a := range acts {
		switch a.Op {
		case OpFreeze:
			require.Equal(t, int64(-1), frozeAt, "freeze inside a freeze")
			frozeAt = a.At
			freezes++
		case OpFlush:
			require.NotEqual(t, int64(-1), frozeAt, "flush without a freeze")
			d := a.At - frozeAt
			assert.True(t, d >= 400*ms && d <= 1200*ms, "freeze length %v", time.Duration(d))
			frozeAt = -1
		}
	}
	assert.Greater(t, freezes, 15)
	// Each drop is followed by its ladder: delays grow ×2 (±20%), capped.
	ladders := ladderDelays(acts, 5)
	assert.NotEmpty(t, ladders)
	for _, delays := range ladders {
		for j, d := range delays {
			want := float64(min(100*ms<<j, sec))
			assert.InEpsilon(t, want, float64(d), 0.21, "attempt %d", j)
		}
	}
	assert.Greater(t, count(acts, func(a Action) bool { return a.Op == OpDisconnect }), 5)
}

func TestMassReconnectDropsEveryClientAtTheRestart(t *testing.T) {
	m := &MassReconnect{RestartAt: 5 * time.Second, Detect: 2 * time.Second}
	all := actionsOf(t, planOf(4, 60*time.Second, m, 50))
	var firstRetry []int64
	for _, acts := range all {
		d := filter(acts, func(a Action) bool { return a.Op == OpDisconnect })
		require.Len(t, d, 1)
		assert.Equal(t, 5*sec, d[0].At)
		r := filter(acts, func(a Action) bool { return a.Op == OpRetry })
		require.Len(t, r, 8)
		firstRetry = append(firstRetry, r[0].At)
		assert.GreaterOrEqual(t, r[0].At, 5*sec+125*ms)
		assert.LessOrEqual(t, r[0].At, 7*sec+375*ms)
	}
	// The herd is spread by detection and jitter, not one instant.
	assert.Greater(t, len(uniq(firstRetry)), 45)
}

func uniq(xs []int64) map[int64]bool {
	m := map[int64]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}

func TestFloodsPackFramesAndFillTheCap(t *testing.T) {
	acts := actionsOf(t, planOf(1, 2*time.Second, &TinyFlood{}, 1))[0]
	f := filter(acts, sends(KindMove))
	assert.InDelta(t, 100*1.5, len(f), 60) // 100 writes/s after a connect in the first second
	for _, a := range f {
		assert.Equal(t, 64, a.Count)
		assert.Zero(t, a.Size)
	}
	for _, k := range []Kind{KindMove, KindPurchase} {
		bf := &ByteFlood{MaxFrame: 1000, Under: 3, Kind: k}
		acts = actionsOf(t, planOf(1, 2*time.Second, bf, 1))[0]
		f = filter(acts, sends(k))
		require.NotEmpty(t, f)
		t0, code, _ := k.Wire()
		m := wire.Msg{Type: t0, Kind: code, Payload: make([]byte, f[0].Size)}
		size, err := wire.FrameSize(&m)
		require.NoError(t, err)
		assert.Equal(t, 997, size, "%v frames are just under the cap", k)
	}
}

func TestBadLengthLies(t *testing.T) {
	for _, mode := range []string{"oversize", "short", "long"} {
		acts := actionsOf(t, planOf(2, 3*time.Second, &BadLength{Mode: mode, MaxFrame: 512}, 1))[0]
		raws := filter(acts, func(a Action) bool { return a.Op == OpRaw })
		require.NotEmpty(t, raws, mode)
		// Each attack comes on a fresh connection.
		assert.GreaterOrEqual(t, count(acts, func(a Action) bool { return a.Op == OpConnect }), len(raws))
		for _, a := range raws {
			var m wire.Msg
			n, err := wire.Decode(a.Data, 512, &m)
			switch mode {
			case "oversize":
				assert.ErrorIs(t, err, wire.ErrOversize)
				assert.Greater(t, m.Size, 512)
			case "short":
				// The declared frame is cut inside the body; what follows
				// is not a valid frame either.
				require.ErrorIs(t, err, wire.ErrMalformed, "%x", a.Data)
				assert.Less(t, n, len(a.Data))
			case "long":
				assert.ErrorIs(t, err, wire.ErrIncomplete)
				declared, perr := wire.Peek(a.Data, 512)
				require.NoError(t, perr)
				assert.Greater(t, declared, len(a.Data))
			}
		}
	}
}

func TestMalformedFramesNeverDecode(t *testing.T) {
	acts := actionsOf(t, planOf(5, 5*time.Second, &Malformed{FramesPerWrite: 3}, 2))
	frames := 0
	for _, c := range acts {
		for _, a := range filter(c, func(a Action) bool { return a.Op == OpRaw }) {
			var d wire.Decoder
			d.Reset(a.Data)
			var m wire.Msg
			for i := 0; i < 3; i++ {
				assert.ErrorIs(t, d.Next(&m), wire.ErrMalformed, "%x", a.Data)
				frames++
			}
			assert.Empty(t, d.Rest())
		}
	}
	assert.Greater(t, frames, 300)
	g := actionsOf(t, planOf(5, 2*time.Second, &Malformed{Mode: "garbage", MaxGarbage: 10}, 1))[0]
	for _, a := range filter(g, func(a Action) bool { return a.Op == OpRaw }) {
		assert.True(t, len(a.Data) >= 1 && len(a.Data) <= 10)
	}
}

// A slowloris's actions each offer its whole Hello, to be dribbled
// BytesPerWrite bytes a write (see TestDribblePiece and
// TestSlowlorisRestartsItsFrameOnANewConnection for the writes).
func TestSlowlorisDribblesAWholeFrame(t *testing.T) {
	acts := actionsOf(t, planOf(1, 60*time.Second, &Slowloris{BytesPerWrite: 2, Every: 100 * time.Millisecond}, 1))[0]
	assert.Equal(t, OpDial, acts[0].Op)
	raw := filter(acts, func(a Action) bool { return a.Op == OpRaw })
	assert.Greater(t, len(raw), 500)
	for _, a := range raw {
		assert.Equal(t, 2, a.Count)
		var m wire.Msg
		n, err := wire.Decode(a.Data, 0, &m)
		require.NoError(t, err)
		assert.Equal(t, len(a.Data), n)
		assert.Equal(t, wire.TypeHello, m.Type)
		assert.Equal(t, "slowloris", string(m.Label))
	}
}

func TestReplaySendsDuplicatesAndReplays(t *testing.T) {
	for mode, reuse := range map[string]Reuse{"duplicate": ReuseLast, "replay": ReuseDone} {
		acts := actionsOf(t, planOf(1, 3*time.Second, &Replay{Mode: mode, Copies: 2}, 1))[0]
		s := filter(acts, sends(KindPurchase))
		require.NotEmpty(t, s)
		for i := 0; i+1 < len(s); i += 2 {
			assert.Equal(t, ReuseNone, s[i].Reuse)
			assert.Equal(t, reuse, s[i+1].Reuse)
			assert.Equal(t, 2, s[i+1].Count)
			if reuse == ReuseLast {
				assert.Equal(t, s[i].At, s[i+1].At)
			} else {
				assert.Equal(t, s[i].At+100*ms, s[i+1].At)
			}
		}
	}
}

func TestChannelHopStaysUnderEveryRate(t *testing.T) {
	h := &ChannelHop{Margin: 0.9}
	acts := actionsOf(t, planOf(1, 30*time.Second, h, 1))[0]
	for _, tg := range DefaultHopTargets {
		s := filter(acts, sends(tg.Kind))
		require.NotEmpty(t, s)
		// Never two sends closer than the rate allows.
		for i := 1; i < len(s); i++ {
			assert.GreaterOrEqual(t, s[i].At-s[i-1].At, period(tg.Rate), "%v", tg.Kind)
		}
		assert.InDelta(t, tg.Rate*0.9*29.5, float64(len(s)), tg.Rate*0.9+1)
	}
}

func TestKeyChurnUsesFreshAccounts(t *testing.T) {
	acts := actionsOf(t, planOf(1, 2*time.Second, &KeyChurn{}, 2))
	seen := map[uint64]bool{}
	for _, c := range acts {
		for _, a := range filter(c, func(a Action) bool { return a.Op == OpConnect && a.Account != 0 }) {
			assert.False(t, seen[a.Account], "account %x reused", a.Account)
			assert.NotZero(t, a.Account>>63)
			seen[a.Account] = true
		}
	}
	assert.Greater(t, len(seen), 40)
}

func TestResetReconnectBurstsAfterEveryConnect(t *testing.T) {
	acts := actionsOf(t, planOf(1, 5*time.Second, &ResetReconnect{}, 1))[0]
	connects := count(acts, func(a Action) bool { return a.Op == OpConnect })
	bursts := filter(acts, sends(KindAbility))
	assert.Greater(t, connects, 5)
	assert.Equal(t, connects, len(bursts))
	for _, b := range bursts {
		assert.Equal(t, 20, b.Count)
	}
}

func TestPlanLayouts(t *testing.T) {
	p := &Plan{Seed: 9, Duration: time.Minute, Populations: []Population{
		NATCrowd("nat", 10, 4, Honest{}),
		HotKeyCrowd("hot", 6, HotKey{}),
		{Name: "solo", Clients: 3, Behaviour: &Honest{}},
	}}
	require.NoError(t, p.Validate())
	cs := p.Clients()
	require.Len(t, cs, 19)
	assert.Equal(t, []string{"nat", "hot", "solo"}, p.Labels())
	addrs, accts, seeds := map[uint32]int{}, map[uint64]int{}, map[uint64]bool{}
	for i, c := range cs {
		assert.Equal(t, i, c.Index)
		assert.Equal(t, ClientSeed(9, i), c.Seed)
		assert.Equal(t, int64(time.Minute), c.End)
		addrs[c.Addr]++
		accts[c.Account]++
		seeds[c.Seed] = true
	}
	assert.Len(t, seeds, 19)
	// nat: 10 clients behind 3 addresses (4+4+2); everyone else alone.
	assert.Equal(t, 4, addrs[cs[0].Addr])
	assert.Equal(t, 2, addrs[cs[9].Addr])
	assert.Equal(t, 1, addrs[cs[18].Addr])
	assert.Len(t, addrs, 3+6+3)
	// hot: 6 connections, one account.
	assert.Equal(t, 6, accts[cs[10].Account])
	assert.Len(t, accts, 10+1+3)

	w := Split(cs, 4)
	require.Len(t, w, 4)
	assert.Len(t, w[0], 5)
	assert.Len(t, w[3], 4)
	assert.Equal(t, 5, w[1][1].Index)

	bad := []*Plan{
		{Duration: 0, Populations: p.Populations},
		{Duration: time.Second},
		{Duration: time.Second, Populations: []Population{{Name: "", Clients: 1, Behaviour: &Honest{}}}},
		{Duration: time.Second, Populations: []Population{{Name: "a", Clients: 0, Behaviour: &Honest{}}}},
		{Duration: time.Second, Populations: []Population{{Name: "a", Clients: 1}}},
		{Duration: time.Second, Populations: []Population{{Name: "a", Clients: 1, Behaviour: &Honest{}}, {Name: "a", Clients: 1, Behaviour: &Honest{}}}},
		{Duration: time.Second, Populations: []Population{{Name: "a", Clients: MaxClients + 1, Behaviour: &Honest{}}}},
		{Duration: time.Second, Populations: []Population{{Name: "a", Clients: 1, Behaviour: &Honest{TickRate: math.NaN()}}}},
	}
	for i, b := range bad {
		err := b.Validate()
		assert.ErrorIs(t, err, ErrParam, "plan %d", i)
		var pe *ParamError
		assert.True(t, errors.As(err, &pe), "plan %d", i)
	}
}

// Seeds that agree in the XOR of their halves (as many of a large plan's
// do), or that swap their halves, give unrelated sequences, down to the
// lowest bit: the generator keeps all 64 bits of its seed. A seed whose
// halves are equal gives a sequence with every bit alive.
func TestRandKeepsTheWholeSeed(t *testing.T) {
	const x, d uint64 = 0x0123_4567_89ab_cdef, 0x5555_aaaa
	swapped := bits.RotateLeft64(x, 32)
	for _, pair := range [][2]uint64{{x, x ^ (d | d<<32)}, {x, swapped}} {
		a, b := NewRand(pair[0]), NewRand(pair[1])
		same, sameLow := 0, 0
		for range 1000 {
			u, v := a.Uint32(), b.Uint32()
			if u == v {
				same++
			}
			if u&1 == v&1 {
				sameLow++
			}
		}
		assert.Less(t, same, 2, "seeds %#x and %#x share a sequence", pair[0], pair[1])
		assert.InDelta(t, 500, sameLow, 100, "seeds %#x and %#x share their lowest bits", pair[0], pair[1])
	}
	e := NewRand(0xdead_beef_dead_beef)
	seen, odd := map[uint32]bool{}, 0
	for range 1000 {
		v := e.Uint32()
		seen[v] = true
		odd += int(v & 1)
	}
	assert.Greater(t, len(seen), 990)
	assert.InDelta(t, 500, odd, 100, "equal halves: the lowest bit is alive")
}

func TestRandIsSeededNeverFromTheClock(t *testing.T) {
	for _, seed := range []uint64{0, 1, 1 << 32, 1<<32 | 1} {
		a, b := NewRand(seed), NewRand(seed)
		for i := 0; i < 100; i++ {
			require.Equal(t, a.Uint32(), b.Uint32())
		}
	}
	assert.NotEqual(t, NewRand(ClientSeed(1, 0)).Uint32(), NewRand(ClientSeed(1, 1)).Uint32())
	assert.NotEqual(t, ClientSeed(1, 0), ClientSeed(2, 0))
	assert.NotEqual(t, SubSeed(5, 0), SubSeed(5, 1))
	r := NewRand(42)
	var sum int64
	for i := 0; i < 20000; i++ {
		v := r.Between(-3, 3)
		require.True(t, v >= -3 && v <= 3)
		assert.Equal(t, int64(7), r.Between(7, 7))
		sum += r.Exp(1000)
		big := r.Between(0, 1<<40)
		require.True(t, big >= 0 && big <= 1<<40)
		f := r.Float64()
		require.True(t, f >= 0 && f < 1)
		require.Less(t, r.Intn(5), 5)
	}
	assert.InEpsilon(t, 1000, float64(sum)/20000, 0.05)
	assert.Zero(t, r.Intn(0))
}

func TestMergeAndTickerKeepOrder(t *testing.T) {
	r := NewRand(1)
	tk := newTicker(r, Action{Op: OpSend, Kind: KindMove}, 0, 10, 100, 1000)
	assert.Equal(t, int64(4), tk.jitter, "jitter is capped below half a period")
	acts := Collect(tk, 1000)
	require.Len(t, acts, 100)
	for i := 1; i < len(acts); i++ {
		assert.GreaterOrEqual(t, acts[i].At, acts[i-1].At)
	}
	m := newMerge(
		&List{Acts: []Action{{At: 5, Op: OpFreeze}, {At: 9, Op: OpFlush}}, End: 100},
		nil,
		&List{Acts: []Action{{At: 5, Op: OpConnect}, {At: 7, Op: OpDisconnect}, {At: 100, Op: OpRetry}}, End: 100},
	)
	got := Collect(m, 10)
	ops := make([]Op, len(got))
	for i, a := range got {
		ops[i] = a.Op
	}
	assert.Equal(t, []Op{OpFreeze, OpConnect, OpDisconnect, OpFlush}, ops, "ties go to the first stream; the end cuts")
}

// TestMergeManyStreams merges more streams than a merge holds inline, some
// empty and some ending early, and checks the result against a stable sort
// of all their actions (ties in the order the streams are listed).
func TestMergeManyStreams(t *testing.T) {
	r := NewRand(9)
	for _, n := range []int{1, 7, 8, 9, 20} {
		var subs []Stream
		var all []Action
		for s := range n {
			var acts []Action
			at := int64(0)
			for range r.Intn(30) {
				at += r.Between(0, 3) // ties within and across streams
				acts = append(acts, Action{At: at, Op: OpSend, Size: s})
			}
			subs = append(subs, &List{Acts: acts, End: 40})
			for _, a := range acts {
				if a.At < 40 {
					all = append(all, a)
				}
			}
		}
		slices.SortStableFunc(all, func(a, b Action) int { return cmp.Compare(a.At, b.At) })
		got := Collect(newMerge(subs...), 10_000)
		if len(all) == 0 {
			assert.Empty(t, got)
			continue
		}
		assert.Equal(t, all, got, "%d streams", n)
	}
}

// WritesRaw says which behaviours write raw bytes, which their results
// count in writes: it must be true exactly for those whose clients make
// OpRaw actions, or a scenario would allow a drop rate that divides
// writes by frames (or refuse one that is sound).
func TestWritesRawMatchesTheActions(t *testing.T) {
	raw := map[string]bool{}
	for _, b := range allBehaviours(t) {
		made := false
		for _, acts := range actionsOf(t, planOf(3, 20*time.Second, b, 2)) {
			for _, a := range acts {
				made = made || a.Op == OpRaw
			}
		}
		assert.Equal(t, made, WritesRaw(b), "%s: WritesRaw against its actions", b.Name())
		if WritesRaw(b) {
			raw[b.Name()] = true
		}
	}
	assert.Equal(t, map[string]bool{"bad-length": true, "malformed": true, "malformed-churn": true, "slowloris": true,
		"ws-slow-upgrade": true, "ws-fragment-flood": true, "ws-ping-flood": true, "ws-oversize-header": true,
		"udp-handshake-flood": true, "udp-amplify": true, "udp-garbage": true, "udp-id-guess": true,
		"udp-cookie-replay": true}, raw)
}
