package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/record"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// slowDriver is a lateDriver whose every write takes a millisecond of its
// clock: a worker that falls behind its schedule.
type slowDriver struct{ lateDriver }

func (d *slowDriver) Write(c drive.ConnID, p []byte) error {
	d.now += int64(time.Millisecond)
	return d.lateDriver.Write(c, p)
}

// A worker behind its schedule stops at the end of the run: the actions it
// has not got to are counted, as HeldAtEnd with their send lag, never
// carried out late and never left uncounted, so the run ends on time
// however far behind it is.
func TestDueActionsLeftAtTheEndAreCounted(t *testing.T) {
	ms := int64(time.Millisecond)
	acts := []behave.Action{{At: 0, Op: behave.OpDial}}
	const n = 600
	for i := range n {
		acts = append(acts, behave.Action{At: int64(i) * 100 * ms / n, Op: behave.OpSend, Kind: behave.KindMove})
	}
	rec, err := record.NewRecorder([]string{"p"}, record.HistConfig{})
	require.NoError(t, err)
	clients := []behave.Client{{Label: "p", Account: 1, Addr: 1, End: 100 * ms, Behaviour: &scripted{acts: acts}}}
	d := &slowDriver{}
	w, err := drive.NewWorker(d, rec, clients, drive.RunConfig{})
	require.NoError(t, err)
	require.NoError(t, w.Run(context.Background()))
	sent, held := rec.Count(0, behave.KindMove, record.Sent), rec.Count(0, behave.KindMove, record.HeldAtEnd)
	require.Equal(t, int64(n), sent+held, "every move counted once: %d sent, %d held at the end", sent, held)
	require.Positive(t, held, "the worker fell behind")
	require.Equal(t, held, rec.Stats.Overdue)
	require.Equal(t, int64(n+1)-held, rec.Stats.Actions, "the rest carried out")
	require.LessOrEqual(t, d.now, 101*ms, "the run ends on time, not %v late", time.Duration(d.now-100*ms))
	require.Equal(t, int64(n), rec.Histogram(0, behave.KindMove, record.SendLag).TotalCount(), "a send lag for every move")
}

// What an overdue action would have sent is counted as carrying it out
// would count it, with its lag to the end: a chat due at 50ms on a
// connected client is HeldAtEnd with a lag of 50ms, a move due on a client
// that never connected is NotSent.
func TestOverdueSendsAreCountedAsSendCountsThem(t *testing.T) {
	ms := int64(time.Millisecond)
	busy := []behave.Action{{At: 0, Op: behave.OpDial}}
	for i := range 200 { // 200 writes of 1 ms in the first 50 ms: far behind
		busy = append(busy, behave.Action{At: int64(i) * ms / 4, Op: behave.OpSend, Kind: behave.KindMove})
	}
	rec, err := record.NewRecorder([]string{"busy", "up", "down"}, record.HistConfig{})
	require.NoError(t, err)
	clients := []behave.Client{
		{Label: "busy", Account: 1, Addr: 1, End: 100 * ms, Behaviour: &scripted{acts: busy}},
		{Index: 1, Population: 1, Label: "up", Account: 2, Addr: 2, End: 100 * ms, Behaviour: &scripted{acts: []behave.Action{
			{At: 0, Op: behave.OpDial}, {At: 50 * ms, Op: behave.OpSend, Kind: behave.KindChat}}}},
		{Index: 2, Population: 2, Label: "down", Account: 3, Addr: 3, End: 100 * ms, Behaviour: &scripted{acts: []behave.Action{
			{At: 60 * ms, Op: behave.OpSend, Kind: behave.KindMove}}}},
	}
	w, err := drive.NewWorker(&slowDriver{}, rec, clients, drive.RunConfig{})
	require.NoError(t, err)
	require.NoError(t, w.Run(context.Background()))
	require.Equal(t, int64(1), rec.Count(1, behave.KindChat, record.HeldAtEnd))
	lag := rec.Histogram(1, behave.KindChat, record.SendLag)
	require.Equal(t, int64(1), lag.TotalCount())
	require.InDelta(t, float64(50*ms), float64(lag.Max()), float64(ms), "its lag runs to the end of the run")
	require.Equal(t, int64(1), rec.Count(2, behave.KindMove, record.NotSent))
	require.Zero(t, rec.Count(2, behave.KindMove, record.HeldAtEnd))
}

// cancelDriver is a lateDriver whose run is cancelled once its clock
// reaches cancelAt: Poll then returns context.Canceled.
type cancelDriver struct {
	lateDriver
	cancelAt int64
}

func (d *cancelDriver) Poll(ctx context.Context, until int64, ev *drive.Event) (bool, error) {
	if d.now >= d.cancelAt {
		return false, context.Canceled
	}
	return d.lateDriver.Poll(ctx, until, ev)
}

// A request written and still awaiting its reply when the run is
// cancelled was in flight at the end: HeldAtEnd, not a Disconnected drop
// (the server ended nothing; the client stopped waiting).
func TestCancelledRunCountsAwaitedRepliesHeldAtEnd(t *testing.T) {
	ms := int64(time.Millisecond)
	d := &cancelDriver{cancelAt: 5 * ms, lateDriver: lateDriver{script: []lateEvent{
		{ms, drive.Event{Conn: drive.ConnID{Client: 0, Gen: 1}, Kind: drive.EvReply, At: ms, ID: 0, Status: wire.StatusOK}},
	}}}
	rec, err := record.NewRecorder([]string{"p"}, record.HistConfig{})
	require.NoError(t, err)
	b := &scripted{acts: []behave.Action{
		{At: 0, Op: behave.OpConnect},
		{At: 2 * ms, Op: behave.OpSend, Kind: behave.KindPurchase},
	}}
	clients := []behave.Client{{Label: "p", Account: 1, Addr: 1, End: int64(time.Second), Behaviour: b}}
	w, err := drive.NewWorker(d, rec, clients, drive.RunConfig{})
	require.NoError(t, err)
	require.ErrorIs(t, w.Run(context.Background()), context.Canceled)
	require.Equal(t, int64(1), rec.Written(0, behave.KindPurchase))
	require.Zero(t, rec.Count(0, behave.KindPurchase, record.Disconnected), "no drop: the run stopped")
	require.Equal(t, int64(1), rec.Count(0, behave.KindPurchase, record.HeldAtEnd))
}

// A client whose window ends while it holds frames (frozen) leaves with
// them HeldAtEnd, as it would at the end of the run: whether another
// population runs on after its window must not turn them into NotSent
// drops.
func TestLeavingClientsHeldFramesAreHeldAtEnd(t *testing.T) {
	ms := int64(time.Millisecond)
	// Timeout 10ms: client 0 leaves at 110ms, before the run's end at 1s.
	rec := runFrozen(t, 100*ms, []behave.Client{{Index: 1, Label: "p", Account: 2, Addr: 2, End: int64(time.Second), Behaviour: &scripted{}}}, drive.RunConfig{Timeout: 10 * time.Millisecond})
	require.Zero(t, rec.Count(0, behave.KindMove, record.NotSent))
	require.Equal(t, int64(5), rec.Count(0, behave.KindMove, record.HeldAtEnd))
}

// A connect the worker had not got to by the end brings its client up as
// far as the count goes: the retries after it, which the client would
// have skipped, are not counted as hellos held at the end too.
func TestOverdueRetriesAfterAnOverdueConnectAreSkipped(t *testing.T) {
	ms := int64(time.Millisecond)
	busy := []behave.Action{{At: 0, Op: behave.OpDial}}
	for i := range 200 { // 200 writes of 1 ms in the first 50 ms: far behind
		busy = append(busy, behave.Action{At: int64(i) * ms / 4, Op: behave.OpSend, Kind: behave.KindMove})
	}
	reconnecting := []behave.Action{
		{At: 0, Op: behave.OpDial},
		{At: 1, Op: behave.OpDisconnect},
		{At: 60 * ms, Op: behave.OpConnect},
		{At: 70 * ms, Op: behave.OpRetry},
		{At: 80 * ms, Op: behave.OpRetry},
	}
	rec, err := record.NewRecorder([]string{"busy", "reconnecting"}, record.HistConfig{})
	require.NoError(t, err)
	clients := []behave.Client{
		{Label: "busy", Account: 1, Addr: 1, End: 100 * ms, Behaviour: &scripted{acts: busy}},
		{Index: 1, Population: 1, Label: "reconnecting", Account: 2, Addr: 2, End: 100 * ms, Behaviour: &scripted{acts: reconnecting}},
	}
	w, err := drive.NewWorker(&slowDriver{}, rec, clients, drive.RunConfig{})
	require.NoError(t, err)
	require.NoError(t, w.Run(context.Background()))
	require.Positive(t, rec.Stats.Overdue)
	require.Equal(t, int64(1), rec.Count(1, behave.KindHello, record.HeldAtEnd), "the connect's hello, once")
	require.Equal(t, int64(2), rec.Stats.Skipped, "both retries, as the client would have skipped them")
}
