package peers

import (
	"runtime"
	"testing"
)

// BenchmarkMemory/<impl>/1m reports bytes/key: the heap a limiter holding 1M
// keys occupies, per key. Method: build the key set first (the caller's keys
// and their decimal strings are not counted; copies a store makes are), then
// runtime.GC and read runtime.MemStats.HeapAlloc as the baseline, build the
// limiter with every key inserted, runtime.GC and read HeapAlloc again:
// bytes/key = (after − baseline) / keys. HeapAlloc (live heap objects) is
// used rather than HeapInuse (whole spans, so it moves in 8 KiB steps and
// counts free slots).
//
// The measurement runs once per -count, outside the timed loop; the timed
// loop is empty and its ns/op is suppressed (it means nothing here).
// map-floor is a bare map[uint64]uint64 holding the same keys.
func BenchmarkMemory(b *testing.B) {
	const n = 1_000_000
	impls := append([]keyedImpl{{name: "map-floor", build: buildMapFloor}}, keyedImpls...)
	for _, im := range impls {
		if im.batch > 0 {
			continue // the same table as sluice-at's
		}
		b.Run(im.name, func(b *testing.B) {
			b.Run("1m", func(b *testing.B) {
				ks := keySetOf(n)
				perKey, lim := heapPerKey(b, ks, im)
				for b.Loop() {
				}
				lim.Close()
				b.ReportMetric(perKey, "bytes/key")
				b.ReportMetric(0, "ns/op")
			})
		})
	}
}

// heapPerKey builds im over ks and returns its live heap per key.
func heapPerKey(tb testing.TB, ks *keySet, im keyedImpl) (float64, keyedLimiter) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	lim := im.build(tb, ks, keyedCfg)
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(lim)
	return (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / float64(len(ks.u)), lim
}

// mapFloor is a bare map[uint64]uint64 with every key: the floor for memory.
type mapFloor struct {
	m map[uint64]uint64
}

func buildMapFloor(tb testing.TB, ks *keySet, _ keyedConfig) keyedLimiter {
	f := &mapFloor{m: make(map[uint64]uint64)}
	for i, k := range ks.u {
		f.m[k] = uint64(i)
	}
	return f
}

func (f *mapFloor) Take(_ int, k uint64, _ int64) bool { _, ok := f.m[k]; return ok }
func (f *mapFloor) Close()                             {}
