package metrics

import (
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The ring keeps order, refuses at once when full, and frees cells as the
// consumer reads them, lap after lap.
func TestRingOrderAndBound(t *testing.T) {
	r := newRing(3) // rounded up to 4
	for i := range 4 {
		require.True(t, r.push(&SecurityEvent{Count: uint64(i)}))
	}
	assert.False(t, r.push(&SecurityEvent{Count: 99}), "full")
	var e SecurityEvent
	for lap := range 3 {
		for i := range 4 {
			require.True(t, r.pop(&e))
			assert.Equal(t, uint64(lap*4+i), e.Count)
			require.True(t, r.push(&SecurityEvent{Count: uint64(lap*4 + i + 4)}))
		}
	}
	for range 4 {
		require.True(t, r.pop(&e))
	}
	assert.False(t, r.pop(&e), "empty")
}

// Concurrent producers and one consumer: every report pushed is popped
// exactly once, and each producer's reports in its order (run with -race).
func TestRingConcurrent(t *testing.T) {
	const producers, each = 4, 20000
	r := newRing(64)
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range each {
				for !r.push(&SecurityEvent{Account: uint64(p), Count: uint64(i)}) {
					runtime.Gosched() // full: let the consumer run
				}
			}
		})
	}
	next := make([]uint64, producers)
	var e SecurityEvent
	for got := 0; got < producers*each; {
		if !r.pop(&e) {
			runtime.Gosched()
			continue
		}
		require.Equal(t, next[e.Account], e.Count, "producer %d out of order", e.Account)
		next[e.Account]++
		got++
	}
	wg.Wait()
	assert.False(t, r.pop(&e))
}
