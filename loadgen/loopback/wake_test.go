package loopback

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/stretchr/testify/require"
)

// newPollLoopback is a Loopback that dials nothing: its Poll is tested
// with events handed to it as a connection's reader would.
func newPollLoopback(t testing.TB) *Loopback {
	l, err := NewLoopback(context.Background(), netip.MustParseAddrPort("127.0.0.1:9"), drive.NewRealTime(), time.Second)
	require.NoError(t, err)
	t.Cleanup(l.Stop)
	return l
}

// bounded is a context that ends a Poll whose wake-up was lost long
// before the test binary's own timeout would.
func bounded(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestLoopbackPollNeverReturnsBeforeUntil(t *testing.T) {
	l := newPollLoopback(t)
	ctx := bounded(t)
	var ev drive.Event
	for _, d := range []time.Duration{0, time.Microsecond, 10 * time.Microsecond, 50 * time.Microsecond, 300 * time.Microsecond, 2 * time.Millisecond} {
		for range 20 {
			until := l.Now() + int64(d)
			got, err := l.Poll(ctx, until, &ev)
			require.NoError(t, err)
			require.False(t, got, "no event was sent")
			require.GreaterOrEqual(t, l.Now(), until, "returned before until (wait %v)", d)
		}
	}
}

func TestLoopbackPollIgnoresAnOvertakenExpiry(t *testing.T) {
	l := newPollLoopback(t)
	ctx := bounded(t)
	var ev drive.Event
	got, err := l.Poll(ctx, l.Now()+int64(time.Millisecond), &ev) // makes the wake timer
	require.NoError(t, err)
	require.False(t, got)
	if l.Rt.Wake == nil {
		t.Skip("no wake timer on this system")
	}
	// A short sleep armed and then left by an event: its expiry signals
	// (the signal waits in C), and the long wait below must not end on it.
	require.NoError(t, l.Rt.Wake.Reset(time.Millisecond))
	require.Eventually(t, func() bool { return len(l.Rt.Wake.C) == 1 }, 5*time.Second, time.Millisecond)
	go func() {
		time.Sleep(20 * time.Millisecond)
		l.send(drive.Event{Conn: drive.ConnID{Client: 2, Gen: 1}, Kind: drive.EvReply})
	}()
	until := l.Now() + int64(3*time.Second)
	got, err = l.Poll(ctx, until, &ev)
	require.NoError(t, err)
	// The event ends the wait, 20ms in; the stale signal must not.
	require.True(t, got, "the stale expiry ended the wait %v early", time.Duration(until-l.Now()))
	require.Equal(t, drive.ConnID{Client: 2, Gen: 1}, ev.Conn)
}

func TestLoopbackPollWakesForAnEventAndForCancel(t *testing.T) {
	l := newPollLoopback(t)
	var ev drive.Event
	go func() {
		time.Sleep(10 * time.Millisecond)
		l.send(drive.Event{Conn: drive.ConnID{Client: 3, Gen: 1}, Kind: drive.EvReply, At: 42})
	}()
	got, err := l.Poll(bounded(t), l.Now()+int64(3*time.Second), &ev)
	require.NoError(t, err)
	require.True(t, got)
	require.Equal(t, drive.Event{Conn: drive.ConnID{Client: 3, Gen: 1}, Kind: drive.EvReply, At: 42}, ev)

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(10 * time.Millisecond)
		cancel()
	}()
	got, err = l.Poll(ctx, l.Now()+int64(3*time.Second), &ev)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, got)
}

func TestLoopbackPollAfterStopSleepsOnGoTimers(t *testing.T) {
	l := newPollLoopback(t)
	ctx := bounded(t)
	var ev drive.Event
	_, err := l.Poll(ctx, l.Now()+int64(time.Millisecond), &ev) // makes the wake timer, where there is one
	require.NoError(t, err)
	l.Stop()
	require.Nil(t, l.Rt.Wake, "Stop closes the wake timer")
	// Its descriptor is closed (and may be another file's by now): a Poll
	// after Stop must not arm it, and still waits until until.
	until := l.Now() + int64(2*time.Millisecond)
	got, err := l.Poll(ctx, until, &ev)
	require.NoError(t, err)
	require.False(t, got)
	require.GreaterOrEqual(t, l.Now(), until)
	require.Nil(t, l.Rt.Wake, "no wake timer is made after Stop")
}

// BenchmarkPollOvershoot sleeps for 200µs at a time, the gap between two
// sends of a worker at a few thousand sends per second, with the process
// otherwise idle, and reports how late the wait ended (overshoot-p50-ns,
// overshoot-p99-ns) with RealTime's wake timer (wake) and with Go's
// timers alone (gotimer, the wake timer closed). Read the two in one run.
func BenchmarkPollOvershoot(b *testing.B) {
	const gap = 200 * time.Microsecond
	for _, name := range []string{"wake", "gotimer"} {
		b.Run(name, func(b *testing.B) {
			l := newPollLoopback(b)
			if name == "gotimer" {
				l.Rt.Close()
			}
			late := make([]int64, 0, b.N)
			var ev drive.Event
			for b.Loop() {
				until := l.Now() + int64(gap)
				if _, err := l.Poll(context.Background(), until, &ev); err != nil {
					b.Fatal(err)
				}
				late = append(late, l.Now()-until)
			}
			slices.Sort(late)
			b.ReportMetric(float64(late[len(late)/2]), "overshoot-p50-ns")
			b.ReportMetric(float64(late[len(late)*99/100]), "overshoot-p99-ns")
		})
	}
}

// Where there is a wake timer, it ends waits: Go's timer alone wakes up to
// a millisecond late on an idle process, so the timerfd, armed for the
// same time, fires first in nearly every short wait (one of 50 is asked).
func TestLoopbackPollWakesOnTheWakeTimer(t *testing.T) {
	l := newPollLoopback(t)
	ctx := bounded(t)
	var ev drive.Event
	for range 50 {
		_, err := l.Poll(ctx, l.Now()+int64(200*time.Microsecond), &ev)
		require.NoError(t, err)
	}
	if l.Rt.Wake == nil {
		t.Skip("no wake timer on this system: Go's timers alone")
	}
	require.Positive(t, l.Rt.Woken, "no wait of 50 was ended by the wake timer")
	t.Logf("%d of 50 waits ended by the wake timer", l.Rt.Woken)
}
