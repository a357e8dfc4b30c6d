package core

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Bots that spend a shared match budget, each within its own limits, do not
// escalate an honest player in the same match: the match layer refuses the
// honest player's messages, but a MatchLimit denial earns no strike by
// default.
func TestMatchDenialsDoNotEscalateBystanders(t *testing.T) {
	p := testPolicy()
	p.Match = Budget{Rate: new(20.0), Burst: new(20.0)}
	g := mustGate(t, p)
	const match = 9
	var bots []Session
	for i := range 4 {
		src := netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(i + 1)}), 4000)
		s := mustOpen(t, g, src, 0)
		mustAuth(t, g, s, uint64(100+i), 0)
		bots = append(bots, s)
	}
	honest := mustOpen(t, g, addrA, 0)
	mustAuth(t, g, honest, 1, 0)
	denied := 0
	var last Verdict
	for tick := int64(0); tick < 200; tick++ { // 20 s at 10 ticks a second
		now := tick * 100 * ms
		for _, b := range bots { // 10 messages a second each: within the channel's rate
			g.Check(Message{Session: b, Kind: kMove, Size: 10, Match: match}, now)
		}
		if tick%2 == 0 { // 5 messages a second
			last = g.Check(Message{Session: honest, Kind: kMove, Size: 10, Match: match}, now)
			if !last.OK() {
				denied++
				assert.Equal(t, MatchLimit, last.Reason, "tick %d", tick)
				assert.NotEqual(t, Disconnect, last.Action, "tick %d", tick)
			}
		}
	}
	assert.Positive(t, denied, "the match budget was spent, so the honest player was refused some")
	assert.Equal(t, StageNone, last.Stage, "a bystander earns no strikes for a shared budget")
}
