package core

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ReportAt counts every held lockout while a sweep's compaction moves the
// slots underneath it: Map.Range follows the keys moved. No lockout starts
// or ends during the test, so every report must count all of them.
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
		for !stop.Load() {
			now := 10 * lsec // fixed: the lockouts (1h) never end
			for k := uint64(1000); k < 1150; k++ {
				l.TakeAt(k, now, 1)
			}
			l.SweepAt(now + 5*lsec) // junk idle: swept, the shard compacts
		}
	}()
	defer func() {
		stop.Store(true)
		wg.Wait()
	}()
	// Reports until 2000 compactions have run beside them (the time bound
	// only guards against a sweeper that stopped compacting).
	const compactions = 2000
	start := l.m.Counters().Compactions
	deadline := time.Now().Add(20 * time.Second)
	for l.m.Counters().Compactions-start < compactions {
		if r := l.ReportAt(100 * lsec); r.ActiveLockouts != locked {
			t.Fatalf("ActiveLockouts %d during a compaction, want %d", r.ActiveLockouts, locked)
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d compactions in 20s", l.m.Counters().Compactions-start)
		}
	}
}

// fill takes one token for each of the keys 0..n-1 at now.
func fill(t *testing.T, l *Limiter, n int, now int64) {
	t.Helper()
	for k := range uint64(n) {
		require.True(t, l.TakeAt(k, now, 1).Allowed, "key %d", k)
	}
}

// TableFull's RetryAfter waits for the escalation state too: a key in a
// soft-violation window (8s by default) or a lockout is not evictable
// however full its bucket, so a retry after one fill time would be refused
// again.
func TestTableFullRetryAfterWaitsForEscalation(t *testing.T) {
	l := newLimiter(t, LimiterConfig{Rate: 1, Burst: 1, MaxKeys: 16, Shards: 1, EvictBackoff: -1})
	fill(t, l, 16, 0)
	for k := uint64(0); k < 16; k++ {
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

// A take that can never pass (n above the burst, or 0) is Oversize before
// the table is consulted: a full fail-open table does not let it pass, a
// full fail-closed one does not call it TableFull (promising room later),
// and a free table does not insert the key for it.
func TestOversizeBeforeTableFull(t *testing.T) {
	for _, failOpen := range []bool{true, false} {
		l := newLimiter(t, LimiterConfig{Rate: 1, Burst: 1, MaxKeys: 16, Shards: 1, FailOpen: failOpen})
		fill(t, l, 16, 0)
		if d := l.TakeAt(100, 0, 5); d.Reason != Oversize || d.Allowed {
			t.Errorf("n=5 > burst 1 on a full table (fail open %v): %+v, want Oversize", failOpen, d)
		}
	}
	l := newLimiter(t, LimiterConfig{Rate: 1, Burst: 1, MaxKeys: 16, Shards: 1})
	if d := l.TakeAt(100, 0, 5); d.Reason != Oversize || l.Len() != 0 {
		t.Errorf("oversize take: %+v, and it inserted the key: Len %d", d, l.Len())
	}
}

// A map at MaxKeys whose keys all sit in other shards: an insert into an
// empty shard scans it and finds no live slot, so the shard cannot tell
// when it will have room; the TableFull says the documented fallback, one
// fill time, not the ~292 years of a wait that never comes.
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
	fill(t, l, 16, 0)
	d := l.TakeAt(100, 0, 1)
	require.Equal(t, TableFull, d.Reason)
	assert.Equal(t, l.Config().EvictBackoff, d.RetryAfter, "evictable after 1µs, but no scan before the backoff ends")
	assert.True(t, l.TakeAt(100, int64(d.RetryAfter), 1).Allowed, "let in when told")

	// Keys full again after 1s; a scan 0.5ms before that backs off past it.
	l = newLimiter(t, LimiterConfig{Rate: 1, Burst: 100, MaxKeys: 16, Shards: 1, DisableEscalation: true})
	fill(t, l, 16, 0)
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

// Every gate seed gives its own layer seeds: the seed's lowest bit used to
// be forced to 1, so seeds 2k and 2k+1 laid the tables out alike.
func TestLayerSeedsAreDistinctAndNeverZero(t *testing.T) {
	for _, r := range []Reason{AccountLimit, AddressLimit, MatchLimit} {
		seen := map[uint64]uint64{}
		for seed := uint64(1); seed <= 64; seed++ {
			ls := layerSeed(seed, r)
			require.NotZero(t, ls)
			if prev, dup := seen[ls]; dup {
				t.Fatalf("%v: seeds %d and %d share layer seed %#x", r, prev, seed, ls)
			}
			seen[ls] = seed
		}
		// The seed that would cancel the reason's own mix.
		assert.NotZero(t, layerSeed(uint64(r)*0x9e3779b97f4a7c15, r))
	}
}
