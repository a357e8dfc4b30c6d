//go:build !linux

package loadgen

import "time"

// wakeTimer is a timerfd on Linux. Elsewhere there is none, and Loopback
// waits on Go's timers (RealTime.Poll), which may fire up to a timer tick
// late when the process is idle.
type wakeTimer struct{ C chan struct{} }

func newWakeTimer() (*wakeTimer, error) { return nil, nil }

func (t *wakeTimer) Reset(time.Duration) error { return nil }

func (t *wakeTimer) Close() {}
