package core

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/sluicedev/sluice/atomicbucket"
)

// fallbackKeyed is the gate's own keyed bucket store: a FALLBACK used while
// the module has no keyed core.Limiter with a refund to build on. It is
// simple and correct rather than fast to grow: 64 shards, each a
// copy-on-write map from key to a bucket word published through an atomic
// pointer, so a take or refund on a tracked key is one atomic load, a map
// read and the word's CAS (no lock, no allocation), while an insert copies
// its shard's map under the shard's mutex. The bound is split evenly over
// the shards; an insert into a full shard first evicts the shard's full
// buckets (indistinguishable from fresh ones) and otherwise fails with
// TableFull, so a throttled key is never handed a fresh bucket by
// eviction. One caveat: a take racing the sweep that forgets a full bucket
// may land on the forgotten word; the key then starts the next take full,
// having been full an instant before.
type fallbackKeyed struct {
	lim      *atomicbucket.Limit
	shift    uint
	perShard int
	seed     uint64
	failOpen bool
	shards   [fallbackShards]fallbackShard
}

const fallbackShards = 64

type fallbackShard struct {
	m  atomic.Pointer[map[uint64]*atomic.Uint64]
	mu sync.Mutex // serialises inserts and sweeps of this shard
	_  [64 - 16]byte
}

func newFallbackKeyed(lim *atomicbucket.Limit, bound int, failOpen bool) *fallbackKeyed {
	per := (bound + fallbackShards - 1) / fallbackShards
	f := &fallbackKeyed{lim: lim, shift: wordShift(lim), perShard: max(per, 1), seed: rand.Uint64(), failOpen: failOpen}
	for i := range f.shards {
		m := map[uint64]*atomic.Uint64{}
		f.shards[i].m.Store(&m)
	}
	return f
}

func (f *fallbackKeyed) shard(key uint64) *fallbackShard {
	// splitmix64 finaliser over a per-table random seed: hostile keys
	// cannot be chosen to share a shard without knowing the seed.
	x := key ^ f.seed
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return &f.shards[x&(fallbackShards-1)]
}

func (f *fallbackKeyed) lookup(key uint64) *atomic.Uint64 {
	return (*f.shard(key).m.Load())[key]
}

func (f *fallbackKeyed) takeAt(key uint64, now int64, n uint64) keyedResult {
	w := f.lookup(key)
	if w == nil {
		if w = f.insert(key, now); w == nil {
			return keyedResult{reason: TableFull, ok: f.failOpen}
		}
	}
	r := f.lim.TakeAt(w, now, n)
	return keyedResult{ok: r.OK(), retry: r.RetryAfter}
}

func (f *fallbackKeyed) ensure(key uint64, now int64) {
	if f.lookup(key) == nil {
		f.insert(key, now)
	}
}

func (f *fallbackKeyed) refundAt(key uint64, now int64, n uint64) {
	if w := f.lookup(key); w != nil {
		refundWord(f.lim, f.shift, w, now, n)
	}
}

func (f *fallbackKeyed) levelAt(key uint64, now int64) (float64, bool) {
	if w := f.lookup(key); w != nil {
		return f.lim.LevelAt(w, now), true
	}
	return f.lim.Burst(), false
}

func (f *fallbackKeyed) insert(key uint64, now int64) *atomic.Uint64 {
	sh := f.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	cur := *sh.m.Load()
	if w := cur[key]; w != nil {
		return w
	}
	if len(cur) >= f.perShard {
		cur = f.withoutFull(cur, now)
		if len(cur) >= f.perShard {
			return nil
		}
	}
	next := make(map[uint64]*atomic.Uint64, len(cur)+1)
	for k, w := range cur {
		next[k] = w
	}
	w := new(atomic.Uint64)
	w.Store(f.lim.FullWord(now))
	next[key] = w
	sh.m.Store(&next)
	return w
}

// withoutFull returns m without its full buckets (m itself if none is).
func (f *fallbackKeyed) withoutFull(m map[uint64]*atomic.Uint64, now int64) map[uint64]*atomic.Uint64 {
	full := 0
	for _, w := range m {
		if f.lim.IsFull(w.Load(), now) {
			full++
		}
	}
	if full == 0 {
		return m
	}
	next := make(map[uint64]*atomic.Uint64, len(m)-full)
	for k, w := range m {
		if !f.lim.IsFull(w.Load(), now) {
			next[k] = w
		}
	}
	return next
}

func (f *fallbackKeyed) sweep(now int64) {
	for i := range f.shards {
		sh := &f.shards[i]
		sh.mu.Lock()
		cur := *sh.m.Load()
		if next := f.withoutFull(cur, now); len(next) != len(cur) {
			sh.m.Store(&next)
		}
		sh.mu.Unlock()
	}
}

func (f *fallbackKeyed) size() int {
	n := 0
	for i := range f.shards {
		n += len(*f.shards[i].m.Load())
	}
	return n
}
