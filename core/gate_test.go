package core

import (
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	sec = int64(time.Second)
	ms  = int64(time.Millisecond)
)

// Channel indexes of testPolicy.
const (
	kMove = iota
	kAbility
	kChat
	kBuy
	kAsk
	kSnap
)

// testPolicy has one channel of each class and generous transport and
// aggregate budgets, so that each test exercises the layer it means to.
func testPolicy() Policy {
	return Policy{
		Channels: []Channel{
			{Name: "move", Class: ClassInput, Rate: new(10.0), Burst: new(10.0), MaxSize: new(uint32(128))},
			{Name: "ability", Class: ClassPredicted, Rate: new(5.0), Burst: new(5.0)},
			{Name: "chat", Class: ClassRequest, Rate: new(2.0), Burst: new(2.0), MaxSize: new(uint32(256))},
			{Name: "buy", Class: ClassRequest, Rate: new(10.0), Burst: new(10.0), InFlight: 1},
			{Name: "ask", Class: ClassRequest, Rate: new(100.0), Burst: new(100.0)},
			{Name: "snap", Class: ClassInput, Direction: ServerToClient},
		},
		Transport: Transport{
			Bytes:  Budget{Rate: new(1e7), Burst: new(1e6)},
			Frames: Budget{Rate: new(1e5), Burst: new(1e5)},
		},
		Account: Budget{Rate: new(1000.0), Burst: new(1000.0)},
		Address: Budget{Rate: new(1000.0), Burst: new(1000.0)},
		Match:   Budget{Rate: new(1e4), Burst: new(1e4)},
	}
}

var addrA = netip.MustParseAddrPort("192.0.2.1:4000")

func mustGate(t testing.TB, p Policy, opts ...GateOption) *Gate {
	t.Helper()
	g, err := NewGate(p, 0, opts...)
	require.NoError(t, err)
	return g
}

func mustOpen(t testing.TB, g *Gate, src netip.AddrPort, now int64) Session {
	t.Helper()
	s, v := g.Open(src, now)
	require.Equal(t, Accept, v.Action, "open: %+v", v)
	require.NotZero(t, s)
	return s
}

func mustAuth(t testing.TB, g *Gate, s Session, account uint64, now int64) {
	t.Helper()
	v := g.Authenticate(s, account, now)
	require.Equal(t, Accept, v.Action, "authenticate: %+v", v)
}

// recorder collects events.
type recorder struct {
	mu      sync.Mutex
	limited []RateLimitedEvent
	floods  []FloodEvent
	strikes []StrikeEvent
}

func (r *recorder) observer() GateObserver {
	return GateObserver{
		RateLimited: func(e RateLimitedEvent) { r.mu.Lock(); r.limited = append(r.limited, e); r.mu.Unlock() },
		Flood:       func(e FloodEvent) { r.mu.Lock(); r.floods = append(r.floods, e); r.mu.Unlock() },
		Strike:      func(e StrikeEvent) { r.mu.Lock(); r.strikes = append(r.strikes, e); r.mu.Unlock() },
	}
}

func (r *recorder) maxStage() StrikeStage {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := StageNone
	for _, e := range r.strikes {
		m = max(m, e.Stage)
	}
	return m
}

// Every reason the gate can give is reachable, reported with the right
// action, counted under the right row and reported by the right event.
func TestGateEveryReason(t *testing.T) {
	type env struct {
		g   *Gate
		s   Session
		now int64
	}
	cases := []struct {
		name   string
		policy func(p *Policy)
		opts   []GateOption
		auth   bool
		// setup runs before the checked message and returns it.
		setup  func(t *testing.T, e *env) Message
		reason Reason
		action Action
		row    string
		retry  bool // a retry-after is expected
		flood  bool // reported by a FloodEvent rather than RateLimited
	}{
		{name: "ChannelLimit input dropped", reason: ChannelLimit, action: Drop, row: "move",
			setup: func(t *testing.T, e *env) Message {
				for range 10 {
					require.True(t, e.g.Check(Message{Session: e.s, Kind: kMove, Size: 20}, 0).OK())
				}
				return Message{Session: e.s, Kind: kMove, Size: 20}
			}},
		{name: "ChannelLimit predicted dropped", reason: ChannelLimit, action: Drop, row: "ability",
			setup: func(t *testing.T, e *env) Message {
				for range 5 {
					require.True(t, e.g.Check(Message{Session: e.s, Kind: kAbility, Size: 20}, 0).OK())
				}
				return Message{Session: e.s, Kind: kAbility, Size: 20}
			}},
		{name: "ChannelLimit request rejected with retry-after", reason: ChannelLimit, action: Reject, row: "chat", retry: true,
			setup: func(t *testing.T, e *env) Message {
				for i := range 2 {
					require.True(t, e.g.Check(Message{Session: e.s, Kind: kChat, Size: 20, Request: uint64(i + 1)}, 0).OK())
					e.g.Done(e.s, uint64(i+1))
				}
				return Message{Session: e.s, Kind: kChat, Size: 20, Request: 3}
			}},
		{name: "ByteLimit", reason: ByteLimit, action: Drop, row: "move", flood: true,
			policy: func(p *Policy) { p.Transport.Bytes = Budget{} }, // defaults: 8,000 burst, 800 minimum charge
			setup: func(t *testing.T, e *env) Message {
				for range 10 { // 10 tiny messages cost 10 × 800
					require.True(t, e.g.Check(Message{Session: e.s, Kind: kMove, Size: 3}, 0).OK())
				}
				return Message{Session: e.s, Kind: kMove, Size: 3}
			}},
		{name: "FrameLimit", reason: FrameLimit, action: Drop, row: "move", flood: true,
			policy: func(p *Policy) { p.Transport.Frames = Budget{Rate: new(240.0), Burst: new(3.0)} },
			setup: func(t *testing.T, e *env) Message {
				require.True(t, e.g.Read(e.s, 100, 0).OK())
				for range 3 {
					require.True(t, e.g.Check(Message{Session: e.s, Kind: kMove, Size: 30, Flags: FlagCharged}, 0).OK())
				}
				return Message{Session: e.s, Kind: kMove, Size: 30, Flags: FlagCharged}
			}},
		{name: "AccountLimit request", reason: AccountLimit, action: Reject, row: "ask", retry: true, auth: true,
			policy: func(p *Policy) { p.Account = Budget{Rate: new(1.0), Burst: new(3.0)} },
			setup: func(t *testing.T, e *env) Message {
				for range 3 {
					require.True(t, e.g.Check(Message{Session: e.s, Kind: kMove, Size: 20}, 0).OK())
				}
				return Message{Session: e.s, Kind: kAsk, Size: 20, Request: 9}
			}},
		{name: "AccountLimit input", reason: AccountLimit, action: Drop, row: "move", auth: true,
			policy: func(p *Policy) { p.Account = Budget{Rate: new(1.0), Burst: new(3.0)} },
			setup: func(t *testing.T, e *env) Message {
				for range 3 {
					require.True(t, e.g.Check(Message{Session: e.s, Kind: kMove, Size: 20}, 0).OK())
				}
				return Message{Session: e.s, Kind: kMove, Size: 20}
			}},
		{name: "AddressLimit before authentication", reason: AddressLimit, action: Drop, row: "move",
			policy: func(p *Policy) { p.Address = Budget{Rate: new(1.0), Burst: new(3.0)} },
			setup: func(t *testing.T, e *env) Message {
				// Open took one token; two messages take the rest.
				for range 2 {
					require.True(t, e.g.Check(Message{Session: e.s, Kind: kMove, Size: 20}, 0).OK())
				}
				return Message{Session: e.s, Kind: kMove, Size: 20}
			}},
		{name: "MatchLimit", reason: MatchLimit, action: Reject, row: "ask", retry: true,
			policy: func(p *Policy) { p.Match = Budget{Rate: new(1.0), Burst: new(2.0)} },
			setup: func(t *testing.T, e *env) Message {
				for range 2 {
					require.True(t, e.g.Check(Message{Session: e.s, Kind: kMove, Size: 20, Match: 77}, 0).OK())
				}
				return Message{Session: e.s, Kind: kAsk, Size: 20, Match: 77, Request: 5}
			}},
		{name: "InFlightLimit", reason: InFlightLimit, action: Reject, row: "buy", auth: true,
			setup: func(t *testing.T, e *env) Message {
				require.True(t, e.g.Check(Message{Session: e.s, Kind: kBuy, Size: 20, Request: 1}, 0).OK())
				return Message{Session: e.s, Kind: kBuy, Size: 20, Request: 2}
			}},
		{name: "Oversize on the channel", reason: Oversize, action: Drop, row: "chat", flood: true,
			setup: func(t *testing.T, e *env) Message {
				return Message{Session: e.s, Kind: kChat, Size: 257, Request: 1}
			}},
		{name: "Oversize beyond the max frame", reason: Oversize, action: Drop, row: "(unknown)", flood: true,
			setup: func(t *testing.T, e *env) Message {
				return Message{Session: e.s, Kind: 200, Size: 5000}
			}},
		{name: "Malformed flag", reason: Malformed, action: Drop, row: "move", flood: true,
			setup: func(t *testing.T, e *env) Message {
				return Message{Session: e.s, Kind: kMove, Size: 20, Flags: FlagMalformed}
			}},
		{name: "Malformed unknown kind", reason: Malformed, action: Drop, row: "(unknown)", flood: true,
			setup: func(t *testing.T, e *env) Message { return Message{Session: e.s, Kind: 200, Size: 20} }},
		{name: "Malformed request without id", reason: Malformed, action: Drop, row: "chat", flood: true,
			setup: func(t *testing.T, e *env) Message { return Message{Session: e.s, Kind: kChat, Size: 20} }},
		{name: "Malformed server-to-client channel", reason: Malformed, action: Drop, row: "snap", flood: true,
			setup: func(t *testing.T, e *env) Message { return Message{Session: e.s, Kind: kSnap, Size: 20} }},
		{name: "Duplicate while the handler runs", reason: Duplicate, action: Drop, row: "ask", flood: true,
			setup: func(t *testing.T, e *env) Message {
				require.True(t, e.g.Check(Message{Session: e.s, Kind: kAsk, Size: 20, Request: 7}, 0).OK())
				return Message{Session: e.s, Kind: kAsk, Size: 20, Request: 7}
			}},
		{name: "Replay after completion", reason: Replay, action: Drop, row: "ask", flood: true,
			setup: func(t *testing.T, e *env) Message {
				require.True(t, e.g.Check(Message{Session: e.s, Kind: kAsk, Size: 20, Request: 7}, 0).OK())
				e.g.Done(e.s, 7)
				return Message{Session: e.s, Kind: kAsk, Size: 20, Request: 7}
			}},
		{name: "NoSession", reason: NoSession, action: Drop, row: "move",
			setup: func(t *testing.T, e *env) Message {
				e.g.Close(e.s, 0)
				return Message{Session: e.s, Kind: kMove, Size: 20}
			}},
		{name: "Locked", reason: Locked, action: Reject, row: "ask", auth: true,
			opts: []GateOption{WithLockedHook(func(a uint64) bool { return a == 42 })},
			setup: func(t *testing.T, e *env) Message {
				return Message{Session: e.s, Kind: kAsk, Size: 20, Request: 1}
			}},
		{name: "Lockout", reason: Lockout, action: Disconnect, row: "move",
			policy: func(p *Policy) {
				p.Strikes.Ladder = Ladder{Warn: new(1.0), Shed: new(2.0), Drop: new(3.0), Disconnect: new(4.0), Lockout: new(8.0)}
			},
			setup: func(t *testing.T, e *env) Message {
				// Two malformed frames (4 points each) reach the lockout rung.
				e.g.Check(Message{Session: e.s, Kind: kMove, Size: 20, Flags: FlagMalformed}, 0)
				v := e.g.Check(Message{Session: e.s, Kind: kMove, Size: 20, Flags: FlagMalformed}, 0)
				require.Equal(t, Disconnect, v.Action)
				require.Equal(t, StageLockout, v.Stage)
				return Message{Session: e.s, Kind: kMove, Size: 20}
			}},
		{name: "TableFull for a match", reason: TableFull, action: Reject, row: "ask", retry: true,
			policy: func(p *Policy) { p.Tables.Matches = new(uint32(1)); p.Match = Budget{Rate: new(1.0), Burst: new(10.0)} },
			setup: func(t *testing.T, e *env) Message {
				// Fill the match table with throttled (not full) buckets.
				for id := uint64(1); id < 1000; id++ {
					v := e.g.Check(Message{Session: e.s, Kind: kMove, Size: 20, Match: id}, e.now)
					if v.Reason == TableFull {
						return Message{Session: e.s, Kind: kAsk, Size: 20, Match: id, Request: 1}
					}
					e.now += sec / 10 // keep move's bucket from emptying
				}
				t.Fatal("the match table never filled")
				return Message{}
			}},
		{name: "QueueFull", reason: QueueFull, action: Reject, row: "ask",
			policy: func(p *Policy) { p.Queue.Commands = new(uint32(2)) },
			setup: func(t *testing.T, e *env) Message {
				for id := uint64(1); id <= 2; id++ {
					require.True(t, e.g.Check(Message{Session: e.s, Kind: kAsk, Size: 20, Request: id}, 0).OK())
				}
				return Message{Session: e.s, Kind: kAsk, Size: 20, Request: 3}
			}},
		{name: "QueueFull by pending bytes", reason: QueueFull, action: Reject, row: "ask",
			policy: func(p *Policy) { p.Queue.PendingBytes = new(uint32(100)) },
			setup: func(t *testing.T, e *env) Message {
				require.True(t, e.g.Check(Message{Session: e.s, Kind: kAsk, Size: 90, Request: 1}, 0).OK())
				return Message{Session: e.s, Kind: kAsk, Size: 20, Request: 2}
			}},
	}
	seen := map[Reason]bool{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := testPolicy()
			if tc.policy != nil {
				tc.policy(&p)
			}
			g := mustGate(t, p, tc.opts...)
			var rec recorder
			g.Observe(rec.observer())
			e := &env{g: g, s: mustOpen(t, g, addrA, 0)}
			if tc.auth {
				mustAuth(t, g, e.s, 42, 0)
			}
			m := tc.setup(t, e)
			before := g.Stats()
			v := g.Check(m, e.now)
			assert.Equal(t, tc.reason, v.Reason, "%+v", v)
			assert.Equal(t, tc.action, v.Action, "%+v", v)
			if tc.retry {
				assert.Positive(t, v.RetryAfter)
			} else {
				assert.Zero(t, v.RetryAfter)
			}
			after := g.Stats()
			assert.Equal(t, before.Count(tc.row, tc.reason)+1, after.Count(tc.row, tc.reason), "counted under %s", tc.row)
			assert.Equal(t, before.Actions[tc.action]+1, after.Actions[tc.action])

			g.Step(e.now)
			last := func() (RateLimitedEvent, bool) {
				rec.mu.Lock()
				defer rec.mu.Unlock()
				if len(rec.limited) == 0 {
					return RateLimitedEvent{}, false
				}
				return rec.limited[len(rec.limited)-1], true
			}
			switch {
			case tc.reason == NoSession:
				_, ok := last()
				assert.False(t, ok, "no event names a session that is not open")
			case tc.flood:
				rec.mu.Lock()
				require.NotEmpty(t, rec.floods)
				f := rec.floods[len(rec.floods)-1]
				rec.mu.Unlock()
				assert.Equal(t, tc.reason, f.Reason)
				assert.Equal(t, e.s, f.Session)
				assert.Positive(t, f.Count)
			default:
				ev, ok := last()
				require.True(t, ok)
				assert.Equal(t, tc.reason, ev.Reason)
				assert.Equal(t, tc.action, ev.Action)
				assert.Equal(t, e.s, ev.Session)
				if tc.row[0] != '(' {
					assert.Equal(t, tc.row, ev.Channel)
				}
			}
			seen[tc.reason] = true
		})
	}
	for _, r := range Reasons() {
		if r == None || r == Closed || r == ConnLimit {
			continue // Closed belongs to the keyed limiter's shutdown; the gate has none. ConnLimit refuses only Open and Authenticate (gate_conncap_test.go)
		}
		assert.True(t, seen[r], "reason %v is not covered", r)
	}
}

func TestGateOpenRefusals(t *testing.T) {
	t.Run("session table full", func(t *testing.T) {
		p := testPolicy()
		p.Tables.Sessions = new(uint32(1))
		g := mustGate(t, p)
		s := mustOpen(t, g, addrA, 0)
		_, v := g.Open(addrA, 0)
		assert.Equal(t, Verdict{Action: Disconnect, Reason: TableFull}, v)
		g.Close(s, 0)
		mustOpen(t, g, addrA, 0)
		st := g.Stats()
		assert.Equal(t, uint64(1), st.Count("(session)", TableFull))
	})
	t.Run("connection flood from one address", func(t *testing.T) {
		p := testPolicy()
		p.Address = Budget{Rate: new(1.0), Burst: new(2.0)}
		g := mustGate(t, p)
		mustOpen(t, g, addrA, 0)
		mustOpen(t, g, addrA, 0)
		_, v := g.Open(netip.MustParseAddrPort("192.0.2.1:4001"), 0)
		assert.Equal(t, AddressLimit, v.Reason)
		assert.Equal(t, Disconnect, v.Action)
		assert.Equal(t, time.Second, v.RetryAfter)
		// Another address is not affected.
		mustOpen(t, g, netip.MustParseAddrPort("198.51.100.7:4000"), 0)
		// IPv6 hosts are keyed by their /64.
		mustOpen(t, g, netip.MustParseAddrPort("[2001:db8::1]:1"), 0)
		mustOpen(t, g, netip.MustParseAddrPort("[2001:db8::2]:1"), 0)
		_, v = g.Open(netip.MustParseAddrPort("[2001:db8::3]:1"), 0)
		assert.Equal(t, AddressLimit, v.Reason)
	})
	t.Run("authenticate", func(t *testing.T) {
		g := mustGate(t, testPolicy())
		assert.Equal(t, NoSession, g.Authenticate(12345, 1, 0).Reason)
		s := mustOpen(t, g, addrA, 0)
		mustAuth(t, g, s, 1, 0)
		mustAuth(t, g, s, 1, 0) // idempotent
		assert.Equal(t, Malformed, g.Authenticate(s, 2, 0).Reason, "a session cannot change account")
		s2 := mustOpen(t, g, addrA, 0)
		assert.Equal(t, Malformed, g.Authenticate(s2, 0, 0).Reason, "account 0 means none")
	})
}
