package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// batchTestConfig is a server whose decisions do not depend on when the
// frames arrive within a test: every budget that refuses refills so slowly
// (a token in 100 s or more), strikes decay so slowly (over an hour) and
// the tick is so rare (none runs during the test, so no request is
// answered and none leaves the in-flight tables) that a burst written at
// once and the same frames written one at a time over a second or two get
// the same decisions. The transport budgets never refuse.
func batchTestConfig() Config {
	cfg := testConfig()
	cfg.Policy = core.Policy{
		Channels: []core.Channel{
			{Name: "move", Class: core.ClassInput, Rate: new(0.01), Burst: new(6.0), MaxSize: new(uint32(64))},
			{Name: "req", Class: core.ClassRequest, Rate: new(0.01), Burst: new(4.0)},
			{Name: "ping", Class: core.ClassInput, Rate: new(0.01), Burst: new(3.0)},
		},
		// Rungs half a point off the sums of whole weights the denials
		// add, so that no score sits on a rung, where the slightest
		// decay between two frames one at a time would move it below.
		Strikes: core.Strikes{Window: new(core.Duration(time.Hour)), Ladder: core.Ladder{
			Warn: new(3.5), Shed: new(7.5), Drop: new(11.5), Disconnect: new(15.5), Lockout: new(31.5),
		}},
	}
	cfg.Policy.Transport.Bytes = core.Budget{Rate: new(1e6), Burst: new(1e6)}
	cfg.Policy.Transport.Frames = core.Budget{Rate: new(1e6), Burst: new(1e6)}
	cfg.PingChannel = "ping"
	cfg.TickRate = 0.001
	return cfg
}

// batchTestFrames is a login's worth of traffic after its Hello: inputs,
// requests, pings and inputs on the request channel (malformed: wrong
// class), mixed, more than every budget holds, so that the channels
// refuse, strikes escalate to drops and a Disconnect, and frames follow
// the Disconnect.
func batchTestFrames(t *testing.T) [][]byte {
	var frames [][]byte
	id := uint64(0)
	for i := range 60 {
		var b []byte
		var err error
		switch {
		case i%7 == 3:
			id++
			b, err = wire.AppendRequest(nil, 1, id, []byte("buy"))
		case i%11 == 5:
			b = wire.AppendPing(nil, uint64(i))
		case i%13 == 8:
			b, err = wire.AppendInput(nil, 1, []byte{2}) // an input on a request channel
		default:
			b, err = wire.AppendInput(nil, 0, []byte{byte(i), 1, 2})
		}
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, b)
	}
	return frames
}

// batchOutcome is what one login of TestBurstDecidedAsFramesOneByOne saw
// and left: what the client read back (replies without their retry times,
// which depend on when they were decided, and pongs), the server's counts
// of its population, and the gate's counters.
type batchOutcome struct {
	replies    []string
	pongs      int
	disconnect core.Reason
	pop        PopulationStats
	gate       core.GateStats
	batched    uint64
}

// runBatchLogin logs one client in to a fresh server and writes frames:
// all in one write (burst), or one at a time, each written once the server
// has counted the one before (so that each is a read of its own), until
// the server ends the connection.
func runBatchLogin(t *testing.T, frames [][]byte, burst bool) batchOutcome {
	s := startServer(t, batchTestConfig())
	cl := mustDial(t, s.Addr())
	cl.mustHello(t, "a", "p")
	frameCount := func() uint64 { return s.Stats().Populations["p"].Frames }
	if burst {
		cl.mustWrite(t, slices.Concat(frames...))
	} else {
		for i, f := range frames {
			if err := cl.write(f); err != nil {
				break // the server ended the connection
			}
			want := uint64(i + 2) // the Hello and frames[:i+1]
			deadline := time.Now().Add(10 * time.Second)
			for frameCount() < want && s.Stats().Conns.Open > 0 {
				if time.Now().After(deadline) {
					t.Fatalf("frame %d: not counted in 10s", i)
				}
				time.Sleep(200 * time.Microsecond)
			}
			if s.Stats().Conns.Open == 0 {
				break
			}
		}
	}
	var o batchOutcome
	deadline := time.Now().Add(10 * time.Second)
	for {
		cl.nc.SetReadDeadline(deadline)
		var m wire.Msg
		err := cl.fr.ReadMsg(&m)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal("the server did not end the connection in 10s")
			}
			break
		}
		switch m.Type {
		case wire.TypeReply:
			o.replies = append(o.replies, fmt.Sprintf("%d:%v:%v", m.ID, m.Status, core.Reason(m.Reason)))
		case wire.TypePong:
			o.pongs++
		case wire.TypeDisconnect:
			o.disconnect = core.Reason(m.Reason)
		}
	}
	st := settledStats(t, s)
	o.pop = st.Populations["p"]
	o.gate = s.Gate().Stats()
	// The transport row counts reads (Gate.Read), not frames: one per
	// frame one at a time, one or two for the burst. Every read passes
	// (the budgets never refuse), so each was one Accept.
	for i, k := range o.gate.Kinds {
		if k.Name == "(transport)" {
			o.gate.Actions[core.Accept] -= k.Counts[core.None]
			o.gate.Kinds[i].Counts[core.None] = 0
		}
	}
	o.batched = s.batchedFrames.Load()
	return o
}

// TestBurstDecidedAsFramesOneByOne: a burst of frames in one write, which
// the server reads at once and checks in runs (Gate.CheckBatchUntilDisconnect),
// gets the same decisions as the same frames written one at a time, each
// read and checked on its own: the same replies and pongs, the same
// Disconnect, the same counts by channel and reason, and the same gate
// counters (but for the reads, which the transport row counts), none of
// the frames after the Disconnect checked.
func TestBurstDecidedAsFramesOneByOne(t *testing.T) {
	frames := batchTestFrames(t)
	one := runBatchLogin(t, frames, false)
	burst := runBatchLogin(t, frames, true)
	if one.batched != 0 {
		t.Fatalf("frames written one at a time: %d checked in runs", one.batched)
	}
	if burst.batched < 2 {
		t.Fatalf("the burst: %d frames checked in runs; the batch path was not taken", burst.batched)
	}
	if one.disconnect == core.None || one.pop.Frames >= uint64(len(frames)+1) {
		t.Fatalf("one by one: disconnect %v after %d of %d frames: the traffic should end the connection before its last frame", one.disconnect, one.pop.Frames, len(frames)+1)
	}
	t.Logf("%d frames written, %d decided before the %v disconnect; the burst checked %d of them in runs", len(frames), one.pop.Frames-1, one.disconnect, burst.batched)
	if !slices.Equal(burst.replies, one.replies) {
		t.Errorf("replies:\nburst      %v\none by one %v", burst.replies, one.replies)
	}
	if burst.pongs != one.pongs || burst.disconnect != one.disconnect {
		t.Errorf("burst: %d pongs, disconnect %v; one by one: %d pongs, disconnect %v", burst.pongs, burst.disconnect, one.pongs, one.disconnect)
	}
	// Bytes differ (the burst read the frames after the Disconnect too),
	// and so do the per-frame service times; everything decided must not.
	for _, p := range []*PopulationStats{&burst.pop, &one.pop} {
		p.Bytes = 0
	}
	if fmt.Sprint(burst.pop) != fmt.Sprint(one.pop) {
		t.Errorf("population counts:\nburst      %+v\none by one %+v", burst.pop, one.pop)
	}
	if fmt.Sprint(burst.gate) != fmt.Sprint(one.gate) {
		t.Errorf("gate counters:\nburst      %+v\none by one %+v", burst.gate, one.gate)
	}
}
