//go:build !linux

package drive

import (
	"errors"
	"time"
)

// wakeTimer is a timerfd on Linux. Elsewhere there is none, and
// RealTime.Poll sleeps on Go's timers alone, which may fire late when the
// process is idle.
type wakeTimer struct{ C chan struct{} }

func newWakeTimer() (*wakeTimer, error) { return nil, errors.ErrUnsupported }

// Reset and Close are never called (there is no timer); they let the
// driver compile on every system.
func (t *wakeTimer) Reset(time.Duration) error { return errors.ErrUnsupported }

func (t *wakeTimer) Close() {}
