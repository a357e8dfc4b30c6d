package core

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
