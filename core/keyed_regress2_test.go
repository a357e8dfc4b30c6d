package core

import (
	"testing"
	"time"
)

// A map at MaxKeys whose keys all sit in other shards: an insert into an
// empty shard scans it, finds no live slot (evictableAt = MaxInt64) and is
// refused TableFull with a RetryAfter of ~292 years instead of the
// documented fallback (one fill time).
func TestTableFullRetryAfterOfAShardWithNoKey(t *testing.T) {
	l := newLimiter(t, LimiterConfig{Rate: 1, Burst: 1, MaxKeys: 4, Shards: 2, EvictBackoff: -1})
	filled := 0
	var other uint64
	for k := uint64(1); filled < 4 || other == 0; k++ {
		switch l.m.ShardOf(k) {
		case 0:
			if filled < 4 {
				if d := l.TakeAt(k, 0, 1); !d.Allowed {
					t.Fatal(d)
				}
				filled++
			}
		default:
			if other == 0 {
				other = k
			}
		}
	}
	d := l.TakeAt(other, 0, 1)
	if d.Reason != TableFull {
		t.Fatal(d)
	}
	if d.RetryAfter > time.Hour {
		t.Errorf("TableFull RetryAfter %v (fill time is 1s)", d.RetryAfter)
	}
}

// A stopped janitor leaves the limiter's list: starting and stopping them
// without ever closing the limiter does not grow it.
func TestStoppedJanitorLeavesTheList(t *testing.T) {
	l := newLimiter(t, LimiterConfig{Rate: 1})
	for range 100 {
		l.StartJanitor(time.Hour).Stop()
	}
	l.mu.Lock()
	n := len(l.janitors)
	l.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d stopped janitors still listed", n)
	}
}

// Janitors stopped while the limiter closes: no race, no deadlock (run
// with -race), and none is left listed. (Close empties the list itself,
// so this does not test Stop's removal: the test above does.)
func TestJanitorStopRacingClose(t *testing.T) {
	for i := 0; i < 200; i++ {
		l := newLimiter(t, LimiterConfig{Rate: 1})
		js := make([]*Janitor, 4)
		for k := range js {
			js[k] = l.StartJanitor(time.Millisecond)
		}
		done := make(chan struct{})
		for _, j := range js {
			go func() { j.Stop(); done <- struct{}{} }()
		}
		go func() { l.Close(); done <- struct{}{} }()
		for range len(js) + 1 {
			<-done
		}
		l.mu.Lock()
		n := len(l.janitors)
		l.mu.Unlock()
		if n != 0 {
			t.Fatal(n)
		}
	}
}
