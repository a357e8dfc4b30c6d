package core

import (
	"net/netip"

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
// (shardmap's TakeAt or TakeBatchAt), ordered after the takes of the keys
// before it; the batch as a whole is not atomic, so other goroutines'
// takes may fall between two of its keys. A batch that starts before Close may still pass
// every key, as a single take that loads the closed flag before Close may.
//
// On a large table it is faster per key than TakeAt in a loop: the keys'
// cells are asked for first, requests whose cache misses overlap, and
// the takes then find them in cache (see shardmap.Map.TakeBatchAt). With
// escalation on, an ordinary denial ends the map's batch there (its soft
// violation is recorded before the keys after it are taken), and the keys
// after it are loaded again: a batch that is mostly denials costs more
// per key than one that is mostly passes. On a table that fits in a
// core's cache (shardmap.Map.Cached) there are no misses to overlap, and
// it takes the keys one by one with TakeAt.
func (l *Limiter) TakeBatchAt(keys []uint64, now int64, n uint64, out []Decision) {
	out = out[:len(keys)]
	if l.closed.Load() {
		for i := range out {
			out[i] = Decision{Reason: Closed}
		}
		return
	}
	if l.m.Cached() {
		l.takeBatchCached(keys, now, n, out)
		return
	}
	l.takeBatchChunked(keys, now, n, out)
}

// takeBatchCached is TakeBatchAt on an open limiter whose table is in
// cache (shardmap.Map.Cached), where a batch has no misses to overlap: a
// loop of TakeAt's take, whose outcomes come back in registers. Through the map's
// batch they would make a round trip through an array of outcomes, which
// cost a hot batch more than reading the configuration and the clock once
// per chunk saved it (bench/README.md, "Batched takes").
// The closed flag was read once for the batch, as the chunked path reads
// it: a batch never mixes decided keys with Closed ones.
func (l *Limiter) takeBatchCached(keys []uint64, now int64, n uint64, out []Decision) {
	for i, key := range keys {
		out[i] = l.takeOpen(key, now, n)
	}
}

// takeBatchChunked is TakeBatchAt on an open limiter through the map's
// batched takes, whatever the table's size.
func (l *Limiter) takeBatchChunked(keys []uint64, now int64, n uint64, out []Decision) {
	// The map's outcomes go through an array on the stack, which Go
	// zeroes on every call (40 bytes a key): a small batch gets a small
	// one, so that it does not pay for zeroing BatchChunk entries.
	if len(keys) <= smallBatch {
		var took [smallBatch]shardmap.Took
		l.takeBatch(keys, now, n, out, took[:])
		return
	}
	var took [shardmap.BatchChunk]shardmap.Took
	l.takeBatch(keys, now, n, out, took[:])
}

// smallBatch is the batch size up to which TakeBatchAt's array of outcomes
// is this long rather than shardmap.BatchChunk.
const smallBatch = 16

// takeBatch is TakeBatchAt on an open limiter, through took, len(keys)
// outcomes at most at a time.
func (l *Limiter) takeBatch(keys []uint64, now int64, n uint64, out []Decision, took []shardmap.Took) {
	for len(keys) > 0 {
		var c int
		if l.cfg.DisableEscalation {
			c = min(len(keys), len(took))
			l.m.TakeBatchAt(keys[:c], now, n, took[:c])
		} else {
			// A denial records a soft violation in the key's mark, which a
			// later take of the key (a lockout it started) and an eviction
			// scan of its shard (when the key becomes evictable) read: the
			// keys after it wait until it is recorded. Every other refusal
			// writes counters only, and commutes with later takes.
			c = l.m.TakeBatchUntilDeniedAt(keys[:min(len(keys), len(took))], now, n, took)
		}
		ks, os, tk := keys[:c], out[:c], took[:c]
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

// TakeStringBatchAt is TakeBatchAt for string keys: out[i] is what
// TakeStringAt(keys[i], now, n) would return, the keys taken in order. The
// keys are hashed a chunk at a time into an array on the stack, so it
// allocates nothing either.
func (l *Limiter) TakeStringBatchAt(keys []string, now int64, n uint64, out []Decision) {
	out = out[:len(keys)]
	var ks [shardmap.BatchChunk]uint64
	for len(keys) > 0 {
		c := min(len(keys), len(ks))
		for i, s := range keys[:c] {
			ks[i] = l.StringKey(s)
		}
		l.TakeBatchAt(ks[:c], now, n, out[:c])
		keys, out = keys[c:], out[c:]
	}
}

// TakeAddrBatchAt is TakeBatchAt for address keys: out[i] is what
// TakeAddrAt(addrs[i], now, n) would return, the addresses taken in order,
// without allocating.
func (l *Limiter) TakeAddrBatchAt(addrs []netip.Addr, now int64, n uint64, out []Decision) {
	out = out[:len(addrs)]
	var ks [shardmap.BatchChunk]uint64
	for len(addrs) > 0 {
		c := min(len(addrs), len(ks))
		for i, a := range addrs[:c] {
			ks[i] = l.AddrKey(a)
		}
		l.TakeBatchAt(ks[:c], now, n, out[:c])
		addrs, out = addrs[c:], out[c:]
	}
}
