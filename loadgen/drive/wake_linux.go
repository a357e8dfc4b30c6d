package drive

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// wakeTimer is a one-shot timer with the kernel's precision, for a worker
// that waits for its next intended send time. Go's own timers fire up to a
// millisecond late whenever every P is idle, because the runtime then
// sleeps in epoll_wait, whose timeout is whole milliseconds. A timerfd in
// the same netpoller ends that epoll_wait when it expires: in
// BenchmarkPollOvershoot a 200µs wait ends tens of microseconds late, not
// most of a millisecond.
//
// One goroutine reads the timerfd and signals C once per expiry (a signal
// already pending is not doubled); Reset re-arms it from the worker's
// goroutine. A signal can be stale, from an expiry that Reset overtook:
// the receiver checks its own clock. Close ends the goroutine. Reset and
// Close are for one goroutine, C for any.
type wakeTimer struct {
	fd   int
	file *os.File // owns fd; in the netpoller, so a blocked Read parks its goroutine
	C    chan struct{}
	done chan struct{}
}

func newWakeTimer() (*wakeTimer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("loadgen: timerfd_create: %w", err)
	}
	t := &wakeTimer{fd: fd, file: os.NewFile(uintptr(fd), "timerfd"), C: make(chan struct{}, 1), done: make(chan struct{})}
	go t.run()
	return t, nil
}

func (t *wakeTimer) run() {
	defer close(t.done)
	var expiries [8]byte // a timerfd read yields the count as a uint64
	for {
		if _, err := t.file.Read(expiries[:]); err != nil {
			return // closed
		}
		select {
		case t.C <- struct{}{}:
		default:
		}
	}
}

// Reset arms the timer to expire d (> 0) from now, replacing any earlier
// expiry time.
func (t *wakeTimer) Reset(d time.Duration) error {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if err := unix.TimerfdSettime(t.fd, 0, &spec, nil); err != nil {
		return fmt.Errorf("loadgen: timerfd_settime: %w", err)
	}
	return nil
}

// Close stops the timer and waits for its goroutine to end.
func (t *wakeTimer) Close() {
	t.file.Close()
	<-t.done
}
