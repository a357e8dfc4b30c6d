package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/record"
	"github.com/sluicedev/sluice/loadgen/sim"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// A tiny positive rate (which validates) means (almost) no events, not one
// per nanosecond: period no longer overflows.
func TestTinyRateMeansNoEvents(t *testing.T) {
	h := &behave.Honest{TickRate: 1e-11, AbilityEvery: -1, ChatEvery: -1, PurchaseEvery: -1, PingEvery: -1}
	require.NoError(t, h.Validate())
	acts := actionsOf(t, planOf(1, time.Second, h, 1))[0]
	moves := count(acts, sends(behave.KindMove))
	t.Logf("period(1e-11)=%d ns; moves in 1s: %d", behave.Period(1e-11), moves)
	assert.LessOrEqual(t, moves, 1, "1e-11 moves/s should give at most one move")

	p := &behave.Plan{Seed: 1, Duration: time.Minute, Populations: []behave.Population{{Name: "p", Clients: 5,
		Behaviour: &behave.Honest{}, Arrival: behave.Arrival{Kind: behave.ArrivalPoisson, Rate: 1e-11}}}}
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
	p := &behave.Plan{Seed: 1, Duration: 10 * time.Second, Populations: []behave.Population{{Name: "m", Clients: 4,
		Behaviour: &behave.MassReconnect{}, Arrival: behave.Arrival{Kind: behave.ArrivalRamp, Over: 40 * time.Second}}}}
	require.NoError(t, p.Validate())
	for _, c := range p.Clients() {
		acts := behave.Collect(c.Stream(), 1000)
		for _, a := range acts {
			if a.Op == behave.OpRetry || a.Op == behave.OpConnect {
				t.Logf("client %d arrive=%v: %v", c.Index, time.Duration(c.Arrive), a)
				assert.GreaterOrEqual(t, a.At, c.Arrive, "client %d connects before it arrives", c.Index)
			}
		}
	}
}

// bad-length "long" always promises more than it sends: never a whole,
// honest frame.
func TestBadLengthLongIsNeverAWholeFrame(t *testing.T) {
	acts := actionsOf(t, planOf(2, 60*time.Second, &behave.BadLength{Mode: "long", MaxFrame: 64, SameConn: true}, 4))
	honest, total := 0, 0
	for _, c := range acts {
		for _, a := range filter(c, func(a behave.Action) bool { return a.Op == behave.OpRaw }) {
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

// Slowloris with Session dribbles a valid request (on the chat channel of
// DefaultChannels): only its pace is hostile, so no decision is Malformed.
func TestSlowlorisSessionDribblesAValidRequest(t *testing.T) {
	s := &behave.Slowloris{Session: true, BytesPerWrite: 64, Every: 100 * time.Millisecond}
	plan := planOf(1, 3*time.Second, s, 1)
	require.NoError(t, plan.Validate())
	clients := plan.Clients()
	type dec struct {
		k behave.Kind
		o record.Outcome
	}
	var decs []dec
	sim, err := sim.NewSim(behave.DefaultPolicy(), sim.SimConfig{OnDecision: func(pop int, k behave.Kind, o record.Outcome, at int64) {
		decs = append(decs, dec{k, o})
	}}, clients)
	require.NoError(t, err)
	rec, err := record.NewRecorder(plan.Labels(), record.HistConfig{})
	require.NoError(t, err)
	w, err := drive.NewWorker(sim, rec, clients, drive.RunConfig{})
	require.NoError(t, err)
	require.NoError(t, w.Run(context.Background()))
	accepted := 0
	for _, d := range decs {
		assert.NotEqual(t, record.Outcome(core.Malformed), d.o, "the dribbled frame should be a valid request")
		if d.k == behave.KindChat && d.o == record.Accepted {
			accepted++
		}
	}
	assert.Positive(t, accepted, "no dribbled request was completed and accepted: %v", decs)
}

// A byte flood's MaxFrame below the wire's least frame limit is refused,
// naming MaxFrame, not Under.
func TestByteFloodMaxFrameIsChecked(t *testing.T) {
	err := behave.ByteFlood{MaxFrame: 5}.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "MaxFrame")
}

// A slowloris in session mode dribbles valid requests, each with an id of
// its own: the same id every time was a replay from the second on, so more
// than its pace was hostile. Each tick offers a whole request, of which the
// worker dribbles BytesPerWrite bytes.
func TestSlowlorisSessionRequestsHaveTheirOwnIDs(t *testing.T) {
	acts := actionsOf(t, planOf(1, 2*time.Minute, &behave.Slowloris{Session: true, BytesPerWrite: 8, Every: 100 * time.Millisecond}, 1))[0]
	ids := map[uint64]bool{}
	for _, a := range acts {
		if a.Op != behave.OpRaw {
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

// A slowloris whose connection ends mid-frame (the server's partial-frame
// timeout, 5 s, cuts a frame dribbled a byte every 500 ms) starts its frame
// afresh on the next connection. Continuing it there sent the tail of a
// frame as the new connection's first bytes, which the server read as a
// malformed or oversize frame: after its first cut a slowloris sent
// garbage. Every connection's bytes, as the simulated server received
// them, must be whole frames and then the start of a frame of the kind the
// slowloris dribbles.
func TestSlowlorisRestartsItsFrameOnANewConnection(t *testing.T) {
	for _, session := range []bool{false, true} {
		t.Run(map[bool]string{false: "hello", true: "session"}[session], func(t *testing.T) {
			plan := planOf(3, 40*time.Second, &behave.Slowloris{Session: session}, 2)
			require.NoError(t, plan.Validate())
			clients := plan.Clients()
			sim, err := sim.NewSim(behave.DefaultPolicy(), sim.SimConfig{}, clients)
			require.NoError(t, err)
			d := &connBytes{Sim: sim, got: map[drive.ConnID][]byte{}}
			rec, err := record.NewRecorder(plan.Labels(), record.HistConfig{})
			require.NoError(t, err)
			w, err := drive.NewWorker(d, rec, clients, drive.RunConfig{})
			require.NoError(t, err)
			require.NoError(t, w.Run(context.Background()))

			dribbled := wire.TypeRequest
			if !session {
				dribbled = wire.TypeHello
			}
			midFrame := 0 // connections that ended inside a frame
			for id, b := range d.got {
				var dec wire.Decoder
				dec.Reset(b)
				var m wire.Msg
				for dec.Next(&m) == nil {
				}
				rest := dec.Rest()
				if len(rest) == 0 {
					continue
				}
				midFrame++
				_, err := wire.Decode(rest, 0, &m)
				require.ErrorIs(t, err, wire.ErrIncomplete, "connection %v ends in %x, not the start of a frame (all: %x)", id, rest, b)
				if len(rest) > wire.LenSize {
					require.Equal(t, byte(dribbled), rest[wire.LenSize], "connection %v ends in %x, not the start of a %v (all: %x)", id, rest, dribbled, b)
				}
			}
			t.Logf("%d connections, %d ended mid-frame", len(d.got), midFrame)
			require.Greater(t, len(d.got), len(clients), "no client reconnected")
			require.Greater(t, midFrame, len(clients), "connections did not end mid-frame: nothing to restart")
		})
	}
}

// connBytes is the sim, recording the bytes each connection wrote.
type connBytes struct {
	*sim.Sim
	got map[drive.ConnID][]byte
}

func (d *connBytes) Write(id drive.ConnID, p []byte) error {
	d.got[id] = append(d.got[id], p...)
	return d.Sim.Write(id, p)
}
