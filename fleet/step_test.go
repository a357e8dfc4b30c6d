package fleet

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// stepFleet is one server of a fleet in virtual time: its layer, on store,
// stepped by hand.
func stepFleet(t *testing.T, store Store, name string) (*Fleet, *Layer) {
	f, l := newLayer(t, Config{Store: store, Server: name, Lease: 4, Refresh: 50 * time.Millisecond, Idle: time.Second, Servers: 2},
		testSpec(10, 10, 100))
	return f, l
}

// Two servers in virtual time (Step) on one MemStore: server a takes all
// the time and drains the fleet bucket; server b's lease runs dry and is
// denied for longer than Idle, so its refresher takes the spent lease
// back. The credit b's next take is served on must be charged to the
// fleet bucket: over the run, the fleet admits at most burst + rate·T
// plus a lease and a credit per server per idle period.
func TestStepChargesTheCreditAfterASpentLeaseIsReturned(t *testing.T) {
	var now int64
	store := NewMemStore(func() int64 { return now })
	fa, la := stepFleet(t, store, "a")
	fb, lb := stepFleet(t, store, "b")
	const (
		step  = int64(10 * time.Millisecond)
		round = int64(50 * time.Millisecond)
		run   = int64(10 * time.Second)
	)
	admitted := 0
	for now = 0; now < run; now += step {
		for range 4 { // a: 400 takes a second
			if la.TakeAt(1, now, 1).Allowed {
				admitted++
			}
		}
		if lb.TakeAt(1, now, 1).Allowed { // b: 100 a second
			admitted++
		}
		if now%round == 0 {
			require.NoError(t, fa.Step(time.Unix(0, now)))
			require.NoError(t, fb.Step(time.Unix(0, now)))
		}
	}
	idles := int(run / int64(time.Second))
	bound := 10 + 10*10 + (idles+2)*2*4
	t.Logf("admitted %d over 10s, bound %d", admitted, bound)
	require.LessOrEqual(t, admitted, bound)
	require.ErrorIs(t, startThenStep(t, fa), ErrStarted)
}

func startThenStep(t *testing.T, f *Fleet) error {
	require.NoError(t, f.Start())
	defer f.Stop()
	return f.Step(time.Now())
}
