package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// benchPolicy has budgets so large that a message a microsecond always
// passes, and a chat channel that a test can drain.
func benchPolicy() Policy {
	p := testPolicy()
	p.Channels[kMove].Rate, p.Channels[kMove].Burst = new(1e8), new(1e8)
	p.Transport.Bytes = Budget{Rate: new(1e9), Burst: new(1e9)}
	p.Transport.Frames = Budget{Rate: new(1e8), Burst: new(1e8)}
	p.Account = Budget{Rate: new(1e8), Burst: new(1e8)}
	p.Match = Budget{Rate: new(1e8), Burst: new(1e8)}
	return p
}

// The hot path allocates nothing: accept, denials at the kind and
// transport layers, a request's round trip, reads, and all of it with an
// observer registered and strikes escalating.
func TestGateAllocs(t *testing.T) {
	for _, observed := range []bool{false, true} {
		p := benchPolicy()
		p.Transport.Bytes = Budget{Rate: new(1e9), Burst: new(1e6)}
		g := mustGate(t, p, WithLockedHook(func(uint64) bool { return false }))
		if observed {
			g.Observe(GateObserver{
				RateLimited: func(RateLimitedEvent) {},
				Flood:       func(FloodEvent) {},
				Strike:      func(StrikeEvent) {},
			})
		}
		s := mustOpen(t, g, addrA, 0)
		mustAuth(t, g, s, 1, 0)
		now := int64(0)
		name := map[bool]string{false: "bare", true: "observed"}[observed]

		accept := testing.AllocsPerRun(1000, func() {
			now += 1000
			if !g.Check(Message{Session: s, Kind: kMove, Size: 40, Match: 9}, now).OK() {
				t.Fatal("accept path denied")
			}
		})
		assert.Zero(t, accept, "%s: accept", name)

		request := testing.AllocsPerRun(1000, func() {
			now += sec / 50
			id := uint64(now)
			if !g.Check(Message{Session: s, Kind: kAsk, Size: 40, Request: id, Match: 9}, now).OK() {
				t.Fatal("request denied")
			}
			g.Done(s, id)
		})
		assert.Zero(t, request, "%s: request and Done", name)

		read := testing.AllocsPerRun(1000, func() {
			now += 1000
			g.Read(s, 1500, now)
			g.Check(Message{Session: s, Kind: kMove, Size: 40, Flags: FlagCharged}, now)
		})
		assert.Zero(t, read, "%s: read", name)

		// Deny at the kind layer (chat: 2 tokens), then on to the drop
		// stage, disconnect and lockout as the strikes mount.
		for i := range 2 {
			require.True(t, g.Check(Message{Session: s, Kind: kChat, Size: 40, Request: uint64(1e12 + i)}, now).OK())
		}
		id := uint64(2e12)
		denyKind := testing.AllocsPerRun(1000, func() {
			id++
			if g.Check(Message{Session: s, Kind: kChat, Size: 40, Request: id}, now).OK() {
				t.Fatal("kind denial passed")
			}
		})
		assert.Zero(t, denyKind, "%s: deny at the kind layer", name)

		s2 := mustOpen(t, g, addrA, now)
		denyTransport := testing.AllocsPerRun(1000, func() {
			g.Check(Message{Session: s2, Kind: kMove, Size: 4000, Flags: FlagMalformed}, now) // format, strikes
			g.Check(Message{Session: s2, Kind: kMove, Size: 4000}, now)                       // bytes, once spent
		})
		assert.Zero(t, denyTransport, "%s: deny at the transport layer", name)

		noSession := testing.AllocsPerRun(1000, func() {
			g.Check(Message{Session: 12345, Kind: kMove, Size: 40}, now)
		})
		assert.Zero(t, noSession, "%s: no session", name)
		assert.Zero(t, testing.AllocsPerRun(100, func() { g.Step(now) }), "%s: step", name)
	}
}
