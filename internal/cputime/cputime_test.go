package cputime

import (
	"runtime"
	"testing"
)

// The clocks advance with work done, and a Serial meter reports a
// positive cpu-ns/op for a loop that burns CPU (on Linux; elsewhere the
// readings are -1 and nothing is reported).
func TestClocksAdvance(t *testing.T) {
	if runtime.GOOS != "linux" {
		if Thread() != -1 || Process() != -1 {
			t.Fatal("readings where none are implemented")
		}
		t.Skip("no CPU clocks read on " + runtime.GOOS)
	}
	runtime.LockOSThread() // both thread readings of one thread
	defer runtime.UnlockOSThread()
	t0, p0 := Thread(), Process()
	x := 1.0
	for i := 0; i < 2_000_000; i++ {
		x = x*1.0000001 + 1e-9
	}
	sinkF = x
	t1, p1 := Thread(), Process()
	if t0 < 0 || t1 <= t0 {
		t.Fatalf("thread clock %d then %d", t0, t1)
	}
	if p0 < 0 || p1 <= p0 {
		t.Fatalf("process clock %d then %d", p0, p1)
	}
	r := testing.Benchmark(func(b *testing.B) {
		m := Serial()
		for i := 0; i < b.N; i++ {
			sinkF = sinkF*1.0000001 + 1e-9
		}
		m.Stop(b)
	})
	if v, ok := r.Extra["cpu-ns/op"]; !ok || v <= 0 {
		t.Fatalf("cpu-ns/op = %v, %v", v, ok)
	}
}

var sinkF float64
