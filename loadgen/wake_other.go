//go:build !linux

package loadgen

import "time"

// wakeTimer is a timerfd on Linux. Elsewhere there is none, and
// RealTime.Poll sleeps on Go's timers alone, which may fire late when the
// process is idle.
type wakeTimer struct{ C chan struct{} }

func newWakeTimer() (*wakeTimer, error) { return nil, nil }

func (t *wakeTimer) Reset(time.Duration) error { return nil }

func (t *wakeTimer) Close() {}
