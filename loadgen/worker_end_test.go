package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// slowDriver is a lateDriver whose every write takes a millisecond of its
// clock: a worker that falls behind its schedule.
type slowDriver struct{ lateDriver }

func (d *slowDriver) Write(c ConnID, p []byte) error {
	d.now += int64(time.Millisecond)
	return d.lateDriver.Write(c, p)
}

// Actions due before the end of the run are carried out even when the
// worker, behind its schedule, gets to them after the end: late, never
// skipped, so none goes uncounted.
func TestDueActionsAreCarriedOutAfterTheEnd(t *testing.T) {
	ms := int64(time.Millisecond)
	acts := []Action{{At: 0, Op: OpDial}}
	const n = 600
	for i := range n {
		acts = append(acts, Action{At: int64(i) * 100 * ms / n, Op: OpSend, Kind: KindMove})
	}
	rec, err := NewRecorder([]string{"p"}, HistConfig{})
	require.NoError(t, err)
	clients := []Client{{Label: "p", Account: 1, Addr: 1, End: 100 * ms, Behaviour: &scripted{acts: acts}}}
	d := &slowDriver{}
	w, err := NewWorker(d, rec, clients, RunConfig{})
	require.NoError(t, err)
	require.NoError(t, w.Run(context.Background()))
	require.Equal(t, int64(n+1), rec.Stats.Actions, "every action carried out")
	require.Equal(t, int64(n), rec.Count(0, KindMove, Sent))
}
