package core

import (
	"slices"

	"github.com/sluicedev/sluice/shardmap"
)

// TakeBatchAt takes n tokens from the bucket of each of keys at now and
// writes the Decision of keys[i] to out[i] (out must be at least as long as
// keys). The decisions are those of TakeAt called on the keys one by one in
// order at the same now, escalation included: a key twice in keys is taken
// twice, the second take seeing the first (and a lockout the first
// started), and a new key is inserted as TakeAt inserts it. It takes no
// lock and allocates nothing for tracked keys.
//
// Linearization: each key's take is one CompareAndSwap of its bucket word
// (shardmap.Map.TakeBatchAt), ordered after the takes of the keys before it;
// the batch as a whole is not atomic, so other goroutines' takes may fall
// between two of its keys. A batch that starts before Close may still pass
// every key, as a single take that loads the closed flag before Close may.
//
// On a large table it is faster per key than TakeAt in a loop: the keys'
// cells are loaded first with plain loads, whose cache misses overlap, and
// the takes then find them in cache (see shardmap.Map.TakeBatchAt).
func (l *Limiter) TakeBatchAt(keys []uint64, now int64, n uint64, out []Decision) {
	out = out[:len(keys)]
	if l.closed.Load() {
		for i := range out {
			out[i] = Decision{Reason: Closed}
		}
		return
	}
	var took [shardmap.BatchChunk]shardmap.Took
	for len(keys) > 0 {
		c := l.batchRun(keys)
		ks, os, tk := keys[:c], out[:c], took[:c]
		l.m.TakeBatchAt(ks, now, n, tk)
		for i := range tk {
			r, st := tk[i].Result, tk[i].Status
			if st == shardmap.Taken && r.OK() {
				os[i] = Decision{Allowed: true, Remaining: r.Remaining()}
				continue
			}
			os[i] = l.refused(ks[i], now, r, st)
		}
		keys, out = keys[c:], out[c:]
	}
}

// batchRun returns how many of keys (at most shardmap.BatchChunk, at least
// one) TakeBatchAt may take in one call of the map's batch before it builds
// their refusals. The map's batch takes every key before the limiter sees
// any result, and a refusal can change what a later take of the same key
// decides: a soft violation may start a lockout, which refuses the key's
// next take. So with escalation on, a run ends before the first key that
// is already in it. Refusals of distinct keys commute with each other's
// takes (a violation touches its own key's mark and counters only), so
// building them after the run's takes decides what TakeAt in order would.
//
// Duplicates are found with a 256-bit filter on a multiplicative hash of
// the key and confirmed by a scan of the run: distinct keys rarely share a
// filter bit in a run of 64, so the scans are rare.
func (l *Limiter) batchRun(keys []uint64) int {
	c := min(len(keys), shardmap.BatchChunk)
	if l.cfg.DisableEscalation {
		return c
	}
	var seen [4]uint64
	for i, k := range keys[:c] {
		b := (k * 0x9e3779b97f4a7c15) >> 56
		w, bit := b>>6, uint64(1)<<(b&63)
		if seen[w]&bit != 0 && slices.Contains(keys[:i], k) {
			return i
		}
		seen[w] |= bit
	}
	return c
}
