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

// sec is a second in the drivers' int64 nanoseconds.
const sec = int64(time.Second)

// planOf is a plan of n clients of behaviour b.
func planOf(seed uint64, d time.Duration, b behave.Behaviour, n int) *behave.Plan {
	return &behave.Plan{Seed: seed, Duration: d, Populations: []behave.Population{{Name: b.Name(), Clients: n, Behaviour: b}}}
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
	simDriver, err := sim.NewSim(behave.DefaultPolicy(), sim.SimConfig{OnDecision: func(pop int, k behave.Kind, o record.Outcome, at int64) {
		decs = append(decs, dec{k, o})
	}}, clients)
	require.NoError(t, err)
	rec, err := record.NewRecorder(plan.Labels(), record.HistConfig{})
	require.NoError(t, err)
	w, err := drive.NewWorker(simDriver, rec, clients, drive.RunConfig{})
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
			simDriver, err := sim.NewSim(behave.DefaultPolicy(), sim.SimConfig{}, clients)
			require.NoError(t, err)
			d := &connBytes{Sim: simDriver, got: map[drive.ConnID][]byte{}}
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
