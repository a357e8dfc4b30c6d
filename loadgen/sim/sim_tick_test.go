package sim

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// tickClient is one logged-in connection to a sim, driven by hand: it
// writes requests at chosen virtual times and collects when each is
// answered.
type tickClient struct {
	t      *testing.T
	sim    *Sim
	id     drive.ConnID
	next   uint64
	answer map[uint64]int64 // request id -> reply time
}

func newTickClient(t *testing.T, cfg SimConfig) *tickClient {
	t.Helper()
	clients := []behave.Client{{Label: "p", Account: 1, Addr: 1, End: int64(time.Minute)}}
	sim, err := NewSim(behave.DefaultPolicy(), cfg, clients)
	require.NoError(t, err)
	c := &tickClient{t: t, sim: sim, id: drive.ConnID{Client: 0, Gen: 1}, answer: map[uint64]int64{}}
	require.NoError(t, sim.Dial(c.id, 1))
	var tok [8]byte
	hello, err := wire.AppendHello(nil, tok[:], []byte("p"))
	require.NoError(t, err)
	require.NoError(t, sim.Write(c.id, hello))
	return c
}

// at moves the sim's clock to t, collecting replies, then writes a request.
func (c *tickClient) requestAt(t int64) uint64 {
	c.t.Helper()
	c.pollUntil(t)
	require.Equal(c.t, t, c.sim.Now())
	c.next++
	f, err := wire.AppendRequest(nil, uint8(behave.DefaultChannels[behave.KindChat]), c.next, nil)
	require.NoError(c.t, err)
	require.NoError(c.t, c.sim.Write(c.id, f))
	return c.next
}

func (c *tickClient) pollUntil(t int64) {
	c.t.Helper()
	var ev drive.Event
	for {
		ok, err := c.sim.Poll(context.Background(), t, &ev)
		require.NoError(c.t, err)
		if !ok {
			return
		}
		if ev.Kind == drive.EvReply && ev.ID != 0 {
			require.Equal(c.t, wire.StatusOK, ev.Status, "request %d", ev.ID)
			c.answer[ev.ID] = ev.At
		}
	}
}

// The sim answers a request at the next tick, as the reference server
// answers the requests it queued on its tick: a wait spread over (0, one
// tick], not a constant. A request that arrives at a tick's instant waits
// for the next one (the tick due then ran before it was read), and the
// queue is empty once every request is answered.
func TestSimAnswersRequestsAtTheNextTick(t *testing.T) {
	c := newTickClient(t, SimConfig{})
	p := c.sim.period
	ids := map[uint64]int64{
		c.requestAt(10 * int64(time.Millisecond)): p,
		c.requestAt(p):       2 * p,
		c.requestAt(p + 1):   2 * p,
		c.requestAt(2*p - 1): 2 * p,
	}
	c.pollUntil(5 * p)
	for id, want := range ids {
		require.Equal(t, want, c.answer[id], "request %d", id)
	}
	require.Zero(t, c.sim.queued, "requests still queued")
}

// At the end of a stall the tick that fell due in it runs after the writes
// the stall held, and answers their requests, as the server's one queue
// does with inputs and requests read together.
func TestSimAnswersAStalledRequestAtTheStallsTick(t *testing.T) {
	ms := int64(time.Millisecond)
	c := newTickClient(t, SimConfig{Stalls: []Stall{{At: 10 * time.Millisecond, For: 90 * time.Millisecond}}})
	id := c.requestAt(50 * ms)
	c.pollUntil(300 * ms)
	require.Equal(t, 100*ms, c.answer[id])
}
