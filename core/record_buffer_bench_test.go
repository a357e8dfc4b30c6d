package core

import (
	"sync/atomic"
	"testing"

	"github.com/sluicedev/sluice/internal/cputime"
)

// skim is a Drain that reads each record's line (its sequence and first
// word) and unpacks nothing: the consumer's side of the line's travel,
// without the consumer's own work.
func (b *RecordBuffer) skim() {
	for {
		slot := &b.slots[b.next&b.mask]
		if slot.seq.Load() != b.next+1 {
			break
		}
		sinkSkim += slot.w[0]
		b.next++
		if b.next%drainPublish == 0 {
			b.head.Store(b.next)
		}
	}
	b.head.Store(b.next)
}

var sinkSkim uint64

// BenchmarkRecordBuffer is the anatomy of a recorded Check's push
// (bench/README.md): push-hot skims (reads without unpacking) on the pushing goroutine
// every 1024 records into a 1024-slot ring (64 KB), so the
// slots stay in its core's cache; push-drained has a
// consumer skimming without pause on another goroutine (another core),
// as a trace.Recorder does, so every slot's line comes back from it.
func BenchmarkRecordBuffer(b *testing.B) {
	m := Message{Session: 3, Match: 7, Size: 32}
	v := Verdict{}
	b.Run("push-hot", func(b *testing.B) {
		buf, _ := NewRecordBuffer(1 << 10)
		b.ResetTimer()
		defer cputime.Serial().Stop(b)
		for i := 0; i < b.N; i++ {
			buf.pushCheck(m, v, int64(i))
			if i&1023 == 1023 {
				buf.skim()
			}
		}
	})
	b.Run("push-drained", func(b *testing.B) {
		buf, _ := NewRecordBuffer(1 << 16)
		var stop atomic.Bool
		done := make(chan struct{})
		go func() {
			defer close(done)
			for !stop.Load() {
				buf.skim()
			}
		}()
		b.ResetTimer()
		cpu := cputime.Serial()
		for i := 0; i < b.N; i++ {
			buf.pushCheck(m, v, int64(i))
		}
		cpu.Stop(b)
		b.StopTimer()
		stop.Store(true)
		<-done
		b.ReportMetric(float64(buf.Lost())/float64(b.N), "lost/op")
	})
}
