package core

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ReportAt's ActiveLockouts comes from Map.Range, which misses keys whose
// slots a concurrent compaction (here: a sweep's) has moved. No lockout
// starts or ends during the test, yet the report undercounts.
func TestReportCountsLockoutsDuringASweep(t *testing.T) {
	l := newLimiter(t, LimiterConfig{Rate: 1, Burst: 1, MaxKeys: 256, Shards: 1, MaxSoftViolations: 1, LockoutDuration: time.Hour})
	const locked = 20
	for k := uint64(1); k <= locked; k++ {
		l.TakeAt(k, 0, 1)
		if d := l.TakeAt(k, 1, 1); d.Reason != Lockout {
			t.Fatal(d)
		}
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for round := int64(0); !stop.Load(); round++ {
			now := 10 * lsec // fixed: the lockouts (1h) never end
			for k := uint64(1000); k < 1150; k++ {
				l.TakeAt(k, now, 1)
			}
			l.SweepAt(now + 5*lsec) // junk idle: swept, the shard compacts
		}
	}()
	bad, lowest := 0, locked
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if r := l.ReportAt(100 * lsec); r.ActiveLockouts != locked {
			bad++
			lowest = min(lowest, r.ActiveLockouts)
		}
	}
	stop.Store(true)
	wg.Wait()
	if bad > 0 {
		t.Errorf("%d reports miscounted ActiveLockouts (lowest %d, want %d); compactions %d", bad, lowest, locked, l.m.Counters().Compactions)
	}
}

// TableFull's RetryAfter is one fill time ("a tracked bucket becomes
// evictable once it is full again: at the latest one fill time"), but a key
// in a soft-violation window (8s by default) or a lockout is not evictable
// however full its bucket: retrying after RetryAfter is refused again.
func TestTableFullRetryAfterWaitsForEscalation(t *testing.T) {
	l := newLimiter(t, LimiterConfig{Rate: 1, Burst: 1, MaxKeys: 16, Shards: 1, EvictBackoff: -1})
	for k := uint64(0); k < 16; k++ {
		l.TakeAt(k, 0, 1)
		l.TakeAt(k, 1, 1) // one soft violation: window until 8s
	}
	d := l.TakeAt(100, 2, 1)
	if d.Reason != TableFull {
		t.Fatal(d)
	}
	at := 2 + int64(d.RetryAfter)
	if d2 := l.TakeAt(100, at, 1); !d2.Allowed {
		t.Errorf("TableFull said retry after %v; at that time: %+v (every bucket is full, but every key is in its soft window)", d.RetryAfter, d2)
	}
}

// A take that can never pass (n above the burst, or 0) is checked only after
// the table: on a full fail-open table it passes, on a full fail-closed one
// it is TableFull with a RetryAfter, and on a free table it inserts the key.
func TestOversizeBeforeTableFull(t *testing.T) {
	l := newLimiter(t, LimiterConfig{Rate: 1, Burst: 1, MaxKeys: 16, Shards: 1, FailOpen: true})
	for k := uint64(0); k < 16; k++ {
		l.TakeAt(k, 0, 1)
	}
	if d := l.TakeAt(100, 0, 5); d.Reason != Oversize || d.Allowed {
		t.Errorf("n=5 > burst 1 on a full fail-open table: %+v, want Oversize", d)
	}
	l2 := newLimiter(t, LimiterConfig{Rate: 1, Burst: 1, MaxKeys: 16, Shards: 1})
	if d := l2.TakeAt(100, 0, 5); d.Reason != Oversize || l2.Len() != 0 {
		t.Errorf("oversize take: %+v, and it inserted the key: Len %d", d, l2.Len())
	}
}

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

// A client that retries a TableFull when told to is let in then, not
// refused again while the full shard backs off its scans (the wait ends no
// sooner than the backoff), and not sent away for a whole fill time when
// the first key became evictable during the backoff.
func TestTableFullRetryAfterCountsTheBackoff(t *testing.T) {
	// Keys full again after 1µs; the shard backs off 1ms after a scan.
	l := newLimiter(t, LimiterConfig{Rate: 1e6, Burst: 1, MaxKeys: 16, Shards: 1, DisableEscalation: true})
	for k := uint64(0); k < 16; k++ {
		require.True(t, l.TakeAt(k, 0, 1).Allowed)
	}
	d := l.TakeAt(100, 0, 1)
	require.Equal(t, TableFull, d.Reason)
	assert.Equal(t, l.Config().EvictBackoff, d.RetryAfter, "evictable after 1µs, but no scan before the backoff ends")
	assert.True(t, l.TakeAt(100, int64(d.RetryAfter), 1).Allowed, "let in when told")

	// Keys full again after 1s; a scan 0.5ms before that backs off past it.
	l = newLimiter(t, LimiterConfig{Rate: 1, Burst: 100, MaxKeys: 16, Shards: 1, DisableEscalation: true})
	for k := uint64(0); k < 16; k++ {
		require.True(t, l.TakeAt(k, 0, 1).Allowed)
	}
	const us = int64(time.Microsecond)
	first := lsec - 500*us
	d = l.TakeAt(100, first, 1)
	require.Equal(t, TableFull, d.Reason)
	assert.Equal(t, l.Config().EvictBackoff, d.RetryAfter)
	d = l.TakeAt(100, lsec, 1) // evictable now, but still backing off
	require.Equal(t, TableFull, d.Reason)
	assert.Equal(t, time.Duration(first+int64(l.Config().EvictBackoff)-lsec), d.RetryAfter, "the rest of the backoff, not a fill time")
	assert.True(t, l.TakeAt(100, lsec+int64(d.RetryAfter), 1).Allowed)
}
