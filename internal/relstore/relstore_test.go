package relstore

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// A writer fills a ring of slots with plain stores and publishes each with
// Store of its sequence number; a reader on another goroutine that Loads a
// sequence number must then find the slot's words written, every time.
// (Without the race detector on amd64 this runs the assembly; with it,
// the detector checks the same protocol through sync/atomic.) What it can
// catch is a publication out of order, by the compiler or the code (a
// Store moved before the slot's writes fails at once); it cannot tell the
// assembly from a plain Go store, since x86 never reorders a store with an
// earlier one. The spins yield, so that it also runs on one thread, and a
// reader that never sees a position fails rather than hangs.
func TestStorePublishesEarlierWrites(t *testing.T) {
	const slots, rounds = 64, 200_000
	type slot struct {
		seq atomic.Uint64
		w   [7]uint64
	}
	var ring [slots]slot
	var head atomic.Uint64 // the reader's progress, so the writer never laps it
	var failed atomic.Bool // the reader stopped on a bad slot
	deadline := time.Now().Add(30 * time.Second)
	done := make(chan error, 1)
	go func() {
		for pos := uint64(0); pos < rounds; pos++ {
			s := &ring[pos%slots]
			for s.seq.Load() != pos+1 {
				if time.Now().After(deadline) {
					failed.Store(true)
					done <- fmt.Errorf("position %d never published", pos)
					return
				}
				runtime.Gosched()
			}
			for i, w := range s.w {
				if w != pos*8+uint64(i) {
					failed.Store(true)
					done <- fmt.Errorf("slot of position %d published before its word %d: read %d", pos, i, w)
					return
				}
			}
			head.Store(pos + 1)
		}
		done <- nil
	}()
	for pos := uint64(0); pos < rounds; pos++ {
		for pos-head.Load() >= slots && !failed.Load() {
			runtime.Gosched()
		}
		if failed.Load() {
			break
		}
		s := &ring[pos%slots]
		for i := range s.w {
			s.w[i] = pos*8 + uint64(i)
		}
		Store(&s.seq, pos+1)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestStoreStores(t *testing.T) {
	var v atomic.Uint64
	Store(&v, 42)
	if got := v.Load(); got != 42 {
		t.Fatalf("Load after Store(42) = %d", got)
	}
}

var sink atomic.Uint64

// BenchmarkStore sets Store beside sync/atomic's Store on a word in the
// storing core's cache.
func BenchmarkStore(b *testing.B) {
	b.Run("release", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			Store(&sink, uint64(i))
		}
	})
	b.Run("atomic", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			sink.Store(uint64(i))
		}
	})
}
