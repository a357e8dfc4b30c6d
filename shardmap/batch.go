package shardmap

import (
	"unsafe"

	"github.com/sluicedev/sluice/atomicbucket"
)

// Took is what TakeAt returns for one key, as TakeBatchAt writes it.
type Took struct {
	Result atomicbucket.Result
	Status Status
}

// BatchChunk is how many keys TakeBatchAt touches ahead of their takes: the
// misses of one chunk's first pass overlap each other, and its second pass
// finds their lines in cache (64 keys' lines are 4 KiB to 8 KiB, well
// inside a first-level cache). Its hashes live in an array of this size on
// the stack.
const BatchChunk = 64

// TakeBatchAt takes n tokens from the bucket of each of keys at now and
// writes what TakeAt would have returned for keys[i] to out[i] (out must be
// at least as long as keys). The decisions are those of TakeAt called on
// the keys one by one in order at the same now: a key twice in keys is
// taken twice, the second take seeing the first, and a key not tracked is
// inserted as TakeAt inserts it.
//
// Linearization: each key's take is still one CompareAndSwap of its word
// (or, for a denial, the load of it), ordered after the takes of the keys
// before it in keys; the batch as a whole is not atomic, so takes of other
// goroutines may fall between two of its keys. The configuration (rate and
// burst) and the clock conversion are read once per chunk of BatchChunk
// keys, as if each take had read them at that point, which a single take
// also does before its CompareAndSwap.
//
// Why it is faster than TakeAt in a loop on a large table: a take waits for
// its key's cell, and its CompareAndSwap (a locked instruction) lets no
// later load complete before it, so the cache misses of successive takes
// never overlap. TakeBatchAt works in chunks: a first pass hashes every key
// of the chunk and asks for its home cell's line (a write prefetch where
// the CPU has one, which also takes the line's ownership for the
// CompareAndSwap; plain loads elsewhere), requests whose misses overlap; a
// second pass runs the takes on lines already in cache, with the hashes
// and the clock conversion of the first. Like TakeAt it neither
// locks nor allocates for tracked keys.
func (m *Map) TakeBatchAt(keys []uint64, now int64, n uint64, out []Took) {
	for len(keys) > 0 {
		c := m.takeBatch(keys, now, n, out, false)
		keys, out = keys[c:], out[c:]
	}
}

// TakeBatchUntilDeniedAt is TakeBatchAt that stops after the first take
// its bucket denies (Status Taken, a Result that is Denied), and returns
// how many keys it took, that one included; it takes at most BatchChunk
// keys a call. It is for a caller that must act on such a denial before
// the keys after it are taken: core.Limiter records a soft violation in
// the key's mark, which a later take of the key, or an eviction scan of its
// shard, reads.
func (m *Map) TakeBatchUntilDeniedAt(keys []uint64, now int64, n uint64, out []Took) int {
	if len(keys) == 0 {
		return 0
	}
	return m.takeBatch(keys, now, n, out, true)
}

// takeBatch takes the first chunk of keys (at most BatchChunk), or, with
// stop, up to its first denial, writes their outcomes to out, and returns
// how many it took: the first pass (touch) hashes the keys and loads their
// home cells, the second takes them in order.
func (m *Map) takeBatch(keys []uint64, now int64, n uint64, out []Took, stop bool) int {
	var hs [BatchChunk]uint64
	c := min(len(keys), BatchChunk)
	ks, os, hc := keys[:c], out[:c], hs[:c] // one bounds check each, none in the loops
	small := m.small
	if !small {
		m.touch(ks, hc)
	}
	pass := m.lim.Snapshot().PassAt(now, n)
	for i, key := range ks {
		h := hc[i]
		if small {
			h = m.hash(key)
		}
		r, st := m.takeHashed(key, h, pass, now, n)
		// Field by field: a composite literal is built on the stack and
		// copied with 16-byte loads of 8-byte stores, which the store
		// buffer cannot forward (in a profile of BenchmarkTakeBatch/1k,
		// that copy was a fifth of a batch's time).
		o := &os[i]
		o.Result = r
		o.Status = st
		if stop && st == Taken && r.Status() == atomicbucket.Denied {
			return i + 1
		}
	}
	return c
}

// Cached reports whether every shard's cells together fit in a core's
// cache (smallTable): a table on which a batch has no misses to overlap,
// so that TakeBatchAt skips its first pass, and on which taking the keys
// one by one with TakeAt costs no more than a batch.
func (m *Map) Cached() bool { return m.small }

// smallTable is the most bytes of cells (over all shards) for which a
// batch skips its first pass: a table that small stays in a core's cache
// (the 1k-key tables of the benchmarks are 24 KiB), where the first pass
// has no misses to overlap and costs its hashing twice over: in the pass,
// where nothing hides it, instead of beside the CompareAndSwap before it.
const smallTable = 1 << 20

// touch is TakeBatchAt's first pass: it stores each key's hash in hs and
// asks for the line of its home cell (and, while its shard counts a held
// key, loads its mark), requests that do not wait for each other, so their
// misses overlap.
//
// Where the CPU has a write prefetch (haveWritePrefetch), the lines are
// asked for with it rather than loaded: a plain load brings a line in a
// state the CompareAndSwap must still upgrade, which in
// BenchmarkBatchHypotheses cost the second pass more than the prefetch
// saves (own/load+cas against own/prefw+cas). A home cell that is the last
// of its line also has the next line asked for: its probe leaves the line
// for any key not at home (TestBatchTouchLines counts what that covers),
// and a prefetch, unlike a load, does not hold up the pass while it waits.
// An address past the end of the cells is harmless there: a prefetch never
// faults, and a uintptr keeps nothing alive.
func (m *Map) touch(keys []uint64, hs []uint64) {
	hs = hs[:len(keys)]
	var sink uint64
	if !haveWritePrefetch {
		for i, key := range keys {
			h := m.hash(key)
			hs[i] = h
			sh := m.shardOf(h)
			t := sh.tab.Load()
			j := t.home(h)
			sink += t.cell(j).key.Load()
			if sh.held.Load() != 0 {
				sink += t.marks[j].Load()
			}
		}
		touchSink(sink)
		return
	}
	const lineBytes = 64
	var ls [2 * BatchChunk]uintptr // the lines to prefetch: at most two a key
	n := 0
	for i, key := range keys {
		h := m.hash(key)
		hs[i] = h
		sh := m.shardOf(h)
		t := sh.tab.Load()
		j := t.home(h)
		a := uintptr(unsafe.Pointer(t.cell(j)))
		// Both written, the second counted only for a last cell: no
		// branch on an address the predictor cannot know. The masks keep
		// the indexes in range for the compiler (n < 2·i+2 always).
		ls[n&(2*BatchChunk-1)] = a
		ls[(n+1)&(2*BatchChunk-1)] = a + lineBytes
		n++
		if a%lineBytes == lineBytes-unsafe.Sizeof(cell{}) {
			n++
		}
		if sh.held.Load() != 0 {
			sink += t.marks[j].Load()
		}
	}
	prefetchWrite(ls[:n])
	touchSink(sink)
}

// touchSink consumes the first pass's loads, so that no compiler may drop
// them; it does nothing.
//
//go:noinline
func touchSink(uint64) {}

// Touch loads the line of key's home cell, as TakeBatchAt's first pass
// does, for a caller that interleaves takes of several structures and
// touches all of them before it takes (core.Gate.CheckBatch). It changes
// nothing.
func (m *Map) Touch(key uint64) {
	h := m.hash(key)
	sh := m.shardOf(h)
	t := sh.tab.Load()
	touchSink(t.cell(t.home(h)).key.Load())
}

// takeHashed is TakeAt for a key whose hash h and Pass are already known:
// the same pass path, on the same slow paths. Keep the two in step (the
// differential test in batch_test.go holds their decisions equal).
func (m *Map) takeHashed(key, h uint64, pass atomicbucket.Pass, now int64, n uint64) (atomicbucket.Result, Status) {
	sh := m.shardOf(h)
	t := sh.tab.Load()
	c, i := t.find(key, h)
	if c == nil {
		return m.takeAt(key, h, pass, now, n)
	}
	if sh.held.Load() != 0 {
		if mk := &t.marks[i]; Mark(mk.Load())&(markPresent|markHeld) != markPresent {
			return m.takeMarked(sh, slot{c, mk}, key, h, pass, now, n)
		}
	}
	for {
		old := c.word.Load()
		var next uint64
		var r atomicbucket.Result
		var ok bool
		if pass.IsFull(old) {
			next, r, ok = pass.NextFull()
		} else {
			next, r, ok = pass.NextPartial(old)
		}
		if !ok || old == deadWord || next == deadWord {
			break
		}
		if c.word.CompareAndSwap(old, next) {
			return r, Taken
		}
	}
	return m.takeFound(c, pass, key, h, now, n)
}
