package atomicbucket

import (
	"sync/atomic"
	"testing"
)

func BenchmarkTakeAtPass(b *testing.B) {
	bk, _ := NewAt(1e9, 1e9, 0)
	now := int64(0)
	for i := 0; i < b.N; i++ {
		now++
		bk.TakeAt(now, 1)
	}
}

func BenchmarkTakeAtDeny(b *testing.B) {
	bk, _ := NewAt(1, 1, 0)
	bk.TakeAt(0, 1)
	for i := 0; i < b.N; i++ {
		bk.TakeAt(int64(i), 1)
	}
}

func BenchmarkTakePass(b *testing.B) {
	bk, _ := New(1e9, 1e9)
	for i := 0; i < b.N; i++ {
		bk.Take(1)
	}
}

func BenchmarkFloorCAS(b *testing.B) {
	var w atomic.Uint64
	for i := 0; i < b.N; i++ {
		old := w.Load()
		w.CompareAndSwap(old, old+3)
	}
}
