package shardmap

import (
	"strconv"
	"testing"
	"unsafe"

	"github.com/sluicedev/sluice/internal/benchcheck"
	"github.com/sluicedev/sluice/internal/benchkeys"
	"github.com/sluicedev/sluice/internal/cputime"
)

// BenchmarkTakeBatch is BenchmarkTakeExisting/serial through TakeBatchAt, in
// batches of 16, 64 and 256 keys drawn as there; one op is one key's take.
// Every take passes (a batch's keys share one now, 1µs a key after the
// batch before: a key drawn twice in a batch takes two of its 1000 tokens).
func BenchmarkTakeBatch(b *testing.B) {
	for _, sz := range benchSizes {
		for _, batch := range []int{16, 64, 256} {
			b.Run(sz.name+"/"+strconv.Itoa(batch)+"/serial", func(b *testing.B) {
				f := benchFixture(b, sz.n)
				m, keys := f.m, f.keys
				ks, out := make([]uint64, batch), make([]Took, batch)
				x := benchkeys.Start
				now, ok := f.now, 0
				b.ResetTimer()
				for i := 0; i < b.N; i += batch {
					for j := range ks {
						x = benchkeys.Next(x)
						ks[j] = keys[benchkeys.Pick(x, len(keys))]
					}
					now += int64(1000 * batch)
					m.TakeBatchAt(ks, now, 1, out)
					for j := range out {
						if out[j].Result.OK() {
							ok++
						}
					}
				}
				b.StopTimer()
				f.now = now
				benchcheck.AllPassed(b, ok, (b.N+batch-1)/batch*batch)
			})
		}
	}
}

// BenchmarkTakeBatchAnatomy takes a batch of 64 takes apart at 1k and 1M
// keys, each part drawing its 64 keys as BenchmarkTakeBatch does; one op is
// one key:
//
//   - draw: the draws alone;
//   - touch: draws and TakeBatchAt's first pass; touch2: the first pass
//     twice (the second finds the lines in cache);
//   - home: touch, then each key's home cell loaded again;
//   - probe: touch, then each key's probe (find) run: home and the cells
//     after it up to the key; probe-cold: the probes without the touch;
//   - probe-cas: probe, then a Load and CompareAndSwap of each key's word
//     (no bucket arithmetic, no outcome written);
//   - pretouched: touch, then TakeBatchAt (which touches again);
//   - batch: draws and TakeBatchAt; batch-notouch: the same with the first
//     pass skipped, as on a small table; batch2: TakeBatchAt twice (the
//     second on lines in cache);
//   - loop: draws and TakeAt on each key.
//
// Each reports cpu-ns/op, the thread's CPU time, beside wall time.
func BenchmarkTakeBatchAnatomy(b *testing.B) {
	const batch = 64
	for _, sz := range benchSizes {
		f := benchFixture(b, sz.n)
		m, keys := f.m, f.keys
		ks, out := make([]uint64, batch), make([]Took, batch)
		var hs [BatchChunk]uint64
		x := benchkeys.Start
		draw := func() {
			for j := range ks {
				x = benchkeys.Next(x)
				ks[j] = keys[benchkeys.Pick(x, len(keys))]
			}
		}
		// probe runs find on each key of ks, whose hashes are in hs, and
		// returns the cells found.
		probe := func(hs []uint64) uint64 {
			var sink uint64
			for j, k := range ks {
				h := hs[j]
				c, _ := m.shardOf(h).tab.Load().find(k, h)
				sink += uint64(uintptr(unsafe.Pointer(c)))
			}
			return sink
		}
		parts := []struct {
			name string
			run  func(now int64)
		}{
			{"draw", func(int64) { draw() }},
			{"touch", func(int64) { draw(); m.touch(ks, hs[:]) }},
			{"touch2", func(int64) { draw(); m.touch(ks, hs[:]); m.touch(ks, hs[:]) }},
			{"home", func(int64) {
				draw()
				m.touch(ks, hs[:])
				var sink uint64
				for _, h := range hs {
					t := m.shardOf(h).tab.Load()
					sink += t.cell(t.home(h)).key.Load()
				}
				touchSink(sink)
			}},
			{"probe", func(int64) { draw(); m.touch(ks, hs[:]); touchSink(probe(hs[:])) }},
			{"probe-cold", func(int64) {
				draw()
				for j, k := range ks {
					hs[j] = m.hash(k)
				}
				touchSink(probe(hs[:]))
			}},
			{"probe-cas", func(int64) {
				draw()
				m.touch(ks, hs[:])
				for j, k := range ks {
					h := hs[j]
					c, _ := m.shardOf(h).tab.Load().find(k, h)
					w := c.word.Load()
					c.word.CompareAndSwap(w, w)
				}
			}},
			{"pretouched", func(now int64) { draw(); m.touch(ks, hs[:]); m.TakeBatchAt(ks, now, 1, out) }},
			{"batch", func(now int64) { draw(); m.TakeBatchAt(ks, now, 1, out) }},
			{"batch-notouch", func(now int64) {
				draw()
				small := m.small
				m.small = true
				m.TakeBatchAt(ks, now, 1, out)
				m.small = small
			}},
			{"batch2", func(now int64) { draw(); m.TakeBatchAt(ks, now, 1, out); m.TakeBatchAt(ks, now, 1, out) }},
			{"loop", func(now int64) {
				draw()
				for j, k := range ks {
					o := &out[j]
					o.Result, o.Status = m.TakeAt(k, now, 1)
				}
			}},
		}
		for _, p := range parts {
			b.Run(sz.name+"/"+p.name, func(b *testing.B) {
				now := f.now
				b.ResetTimer()
				cpu := cputime.Serial()
				for i := 0; i < b.N; i += batch {
					now += 1000 * batch
					p.run(now)
				}
				cpu.Stop(b)
				b.StopTimer()
				f.now = now
			})
		}
	}
}
