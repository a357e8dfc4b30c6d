package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/record"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// A login refused with Lockout marks the client both locked out and
// disconnected, whether the server answers the Hello first (a login it
// checked and refused) or only disconnects (a connection refused before
// the Hello was checked): the Disconnect follows either way.
func TestLoginLockoutMarksLockedAndDisconnected(t *testing.T) {
	ms := int64(time.Millisecond)
	for _, answered := range []bool{true, false} {
		conn := drive.ConnID{Client: 0, Gen: 1}
		var script []lateEvent
		if answered {
			script = append(script, lateEvent{ms, drive.Event{Conn: conn, Kind: drive.EvReply, At: ms, ID: 0, Status: wire.StatusRejected, Reason: uint8(core.Lockout)}})
		}
		script = append(script, lateEvent{ms, drive.Event{Conn: conn, Kind: drive.EvDisconnect, At: ms, Reason: uint8(core.Lockout)}})
		rec, err := record.NewRecorder([]string{"p"}, record.HistConfig{})
		require.NoError(t, err)
		clients := []behave.Client{{Label: "p", Account: 1, Addr: 1, End: int64(time.Second), Behaviour: &scripted{acts: []behave.Action{{At: 0, Op: behave.OpConnect}}}}}
		w, err := drive.NewWorker(&lateDriver{script: script}, rec, clients, drive.RunConfig{})
		require.NoError(t, err)
		require.NoError(t, w.Run(context.Background()))
		cs := &w.Clients[0]
		require.True(t, cs.Locked, "hello answered %v: locked", answered)
		require.True(t, cs.Disconnected, "hello answered %v: disconnected", answered)
		require.Equal(t, int64(1), rec.Count(0, behave.KindSession, record.Outcome(core.Lockout)), "hello answered %v: one session outcome", answered)
	}
}

// Frames a client still holds when the run ends (frozen here) are counted
// HeldAtEnd: in the kind's outcomes, so in what it meant to send, but not
// NotSent, which would make the end of the run the client's own drop.
func TestFramesHeldAtTheEndAreHeldAtEnd(t *testing.T) {
	rec := runFrozen(t, int64(time.Second), nil, drive.RunConfig{})
	require.Equal(t, int64(5), rec.Count(0, behave.KindMove, record.HeldAtEnd))
	require.Zero(t, rec.Count(0, behave.KindMove, record.NotSent))
	require.Zero(t, rec.Written(0, behave.KindMove))
	require.False(t, record.HeldAtEnd.IsClientDrop())
}

// runFrozen runs client 0, which logs in, freezes at 2ms and holds the 5
// moves it sends at 3ms until its window ends at end, beside others (whose
// Index starts at 1), and returns the recorder.
func runFrozen(t *testing.T, end int64, others []behave.Client, cfg drive.RunConfig) *record.Recorder {
	t.Helper()
	ms := int64(time.Millisecond)
	d := &lateDriver{script: []lateEvent{{ms, drive.Event{Conn: drive.ConnID{Client: 0, Gen: 1}, Kind: drive.EvReply, At: ms, ID: 0, Status: wire.StatusOK}}}}
	rec, err := record.NewRecorder([]string{"p"}, record.HistConfig{})
	require.NoError(t, err)
	b := &scripted{acts: []behave.Action{
		{At: 0, Op: behave.OpConnect},
		{At: 2 * ms, Op: behave.OpFreeze},
		{At: 3 * ms, Op: behave.OpSend, Kind: behave.KindMove, Count: 5},
	}}
	clients := append([]behave.Client{{Label: "p", Account: 1, Addr: 1, End: end, Behaviour: b}}, others...)
	w, err := drive.NewWorker(d, rec, clients, cfg)
	require.NoError(t, err)
	require.NoError(t, w.Run(context.Background()))
	return rec
}
