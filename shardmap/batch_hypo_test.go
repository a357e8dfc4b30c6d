package shardmap

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/sluicedev/sluice/atomicbucket"
	"github.com/sluicedev/sluice/internal/benchkeys"
	"github.com/sluicedev/sluice/internal/cputime"
)

// BenchmarkBatchHypotheses tests three explanations of why, at 1M keys,
// TakeBatchAt's second pass costs more than at 1k although its first pass
// has just loaded the lines (bench/README.md, "Batched takes"). One op is
// one key; each part reports cpu-ns/op.
//
// (a) Ownership: a plain load may bring a line in shared state, and the
// CompareAndSwap then needs another trip for ownership. On a 32 MiB array
// of words (BenchmarkBatchPhysics's), 64 random lines a round:
//
//   - own/load, own/loadfence, own/prefw, own/lockor, own/failcas: the
//     touch alone: plain loads; plain loads and then one locked Add on a
//     word of its own, which waits for them all to complete; a write
//     prefetch of each line (prefetchWrite); an atomic Or of 0, a locked
//     read-modify-write that takes ownership and changes nothing; a
//     CompareAndSwap whose expected value the word never holds, which
//     fails and also takes ownership;
//   - own/<touch>+cas: that touch on word 0 of each line, then a Load and
//     CompareAndSwap of word 1 of the same line; own/none+cas: the
//     CompareAndSwaps alone on cold lines;
//   - own/hot+cas: the CompareAndSwaps on 64 lines that stay in cache (the
//     same 64 every round): the price of the second pass with no memory.
//
// On the 1M fixture: fix/load-pre, fix/prefw-pre and fix/own-pre run the
// first pass by plain loads (touchLoads), by TakeBatchAt's own first pass
// (touch: write prefetches on amd64) or by an atomic Or of 0 on each home
// cell's key (touchOwned), then TakeBatchAt with its own first pass
// skipped (the keys hashed again in the second), so that only the kind of
// touch differs; fix/none-pre skips the first pass.
//
// (c) Arithmetic: arith/next is IsFull and NextFull or NextPartial on 64
// words in cache, the bucket arithmetic of a take without its loads'
// misses or its CompareAndSwap; arith/hash the hash of 64 keys.
//
// (b), which lines the first pass loads against those the second reads, is
// TestBatchTouchLines.
func BenchmarkBatchHypotheses(b *testing.B) {
	arr := make([]uint64, physicsWords)
	const lineWords = 8
	lines := physicsWords / lineWords
	aw := (*[physicsWords]atomic.Uint64)(unsafe.Pointer(&arr[0]))
	const never = 0xffff_ffff_ffff_fff1 // no word of arr ever holds it
	var fence atomic.Uint64
	own := func(b *testing.B, touch string, casPass, hot bool) {
		var idx [64]uint64
		x := benchkeys.Start
		var sink uint64
		cpu := cputime.Serial()
		for i := 0; i < b.N; i += len(idx) {
			if !hot || i == 0 {
				for j := range idx {
					x = benchkeys.Next(x)
					idx[j] = uint64(benchkeys.Pick(x, lines-1)) * lineWords
				}
			}
			switch touch {
			case "load":
				for _, k := range idx {
					sink += aw[k].Load()
				}
				touchSink(sink)
			case "loadfence":
				for _, k := range idx {
					sink += aw[k].Load()
				}
				fence.Add(sink) // locked: waits for every load before it
			case "prefw":
				var ps [64]uintptr
				for j, k := range idx {
					ps[j] = uintptr(unsafe.Pointer(&aw[k]))
				}
				prefetchWrite(ps[:])
			case "lockor":
				for _, k := range idx {
					aw[k].Or(0)
				}
			case "failcas":
				for _, k := range idx {
					aw[k].CompareAndSwap(never, never)
				}
			}
			if casPass {
				for _, k := range idx {
					w := &aw[k+1]
					old := w.Load()
					w.CompareAndSwap(old, old+1)
				}
			}
		}
		cpu.Stop(b)
	}
	for _, t := range []string{"load", "loadfence", "prefw", "lockor", "failcas"} {
		b.Run("own/"+t, func(b *testing.B) { own(b, t, false, false) })
	}
	for _, t := range []string{"none", "load", "loadfence", "prefw", "lockor", "failcas"} {
		b.Run("own/"+t+"+cas", func(b *testing.B) { own(b, t, true, false) })
	}
	b.Run("own/hot+cas", func(b *testing.B) { own(b, "none", true, true) })

	f := benchFixture(b, 1<<20)
	m, keys := f.m, f.keys
	const batch = 64
	ks, out := make([]uint64, batch), make([]Took, batch)
	var hs [BatchChunk]uint64
	x := benchkeys.Start
	for _, p := range []struct {
		name  string
		touch func([]uint64, []uint64)
	}{{"load-pre", m.touchLoads}, {"own-pre", m.touchOwned}, {"prefw-pre", m.touch}, {"none-pre", nil}} {
		b.Run("fix/"+p.name, func(b *testing.B) {
			now := f.now
			small := m.small
			cpu := cputime.Serial()
			for i := 0; i < b.N; i += batch {
				for j := range ks {
					x = benchkeys.Next(x)
					ks[j] = keys[benchkeys.Pick(x, len(keys))]
				}
				now += 1000 * batch
				if p.touch != nil {
					p.touch(ks, hs[:])
				}
				m.small = true
				m.TakeBatchAt(ks, now, 1, out)
				m.small = small
			}
			cpu.Stop(b)
			f.now = now
		})
	}

	// (c): the words of 64 cells in cache at a mix of levels, as the
	// fixture's are between takes: full ones (NextFull) and partial ones.
	lim := m.Limit()
	words := make([]uint64, batch)
	b.Run("arith/next", func(b *testing.B) {
		now := f.now
		pass := lim.Snapshot().PassAt(now, 1)
		for j := range words {
			w, _, _ := pass.NextFull()
			if j%2 == 0 {
				w, _, _ = pass.NextPartial(w) // partial: one token gone
			}
			words[j] = w
		}
		var sink uint64
		cpu := cputime.Serial()
		for i := 0; i < b.N; i += batch {
			for _, old := range words {
				var next uint64
				var r atomicbucket.Result
				var ok bool
				if pass.IsFull(old) {
					next, r, ok = pass.NextFull()
				} else {
					next, r, ok = pass.NextPartial(old)
				}
				if ok && old != deadWord && next != deadWord {
					sink += next + uint64(r.Remaining())
				}
			}
		}
		cpu.Stop(b)
		touchSink(sink)
	})
	b.Run("arith/hash", func(b *testing.B) {
		copy(ks, keys)
		cpu := cputime.Serial()
		for i := 0; i < b.N; i += batch {
			for j, k := range ks {
				hs[j] = m.hash(k)
			}
		}
		cpu.Stop(b)
		touchSink(hs[0])
	})
}

// TestBatchTouchLines is hypothesis (b) of BenchmarkBatchHypotheses: for
// every key of the 1M-key fixture it compares the cache lines the first
// pass asks for (the line of the home cell; marks are not loaded while no
// key is held) with the lines the second pass reads (every cell the probe
// reads up to the key's, and the key's word), by address, with and without
// the next line for a home that is the last cell of its line (touch's
// write-prefetch path). It reports the shares of keys whose probe leaves
// the touched lines, and asserts that no cell straddles two lines (cells
// are 16 bytes and the cells arrays 16-byte aligned) and that the next
// line covers some of them.
func TestBatchTouchLines(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a 1M-key map")
	}
	m := newMap(t, 1e6, 1000, Config{MaxKeys: 1 << 20})
	keys := fillTable(t, m, 0, 1, rand.New(rand.NewPCG(1, 2)))
	line := func(p unsafe.Pointer) uintptr { return uintptr(p) &^ 63 }
	var other, twoLines, otherNext, unaligned, lastCell int
	for _, k := range keys {
		h := m.hash(k)
		tab := m.shardOf(h).tab.Load()
		if uintptr(unsafe.Pointer(unsafe.SliceData(tab.cells)))%16 != 0 {
			unaligned++
		}
		home := tab.cell(tab.home(h))
		touched := line(unsafe.Pointer(home))
		last := uintptr(unsafe.Pointer(home))%64 == 48
		if last {
			lastCell++
		}
		c, _ := tab.find(k, h)
		if c == nil {
			t.Fatalf("key %d not found", k)
		}
		if line(unsafe.Pointer(&c.key)) != line(unsafe.Pointer(&c.word)) {
			t.Fatalf("key %d: its cell straddles two lines", k)
		}
		read := map[uintptr]bool{}
		for i := tab.home(h); ; {
			cc := tab.cell(i)
			read[line(unsafe.Pointer(cc))] = true
			if cc == c {
				break
			}
			if i++; i == tab.m {
				i = 0
			}
		}
		delete(read, touched)
		if len(read) > 0 {
			other++
		}
		if len(read) > 1 {
			twoLines++
		}
		if last {
			delete(read, touched+64)
		}
		if len(read) > 0 {
			otherNext++
		}
	}
	if unaligned != 0 {
		t.Errorf("%d keys' tables are not 16-byte aligned", unaligned)
	}
	if otherNext >= other {
		t.Errorf("the next line of a last-cell home covers no probe: %d keys leave the touched lines with it, %d without", otherNext, other)
	}
	n := float64(len(keys))
	t.Logf("keys %d: the second pass reads a line the first did not ask for for %.1f%% (two or more such lines: %.1f%%); with the next line of a last-cell home (%.1f%% of keys) also asked for, %.1f%%; the word is always on its key's line",
		len(keys), 100*float64(other)/n, 100*float64(twoLines)/n, 100*float64(lastCell)/n, 100*float64(otherNext)/n)
}

// touchOwned is touch by an atomic Or of 0 on each home cell's key: a
// locked read-modify-write that changes nothing but takes the line
// exclusive (hypothesis (a) of BenchmarkBatchHypotheses).
func (m *Map) touchOwned(keys []uint64, hs []uint64) {
	hs = hs[:len(keys)]
	for i, key := range keys {
		hs[i] = m.hash(key)
	}
	for _, h := range hs {
		t := m.shardOf(h).tab.Load()
		t.cell(t.home(h)).key.Or(0)
	}
}

// touchLoads is the first pass as it was before touch's write prefetch:
// plain loads of each home cell's key (hypothesis (a) of
// BenchmarkBatchHypotheses).
func (m *Map) touchLoads(keys []uint64, hs []uint64) {
	hs = hs[:len(keys)]
	for i, key := range keys {
		hs[i] = m.hash(key)
	}
	var sink uint64
	for _, h := range hs {
		t := m.shardOf(h).tab.Load()
		sink += t.cell(t.home(h)).key.Load()
	}
	touchSink(sink)
}
