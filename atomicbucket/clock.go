package atomicbucket

import (
	"sync"
	"sync/atomic"
	"time"
)

// epoch anchors Nanotime. time.Since reads the monotonic clock, so Nanotime
// never goes backwards even when the wall clock is stepped.
var epoch = time.Now()

// Nanotime returns nanoseconds on the process's monotonic clock, counted
// from package initialisation. It is the clock Take, Allow and Tokens use.
func Nanotime() int64 { return int64(time.Since(epoch)) }

// CoarseClock is a shared reading of Nanotime refreshed by one goroutine
// every interval: reading it is one atomic load, at the price of being up to
// one interval stale (a stale reading only delays refill; it never credits
// early). When every core is busy the refreshing goroutine can run late and
// readings go stale by several intervals: buckets then refill late, which
// under saturation is the safe direction, but a server that needs refill on
// time under full load should read Nanotime once per batch instead. Start it
// with StartCoarseClock and stop it with Stop; it is safe for concurrent use.
type CoarseClock struct {
	now  atomic.Int64
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// StartCoarseClock starts a clock that refreshes every interval (1ms if
// interval ≤ 0). The caller must call Stop to end its goroutine.
func StartCoarseClock(interval time.Duration) *CoarseClock {
	if interval <= 0 {
		interval = time.Millisecond
	}
	c := &CoarseClock{stop: make(chan struct{}), done: make(chan struct{})}
	c.now.Store(Nanotime())
	go c.run(interval)
	return c
}

func (c *CoarseClock) run(interval time.Duration) {
	defer close(c.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.now.Store(Nanotime())
		}
	}
}

// Now returns the latest tick, in Nanotime's nanoseconds.
func (c *CoarseClock) Now() int64 { return c.now.Load() }

// Stop ends the refreshing goroutine and waits for it. Now keeps returning
// the last tick. Stop may be called more than once.
func (c *CoarseClock) Stop() {
	c.once.Do(func() { close(c.stop) })
	<-c.done
}
