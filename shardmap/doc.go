// Package shardmap is a bounded map from uint64 keys to token-bucket words
// (package atomicbucket), built for millions of keys taken from many
// goroutines at once. A take on a key that is already tracked is lock-free
// and allocation-free; inserts, removals and sweeps lock one shard at most
// and never make a take on another key wait.
//
// # Memory layout
//
// A Map holds a power-of-two number of shards. The shard of a key is chosen
// by the top bits of a keyed hash (two rounds of a 64×64→128-bit
// multiply-fold mix with four random 64-bit secrets drawn per Map), so a
// client that does not know the secrets cannot craft keys that pile into one
// shard or one probe run.
//
// Each shard is a fixed-capacity open-addressing table (linear probing, the
// home slot chosen by a multiply-shift reduction of the hash's low 32 bits)
// of 24-byte slots:
//
//	key  uint64  the key, as given
//	word uint64  the atomicbucket word (virtual time at which the bucket is empty)
//	mark uint64  presence and escalation state (see Mark)
//
// The three fields of a slot sit side by side, so the presence check, the
// escalation check and the bucket's CompareAndSwap of one take touch one
// cache line, or two for a slot that straddles a line boundary: in a table
// that starts on a line, as every table above 32 KiB does, that is the
// third and sixth slot of every eight (8 slots fill 3 lines). The word itself
// is 8-byte aligned and never straddles. A shard table has
// ceil(4/3·perShard)+2 slots, where perShard (see Bounds) is the most keys
// the shard may track: the load factor never exceeds 3/4, and a full table
// costs 24·4/3 = 32 bytes per tracked key, escalation state included, plus
// the spread allowance (2.4% at 1M keys in 16 shards) and 256 bytes per
// shard header. Nothing else is allocated per
// key.
//
// The shard header is padded to whole cache lines (two 128-byte blocks: the
// table pointer that every take reads, and the lock and counters that inserts
// write, so inserts do not invalidate the line takes read). Padding is
// computed from unsafe.Sizeof of the unpadded parts. The shard array is a
// power of two times 256 bytes, a size Go's allocator places at a multiple
// of its size (or of the page), so the blocks are aligned too.
//
// # Concurrency
//
// A take finds its slot without a lock: it loads the shard's table pointer,
// probes, loads the mark (held keys are refused here) and then updates the
// word with one CompareAndSwap(old, new) on the slot that never acts on or
// stores the dead value (below). That CompareAndSwap is the linearization
// point of a passing take; the load of the word is that of a denial.
//
// A take that passes on a tracked key that is not held (its mark is none,
// a soft-violation window, or one whose deadline passed) does all of this
// inline in TakeAt, deciding with an atomicbucket.Pass (the Limit resolved
// at the take's time), so that it calls nothing: on random keys each
// instruction between one take's cache miss and the next one's costs time
// (BenchmarkTakeAnatomy); it retries its CompareAndSwap while another take
// changes the word. A take on that slot that does not pass is decided
// there by Pass.TakeLiveAt, on the clock already converted (a denial and
// its wait), a held key is refused after the same one probe, and a key not
// in the table goes straight to the insert. Every other take (a hold that
// has expired, a dead slot) probes again and decides with the same Pass.
// Pass.TakeLiveAt agrees with Pass.Next on every pass.
//
// Removing a key (Delete, sweep, eviction) kills the slot: the word, then
// the mark, are swapped to reserved dead values by CompareAndSwap, so a take
// that read the slot before cannot write to it afterwards. The key stays in
// the slot as a tombstone that only the same key may revive. Slots are never
// reused for another key in the same table, so a slow take can never update
// a different key's bucket (no ABA across keys). A bucket word that would
// equal the dead value is nudged by one refill quantum (down, which is
// still full, for a new bucket; up, one quantum less credit, after a take).
//
// Tombstones are cleared by compaction: under the shard lock, a new table is
// built and linked from the old one (next), and every live slot is moved
// field by field: the key and a first copy of the mark are written to the
// new table, then for the word and then the mark, the current value is
// copied and the old field is swapped to dead, retrying if a take changed it
// in between. A take that meets a dead field in a table whose next is set
// follows next and finds the key there with the field's final value; so
// takes during a compaction never wait, and none is lost. When every slot
// is moved, the new table is published as the shard's table. A take that
// meets a dead field with no next (a removed key) continues as an insert,
// which locks the shard.
//
// # Bounds and eviction
//
// The Map tracks at most MaxKeys keys: inserts and removals keep a
// map-wide count (on its own cache line; takes never touch it). A shard's
// table holds perShard keys: its share of MaxKeys plus six standard
// deviations of the hash's binomial spread (and 8), so MaxKeys keys fit
// without one shard filling first except with negligible probability.
//
// An insert into a full shard, or into any shard while the map holds
// MaxKeys, first evicts from its own shard: it scans from a rotating hand
// and kills up to perShard/16 (at least one) slots whose bucket is full at
// the insert's time (atomicbucket.Limit.IsFull: indistinguishable from a new
// bucket) and whose mark carries no escalation state (none, or its deadline
// has passed). A throttled bucket (not full), or a key in a soft-violation
// window or a lockout, is never evicted, so key churn can never hand such a
// key a fresh bucket. If nothing can be evicted the insert fails
// (Status Full) and the shard does not scan again for EvictBackoff of the
// caller's time, unless a Delete or sweep frees a slot first.
//
// SweepAt removes every idle key the same rule allows, shard by shard.
// Delete removes a key whatever its state (a session that ends).
//
// All methods of Map are safe for concurrent use.
package shardmap
