package loadgen

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/record"
	"github.com/sluicedev/sluice/loadgen/sim"
	"github.com/sluicedev/sluice/trace"
)

// floodLoginTrace writes a trace of one flooding player (account 7, from
// 10.0.0.7) as quickstart's tiny flood looks when recorded: a session
// that logs in and sends a burst of moves in the same instant (the burst
// read before any answer to its Hello could have reached it), earns
// enough strikes to be cut off, and closes there; then, a second later,
// a second session of the same account from the same address that logs
// in, sends one move and closes.
func floodLoginTrace(t *testing.T, burst int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "flood.trace")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	w, err := trace.NewWriter(f, trace.Header{Recorder: "test"})
	require.NoError(t, err)
	addr := netip.AddrFrom4([4]byte{10, 0, 0, 7})
	session := func(id uint64, at time.Duration, port uint16, moves int) {
		t.Helper()
		ns := int64(at)
		recs := []trace.Record{
			{Op: trace.OpOpen, Time: ns, Session: id, Addr: netip.AddrPortFrom(addr, port)},
			{Op: trace.OpLabel, Time: ns, Session: id, Label: trace.Hostile, Group: "flood"},
			{Op: trace.OpRead, Time: ns, Session: id, Size: 15},
			{Op: trace.OpAuth, Time: ns, Session: id, Account: 7},
			{Op: trace.OpRead, Time: ns, Session: id, Size: uint32(6 * moves)},
		}
		for range moves {
			recs = append(recs, trace.Record{Op: trace.OpMessage, Time: ns, Session: id, Kind: "move", Size: 6, Flags: core.FlagCharged})
		}
		recs = append(recs, trace.Record{Op: trace.OpClose, Time: ns, Session: id})
		for i := range recs {
			require.NoError(t, w.Write(&recs[i]))
		}
	}
	session(1, 100*time.Millisecond, 1024, burst)
	session(2, 1100*time.Millisecond, 1025, 1)
	require.NoError(t, w.Close())
	return path
}

// A traced session's frames go out at their recorded times, answered or
// not: the recorded server read them then, so its client had sent them.
// A flood that logs in and bursts in one instant, and is cut off there,
// is decided over loopback as in sim: the burst reaches the server (its
// moves accepted up to the channel's burst, then dropped, then the strikes
// cut the session off), and the account's next login, a second later,
// is refused with Lockout because of those strikes. A client that held
// the burst for the Hello's answer closed with it unsent: the server saw
// no move, the strikes never came, and the second login was accepted.
func TestTraceLoopbackSendsBeforeLoginAnswer(t *testing.T) {
	path := floodLoginTrace(t, 46)
	plan := behave.Plan{Seed: 1, Duration: 1500 * time.Millisecond, Populations: []behave.Population{
		{Name: "flood", Clients: 1, Hostile: true, Behaviour: &sim.Trace{File: path, Group: "flood"}},
		// A player to the end, so that the loopback run, which ends when
		// its clients have nothing left to do, does not stop the server
		// before it has read the flood's last login.
		{Name: "honest", Clients: 1, Behaviour: &behave.Honest{}},
	}}
	pol := behave.DefaultPolicy() // move: 30 a second, a burst of 30
	simRes, err := RunSim(context.Background(), RunSpec{Plan: plan}, pol)
	require.NoError(t, err)
	loopRes, err := RunLoopback(context.Background(), RunSpec{Plan: plan, Workers: 1, Config: drive.RunConfig{Timeout: time.Second}}, pol)
	require.NoError(t, err)
	require.True(t, loopRes.Complete)

	sp, lp := pop(t, simRes, "flood"), pop(t, loopRes, "flood")
	simHello := simRes.Recorder.KindDecisions(sp, behave.KindHello)
	simMove := simRes.Recorder.KindDecisions(sp, behave.KindMove)
	// The sim's replay, as the strike ladder has it: 30 moves accepted, 12
	// over the channel (the drop rung), 4 more dropped at the drop stage,
	// the last of which reaches the disconnect rung; the next login finds
	// the account's score above the shed rung.
	require.Equal(t, int64(1), simHello[record.Accepted])
	require.Equal(t, int64(1), simHello[core.Lockout])
	require.Equal(t, int64(30), simMove[record.Accepted])
	require.Equal(t, int64(12), simMove[core.ChannelLimit])
	require.Equal(t, int64(4), simMove[core.Lockout])

	assert.Equal(t, nonZero(simHello), nonZero(loopRes.Recorder.KindDecisions(lp, behave.KindHello)), "hello decisions: sim, loopback")
	assert.Equal(t, nonZero(simMove), nonZero(loopRes.Recorder.KindDecisions(lp, behave.KindMove)), "move decisions: sim, loopback")
	assert.Zero(t, loopRes.Recorder.Count(lp, behave.KindMove, record.NotSent), "moves held for the Hello's answer and dropped at the close")
}

// nonZero returns the counts of xs that are not 0, by outcome name.
func nonZero(xs [record.NumOutcomes]int64) map[string]int64 {
	out := map[string]int64{}
	for o, n := range xs {
		if n != 0 {
			out[record.Outcome(o).String()] = n
		}
	}
	return out
}
