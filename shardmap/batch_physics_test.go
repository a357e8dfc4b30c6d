package shardmap

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/sluicedev/sluice/internal/benchkeys"
	"github.com/sluicedev/sluice/internal/cputime"
)

// BenchmarkBatchPhysics measures what a batched take on a large table is
// held to by the machine, on a plain 32 MiB array of words (the 1M-key
// fixture's cells are 25 MiB), one op one load, in 4 KiB pages (4k) and,
// where the kernel grants them, 2 MiB pages (2m):
//
//   - chase: dependent loads (a random cyclic permutation of lines,
//     followed word to word): the latency of one miss, its page walk
//     included, with nothing to overlap it;
//   - touch64, indep64: 64 independent loads at random lines drawn ahead
//     into a small array, summed: the cost of a miss when a core overlaps
//     as many as it can keep in flight; indep64-2line: the same with the
//     line after each loaded too;
//   - cas64: 64 lines drawn, loaded, then a Load and CompareAndSwap of a
//     word of each: the price of a CAS on a line a plain load has just
//     brought in; cas64-cold: the Load and CompareAndSwap alone, on lines
//     not loaded before (whether a CAS keeps later misses from
//     overlapping).
//
// crossed reports, for the 1M-key fixture, the share of keys whose cell is
// not on the cache line of their home cell (crossed/op), of those two
// lines or more past it (crossed2/op), and the mean displacement from home
// in cells (disp/op).
func BenchmarkBatchPhysics(b *testing.B) {
	b.Run("4k", func(b *testing.B) { batchPhysics(b, make([]uint64, physicsWords)) })
	// The same on memory the kernel backs with 2 MiB pages, where it
	// will (hugeWords; skipped where it does not): what 4 KiB pages cost.
	if arr, ok := hugeWords(b, physicsWords); ok {
		b.Run("2m", func(b *testing.B) { batchPhysics(b, arr) })
	}
	b.Run("crossed", func(b *testing.B) {
		f := benchFixture(b, 1<<20)
		crossed, crossed2, disp := 0, 0, 0
		for _, k := range f.keys {
			h := f.m.hash(k)
			t := f.m.shardOf(h).tab.Load()
			_, i := t.find(k, h)
			j := t.home(h)
			if i < j {
				i += t.m
			}
			disp += int(i - j)
			if i/4 != j/4 {
				crossed++
			}
			if i/4 > j/4+1 {
				crossed2++
			}
		}
		b.ReportMetric(float64(crossed)/float64(len(f.keys)), "crossed/op")
		b.ReportMetric(float64(crossed2)/float64(len(f.keys)), "crossed2/op")
		b.ReportMetric(float64(disp)/float64(len(f.keys)), "disp/op")
		for range b.N {
		}
	})
}

// physicsWords is BenchmarkBatchPhysics's array: 32 MiB of words.
const physicsWords = 32 << 20 / 8

func batchPhysics(b *testing.B, arr []uint64) {
	const words = physicsWords
	// Sattolo's shuffle: one cycle through every word, in lines chosen at
	// random (the index is a line's first word, so each load is a new line).
	const lineWords = 8
	lines := words / lineWords
	perm := make([]uint64, lines)
	for i := range perm {
		perm[i] = uint64(i)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := lines - 1; i > 0; i-- {
		j := r.IntN(i)
		perm[i], perm[j] = perm[j], perm[i]
	}
	for i := range perm {
		arr[perm[i]*lineWords] = perm[(i+1)%lines] * lineWords
	}
	b.Run("chase", func(b *testing.B) {
		p := uint64(0)
		cpu := cputime.Serial()
		for range b.N {
			p = arr[p]
		}
		cpu.Stop(b)
		touchSink(p)
	})
	indep := func(b *testing.B, second bool) {
		var idx [64]uint64
		x := benchkeys.Start
		var sink uint64
		cpu := cputime.Serial()
		for i := 0; i < b.N; i += len(idx) {
			for j := range idx {
				x = benchkeys.Next(x)
				idx[j] = uint64(benchkeys.Pick(x, lines-1)) * lineWords
			}
			for _, k := range idx {
				sink += arr[k&(words-1)]
				if second {
					sink += arr[(k+lineWords)&(words-1)]
				}
			}
		}
		cpu.Stop(b)
		touchSink(sink)
	}
	// cas64: 64 indexes drawn, then (touch) their words loaded, then
	// each word CompareAndSwapped: the price of a CAS on a line that a
	// plain load has just brought in. cas64-cold: the CAS alone.
	cas := func(b *testing.B, touch bool) {
		var idx [64]uint64
		x := benchkeys.Start
		var sink uint64
		aw := (*[words]atomic.Uint64)(unsafe.Pointer(&arr[0]))
		cpu := cputime.Serial()
		for i := 0; i < b.N; i += len(idx) {
			for j := range idx {
				x = benchkeys.Next(x)
				idx[j] = uint64(benchkeys.Pick(x, lines-1))*lineWords + 1
			}
			if touch {
				for _, k := range idx {
					sink += aw[k].Load()
				}
				touchSink(sink)
			}
			for _, k := range idx {
				w := aw[k].Load()
				aw[k].CompareAndSwap(w, w+1)
			}
		}
		cpu.Stop(b)
	}
	b.Run("touch64", func(b *testing.B) { indep(b, false) })
	b.Run("cas64", func(b *testing.B) { cas(b, true) })
	b.Run("cas64-cold", func(b *testing.B) { cas(b, false) })
	b.Run("indep64", func(b *testing.B) { indep(b, false) })
	b.Run("indep64-2line", func(b *testing.B) { indep(b, true) })
}
