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
// home slot chosen by a multiply-shift reduction of the hash's low 32 bits).
// Slot i is cell i and mark i of two parallel arrays:
//
//	cell  key  uint64  the key, as given
//	      word uint64  the atomicbucket word (virtual time at which the bucket is empty)
//	mark       uint64  presence and escalation state (see Mark)
//
// A take on a tracked key reads only cells: 16 bytes each, four to a cache
// line, never straddling one (a cells array above 32 KiB starts on a
// page, and a first table cut from a slab, below, at a multiple of 16
// bytes), so a key in its home slot costs one line and most keys a probe
// moves on stay in that line. It reads the mark too only while the shard
// counts a held key (below). A shard table has ceil(3/2·perShard)+2 slots,
// where perShard (see Bounds) is the most keys the shard may track: the
// load factor never exceeds 2/3, and a full table costs 24·3/2 = 36 bytes
// per tracked key, escalation state included, plus the spread allowance
// (2.4% at 1M keys in 16 shards) and 256 bytes per shard header. Nothing
// else is allocated per key. The load is a trade: a take on a key that is
// not in its home slot mispredicts the probe's branch and loses the
// overlap of its cache miss with the next take's (BenchmarkTakeAnatomy),
// and 2/3 puts 67% of keys in their home slot against 63% at 3/4 (a take
// about 5% faster at 1M keys, for 4 bytes a key more).
//
// On a map whose cells come to 8 MiB or more (about 350,000 keys and up),
// New cuts the shards' first tables from two allocations, one of cells and
// one of marks, asks the kernel to back them with 2 MiB pages
// (madvise(MADV_HUGEPAGE), Linux only, granted where transparent huge
// pages are "madvise" or "always") and faults them in, so that no take
// pays a huge page's fault. At a million keys a take misses the TLB on
// almost every key, and a 4 KiB page's walk is a fifth of its miss; the
// first tables take that walk away (bench/README, "2 MiB pages for a large
// map"). The memory is still the Go heap's. The price: a shard's first
// table is freed only with all the others, so until every shard has
// compacted, the slabs stay (at most one first table's size per shard
// more); a compaction's table is an allocation of its own, on the heap's
// own pages. The advice outlives the slabs: the heap range stays eligible
// for huge pages once the runtime reuses or returns it, which can keep
// more of it resident. Memory the allocator reused (already faulted in)
// keeps its 4 KiB pages. GODEBUG=disablethp=1, the Go runtime's switch
// for keeping the heap off huge pages, turns the advice off here too.
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
// probes the cells and updates the word with one CompareAndSwap(old, new)
// that never acts on or stores the dead value (below). That
// CompareAndSwap is the linearization point of a passing take; the load of
// the word is that of a denial.
//
// Held keys are refused without reading their marks on every take: each
// shard counts its marks that have the held bit (ended holds included, until
// the key's next take or a sweep clears them, or the key goes). The count is
// raised before such a mark is stored and lowered only after it is gone, so
// a take that reads 0 there may skip the mark: no hold was in place when it
// read the count, which is where it is ordered against the hold, as a take
// that read a mark before a hold was stored always was. While the count is
// not 0 the take reads the mark of the key it found and refuses it if held.
//
// A cell whose key is 0 is either empty or holds the key 0; only the mark
// tells. An insert stores a dead word, then the key, then the mark, and
// only then the key's full word (a revived tombstone: the mark, then the
// word), so a take that finds its key in a cell always finds a word there,
// and the probe of the pass path stops at the first key 0 it meets: such
// takes (the key 0 itself, a key whose probe crosses its cell, a key not
// tracked) probe again with the marks. A take that finds a key whose
// insert is not done meets the dead word and waits for the shard lock,
// which the insert holds; so no take passes on a key that the readers of
// marks (MarkOf, Contains, LevelAt, RefundAt, UpdateMark) report as not
// tracked, and a refund always finds the key its take passed on (unless it
// was removed since).
//
// A take that passes on a tracked key that is not held does all of this
// inline in TakeAt, deciding with an atomicbucket.Pass (the Limit resolved
// at the take's time; a full bucket, the common case, on a branch of its own
// whose new word does not wait for the old one), so that it calls nothing:
// on random keys each instruction between one take's cache miss and the next
// one's costs time (BenchmarkTakeAnatomy); it retries its CompareAndSwap
// while another take changes the word. A take on that cell that does not
// pass is decided there by Pass.TakeLiveAt, on the clock already converted
// (a denial and its wait). So is a take on a key the cells found whose mark
// is held (refused at once) or whose hold has ended (cleared first): neither
// probes again. Every other take (a dead slot, a mark not yet published, a
// key not found by the cells alone) probes again with the marks and decides
// with the same Pass. Pass.TakeLiveAt agrees with Pass.Next on every pass.
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
// field by field: a dead word, the key and a first copy of the mark are
// written to the new table, then for the word and then the mark, the current value is
// copied and the old field is swapped to dead, retrying if a take changed it
// in between. A take that meets a dead field in a table whose next is set
// follows next and finds the key there with the field's final value; so
// takes during a compaction never wait, and none is lost. A take that
// follows a dead word from a slot whose mark it read live has decided the
// hold on that mark, and neither reads nor writes the key's mark in next,
// which is only a first copy until the compaction moves the old one. When
// every slot is moved, the new table is published as the shard's table. A
// take that meets a dead field with no next (a removed key) continues as
// an insert, which locks the shard.
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
// SweepAt removes every idle key the same rule allows, shard by shard, and
// clears every hold whose deadline is at or before its now (a hold that
// has ended carries no state; clearing it lets the shard's takes skip
// marks again, as the key's next take also does), so it must run on the
// clock the takes use. Delete removes a key whatever its state (a session
// that ends).
//
// All methods of Map are safe for concurrent use.
package shardmap
