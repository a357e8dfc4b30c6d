package behave

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/loadgen/wire"
)

// A tiny positive rate (which validates) means (almost) no events, not one
// per nanosecond: period no longer overflows.
func TestTinyRateMeansNoEvents(t *testing.T) {
	h := &Honest{TickRate: 1e-11, AbilityEvery: -1, ChatEvery: -1, PurchaseEvery: -1, PingEvery: -1}
	require.NoError(t, h.Validate())
	acts := actionsOf(t, planOf(1, time.Second, h, 1))[0]
	moves := count(acts, sends(KindMove))
	t.Logf("period(1e-11)=%d ns; moves in 1s: %d", period(1e-11), moves)
	assert.LessOrEqual(t, moves, 1, "1e-11 moves/s should give at most one move")

	p := &Plan{Seed: 1, Duration: time.Minute, Populations: []Population{{Name: "p", Clients: 5,
		Behaviour: &Honest{}, Arrival: Arrival{Kind: ArrivalPoisson, Rate: 1e-11}}}}
	require.NoError(t, p.Validate())
	for _, c := range p.Clients() {
		t.Logf("client %d arrives at %d ns", c.Index, c.Arrive)
		assert.GreaterOrEqual(t, c.Arrive, c.End, "1e-11 clients/s: nobody should arrive within a minute")
	}
}

// A mass-reconnect client that arrives after the restart (or after End,
// when it never acts) is not connected by the restart's ladder before it
// arrives.
func TestMassReconnectNeverConnectsBeforeArrival(t *testing.T) {
	p := &Plan{Seed: 1, Duration: 10 * time.Second, Populations: []Population{{Name: "m", Clients: 4,
		Behaviour: &MassReconnect{}, Arrival: Arrival{Kind: ArrivalRamp, Over: 40 * time.Second}}}}
	require.NoError(t, p.Validate())
	for _, c := range p.Clients() {
		acts := Collect(c.Stream(), 1000)
		for _, a := range acts {
			if a.Op == OpRetry || a.Op == OpConnect {
				t.Logf("client %d arrive=%v: %v", c.Index, time.Duration(c.Arrive), a)
				assert.GreaterOrEqual(t, a.At, c.Arrive, "client %d connects before it arrives", c.Index)
			}
		}
	}
}

// bad-length "long" always promises more than it sends: never a whole,
// honest frame.
func TestBadLengthLongIsNeverAWholeFrame(t *testing.T) {
	acts := actionsOf(t, planOf(2, 60*time.Second, &BadLength{Mode: "long", MaxFrame: 64, SameConn: true}, 4))
	honest, total := 0, 0
	for _, c := range acts {
		for _, a := range filter(c, func(a Action) bool { return a.Op == OpRaw }) {
			total++
			var m wire.Msg
			n, err := wire.Decode(a.Data, 64, &m)
			if err == nil && n == len(a.Data) {
				honest++
				if honest == 1 {
					t.Logf("complete valid frame: %x (%v kind=%d id=%d)", a.Data, m.Type, m.Kind, m.ID)
				}
			}
		}
	}
	t.Logf("%d of %d long attacks are whole, valid frames", honest, total)
	assert.Zero(t, honest)
}

// A byte flood's MaxFrame below the wire's least frame limit is refused,
// naming MaxFrame, not Under.
func TestByteFloodMaxFrameIsChecked(t *testing.T) {
	err := ByteFlood{MaxFrame: 5}.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "MaxFrame")
}

// A slowloris in session mode dribbles valid requests, each with an id of
// its own: the same id every time was a replay from the second on, so more
// than its pace was hostile. Each tick offers a whole request, of which the
// worker dribbles BytesPerWrite bytes.
func TestSlowlorisSessionRequestsHaveTheirOwnIDs(t *testing.T) {
	acts := actionsOf(t, planOf(1, 2*time.Minute, &Slowloris{Session: true, BytesPerWrite: 8, Every: 100 * time.Millisecond}, 1))[0]
	ids := map[uint64]bool{}
	for _, a := range acts {
		if a.Op != OpRaw {
			continue
		}
		require.Equal(t, 8, a.Count, "bytes per write")
		var m wire.Msg
		n, err := wire.Decode(a.Data, 64, &m)
		require.NoError(t, err)
		require.Equal(t, len(a.Data), n, "one whole frame")
		require.Equal(t, wire.TypeRequest, m.Type)
		require.False(t, ids[m.ID], "id %d twice", m.ID)
		ids[m.ID] = true
	}
	assert.Greater(t, len(ids), 10)
}
