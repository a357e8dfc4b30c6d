package shardmap

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/sluicedev/sluice/atomicbucket"
	"github.com/sluicedev/sluice/internal/timesat"
)

// Config sizes a Map. The zero value of an optional field means its default.
type Config struct {
	// MaxKeys is the most keys the map tracks. Required: at least 1.
	MaxKeys int
	// Shards is the number of shards, a power of two. 0 means
	// DefaultShards(MaxKeys).
	Shards int
	// EvictBackoff is how long (on the caller's clock) a full shard in which
	// nothing could be evicted refuses new keys without scanning again.
	// 0 means DefaultEvictBackoff; a negative value means never back off.
	EvictBackoff time.Duration
	// Seed, if not 0, derives the hash's secrets from it instead of drawing
	// them at random, so that keys land in the same shards and slots on
	// every run: for reproducible simulations, never in production, where
	// a client that learns the seed can craft keys that collide.
	Seed uint64
}

// DefaultEvictBackoff is the EvictBackoff used when none is given.
const DefaultEvictBackoff = time.Millisecond

// MaxShards is the largest shard count.
const MaxShards = 1 << 16

// MaxKeysLimit is the largest MaxKeys: 2^31 slots per shard is the most a
// 32-bit home index addresses.
const MaxKeysLimit = 1 << 40

// DefaultShards is the shard count used when none is given: the power of
// two at or above 4·GOMAXPROCS, at least 16, at most 1024, and small enough
// that every shard tracks at least 64 keys (a smaller shard fills unevenly).
func DefaultShards(maxKeys int) int {
	return shardsFor(maxKeys, runtime.GOMAXPROCS(0))
}

// ReproducibleShards is DefaultShards as it is on a machine with
// GOMAXPROCS 4: a shard count that depends on the map's size alone, for
// maps that must lay keys out the same way on every machine (with
// Config.Seed).
func ReproducibleShards(maxKeys int) int { return shardsFor(maxKeys, 4) }

// shardsFor is DefaultShards at a given GOMAXPROCS.
func shardsFor(maxKeys, procs int) int {
	n := 1 << bits.Len(uint(4*procs-1))
	n = min(max(n, 16), 1024)
	for n > 1 && maxKeys/n < 64 {
		n >>= 1
	}
	return n
}

// ErrConfig is wrapped by every configuration error; test with errors.Is.
var ErrConfig = errors.New("shardmap: invalid config")

// ConfigError names the field of a Config that is unusable.
type ConfigError struct {
	Field  string
	Value  any
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("shardmap: %s %v: %s", e.Field, e.Value, e.Reason)
}

// Unwrap returns ErrConfig.
func (e *ConfigError) Unwrap() error { return ErrConfig }

// Validate reports the first unusable field of c.
func (c Config) Validate() error {
	switch {
	case c.MaxKeys < 1:
		return &ConfigError{"MaxKeys", c.MaxKeys, "must be at least 1"}
	case c.MaxKeys > MaxKeysLimit:
		return &ConfigError{"MaxKeys", c.MaxKeys, fmt.Sprintf("must be at most %d", MaxKeysLimit)}
	case c.Shards < 0 || c.Shards > MaxShards || c.Shards&(c.Shards-1) != 0:
		return &ConfigError{"Shards", c.Shards, fmt.Sprintf("must be 0 or a power of two up to %d", MaxShards)}
	case c.Shards != 0 && (c.MaxKeys+c.Shards-1)/c.Shards > 1<<30:
		return &ConfigError{"Shards", c.Shards, "too few for MaxKeys: a shard holds at most 2^30 keys"}
	}
	return nil
}

// Status says what a take on the map did.
type Status uint8

const (
	// Taken: the key's bucket was consulted; the take's Result is its
	// decision.
	Taken Status = iota
	// Held: the key's mark holds it; nothing was taken, and the take's
	// Result is a denial whose RetryAfter is the time left until the
	// deadline.
	Held
	// Full: the key was not tracked, its shard (or the map, at MaxKeys) is
	// full and nothing could be evicted; nothing was taken.
	Full
)

func (s Status) String() string {
	switch s {
	case Taken:
		return "taken"
	case Held:
		return "held"
	case Full:
		return "full"
	}
	return "unknown"
}

// Counters are a Map's running totals. Tracked is exact when no insert or
// removal is in flight; PeakTracked is the sum of every shard's own peak,
// an upper bound on the map's peak that equals it while keys only grow.
type Counters struct {
	Tracked     int    // keys tracked now
	PeakTracked int    // see above
	Inserted    uint64 // keys inserted (including revived tombstones)
	Evicted     uint64 // idle keys removed to make room for new ones
	Swept       uint64 // idle keys removed by SweepAt
	Deleted     uint64 // keys removed by Delete
	Full        uint64 // inserts refused because nothing could be evicted
	Compactions uint64 // shard tables rebuilt to clear tombstones
}

// cell is the part of a slot that a take on a tracked key reads: the key
// and the bucket word side by side, 16 bytes, four to a cache line, so a
// cell never straddles a line. Every field is read and written atomically;
// see the package doc for the protocol.
type cell struct {
	key  atomic.Uint64
	word atomic.Uint64
}

// slot is a handle on one entry of a table: its cell and its mark, which
// live in parallel arrays. The zero slot is no slot.
type slot struct {
	*cell
	mark *atomic.Uint64
}

// swapMark replaces s's mark old with nw, if it is still old, and keeps the
// shard's count of held marks (see shardHot.held) with it: the count rises
// before a hold is stored and falls after one is gone (or after the swap
// failed), so a take that reads 0 there may skip the mark. Every writer of
// a live slot's mark goes through it; a compaction moves marks within the
// shard and leaves the count as it is.
func (sh *shard) swapMark(s slot, old, nw Mark) bool {
	starts, ends := !old.Held() && nw.Held(), old.Held() && !nw.Held()
	if starts {
		sh.held.Add(1)
	}
	if !s.mark.CompareAndSwap(uint64(old), uint64(nw)) {
		if starts {
			sh.held.Add(-1)
		}
		return false
	}
	if ends {
		sh.held.Add(-1)
	}
	return true
}

// deadWord is the reserved word of a removed or moved slot.
const deadWord = 0xdead_dead_dead_dead

// table is one shard's open-addressing array: cells and marks, entry i of
// each making slot i. Its slots never move; a compaction builds a new table
// and links it from next.
type table struct {
	cells []cell
	marks []atomic.Uint64
	m     uint64 // len(cells), len(marks)
	next  atomic.Pointer[table]
}

// at returns slot i.
func (t *table) at(i uint64) slot { return slot{&t.cells[i], &t.marks[i]} }

// cell returns cell i, which must be below t.m (home and the probe's wrap
// keep every index there): the pass path's access without the bounds
// check, whose load of the length is one more instruction in the window of
// a take that waits for memory (see BenchmarkTakeAnatomy;
// TestIndexesInRange).
func (t *table) cell(i uint64) *cell {
	return (*cell)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(t.cells)), i*uint64(unsafe.Sizeof(cell{}))))
}

// home is the first slot of the probe sequence of hash h (its low 32 bits
// reduced to [0, m) by multiply-shift).
func (t *table) home(h uint64) uint64 { return (uint64(uint32(h)) * t.m) >> 32 }

// find is the probe of the pass path: it reads cells only. It returns
// key's cell and its index, or nil at the first cell whose key is 0 (an
// empty slot, or a live key 0: the probe cannot tell them apart without
// the marks, so it never finds the key 0). A cell whose key is set always
// has a word: an insert stores it dead before the key, and live only once
// the key's mark is, so a take that finds a key being inserted waits for
// the shard lock.
func (t *table) find(key, h uint64) (*cell, uint64) {
	i := t.home(h)
	for {
		c := t.cell(i)
		k := c.key.Load()
		if k == 0 {
			return nil, 0
		}
		if k == key {
			return c, i
		}
		if i++; i == t.m {
			i = 0
		}
	}
}

// lookup returns the slot of key and its mark (which may be markDead: a
// tombstone of key, or a slot moved to next), or no slot if key is not in
// t. A slot whose key is being written (key set, mark still 0) reads as
// not found: a caller that finds no slot and must (a take) continues under
// the shard lock, which the insert holds, so it finds the key once the
// insert is done. The pass path of TakeAt, which reads no mark, finds
// such a slot's word dead until the insert has stored the mark, and so
// never passes on a key that lookup does not find.
//
// The mark decides whether a cell whose key is 0 is empty or holds the
// key 0. An insert stores the key before the mark, so once a non-empty mark
// is read, the key read after it is the slot's own.
func (t *table) lookup(key, h uint64) (slot, Mark) {
	i := t.home(h)
	for {
		k := t.cells[i].key.Load()
		if k == key || k == 0 {
			mk := Mark(t.marks[i].Load())
			if mk == markEmpty {
				return slot{}, 0
			}
			if k == key && (key != 0 || t.cells[i].key.Load() == 0) {
				return t.at(i), mk
			}
		}
		if i++; i == t.m {
			i = 0
		}
	}
}

// empty returns the first empty slot of h's probe sequence. Only called
// under the shard lock, on a table with at least one empty slot.
func (t *table) empty(h uint64) slot {
	i := t.home(h)
	for {
		if Mark(t.marks[i].Load()) == markEmpty {
			return t.at(i)
		}
		if i++; i == t.m {
			i = 0
		}
	}
}

// shardHot is what every take reads: alone in its cache lines.
type shardHot struct {
	tab atomic.Pointer[table]
	// held counts the shard's keys whose mark has the held bit (ended
	// holds included, until a take on the key or a sweep clears them, or
	// the key goes). While it is 0 a take need not read marks at all; it is
	// raised before such a mark is stored and lowered after it is gone, so
	// it never reads 0 while a hold is in place. Written only when a hold
	// starts or ends, so takes read this line as their own.
	held atomic.Int64
}

// shardCold is what inserts and removals write, under mu (the counters are
// atomic so that reports read them without the lock).
type shardCold struct {
	mu           sync.Mutex
	tombs        int    // tombstones in tab (under mu)
	hand         uint64 // eviction hand (under mu)
	noEvictUntil int64  // caller's time before which a full shard does not scan; noBackoff if none (under mu)
	evictableAt  int64  // after a scan that evicted nothing, the caller's time its first key becomes evictable if untouched; notKnown if none (under mu)
	live         atomic.Int64
	peak         atomic.Int64
	inserted     atomic.Uint64
	evicted      atomic.Uint64
	swept        atomic.Uint64
	deleted      atomic.Uint64
	full         atomic.Uint64
	compactions  atomic.Uint64
}

// noBackoff is the noEvictUntil of a shard not backing off: no time is
// before it (any int64 is a valid time on the caller's clock).
const noBackoff = math.MinInt64

// notKnown is the evictableAt of a shard that does not know when its first
// key becomes evictable: not a time any later now can be before (0 would
// be one, for a now before 0).
const notKnown = math.MinInt64

// padBlock is the padding unit: two 64-byte lines, so that adjacent-line
// prefetch does not pair two shards either, and a multiple of every cache
// line size cpuid reports on current hardware (64 or 128).
const padBlock = 128

// shard is one lock domain of the Map, padded to whole blocks: the hot part
// and the cold part each round up to a multiple of padBlock.
type shard struct {
	shardHot
	_ [(padBlock - unsafe.Sizeof(shardHot{})%padBlock) % padBlock]byte
	shardCold
	_ [(padBlock - unsafe.Sizeof(shardCold{})%padBlock) % padBlock]byte
}

// Map is a bounded map from uint64 keys to token buckets that share one
// *atomicbucket.Limit, with a Mark of escalation state per key. Make one with
// New; the zero value is not usable. A Map is safe for concurrent use: a
// take on a tracked key never locks or allocates; inserts and removals lock
// one shard. See the package doc for layout, concurrency and eviction.
type Map struct {
	lim    *atomicbucket.Limit
	shards []shard
	// shift is 63 − log2(len(shards)): the shard of hash h is h>>1>>shift,
	// two shifts so that none is by 64 (one shard) and none needs a guard.
	shift    uint
	seed     [4]uint64
	perShard int64  // most keys per shard
	slots    uint64 // slots per shard table
	maxUsed  int64  // live+tombstones above which an insert compacts first
	batch    int64  // most keys one eviction scan removes
	backoff  int64  // EvictBackoff in ns; < 0: never
	anchor   int64  // the epoch of Mark deadlines, on the caller's clock (markAnchor)
	maxKeys  int
	small    bool // every shard's cells together fit in a core's cache: a batch need not touch them first (see TakeBatchAt)

	// total counts tracked keys over every shard, for the MaxKeys bound.
	// Only inserts and removals write it (under their shard's lock), never
	// a take; it sits on its own cache line so those writes do not
	// invalidate the line of read-only fields above that every take reads.
	_     [padBlock]byte
	total atomic.Int64
	_     [padBlock - 8]byte
}

// New returns an empty map whose buckets follow lim. now is the caller's
// clock at New; Mark deadlines count from an epoch on the same microsecond
// grid long before it (see markAnchor), so that times before now are
// served as exactly as later ones.
func New(lim *atomicbucket.Limit, cfg Config, now int64) (*Map, error) {
	if lim == nil {
		return nil, &ConfigError{"Limit", nil, "must not be nil"}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Shards == 0 {
		cfg.Shards = DefaultShards(cfg.MaxKeys)
	}
	switch {
	case cfg.EvictBackoff == 0:
		cfg.EvictBackoff = DefaultEvictBackoff
	case cfg.EvictBackoff < 0:
		cfg.EvictBackoff = -1
	}
	// A shard's share of MaxKeys, plus room for the luck of the hash: the
	// keys per shard are binomial, so six standard deviations (and a few
	// keys) above the mean lets MaxKeys keys in without a shard filling
	// first, except with negligible probability. The bound on the whole
	// map is MaxKeys itself (total).
	share := (cfg.MaxKeys + cfg.Shards - 1) / cfg.Shards
	per := min(cfg.MaxKeys, share+int(math.Ceil(6*math.Sqrt(float64(share))))+8)
	m := &Map{
		lim:      lim,
		shards:   make([]shard, cfg.Shards),
		shift:    uint(63 - bits.TrailingZeros(uint(cfg.Shards))),
		perShard: int64(per),
		slots:    uint64(per+(per+1)/2) + 2, // ≥ 3/2·per + 1: load ≤ 2/3, one slot always empty
		batch:    max(1, int64(per)/16),
		backoff:  int64(cfg.EvictBackoff),
		anchor:   markAnchor(now),
		maxKeys:  cfg.MaxKeys,
	}
	// Tombstones may use half the spare slots before an insert compacts;
	// at least one slot always stays empty so that probes end.
	m.maxUsed = m.perShard + max(1, (int64(m.slots)-m.perShard)/2)
	m.maxUsed = min(m.maxUsed, int64(m.slots)-1)
	m.small = uint64(cfg.Shards)*m.slots*uint64(unsafe.Sizeof(cell{})) <= smallTable
	if cfg.Seed != 0 {
		r := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
		for i := range m.seed {
			m.seed[i] = r.Uint64()
		}
	} else {
		for i := range m.seed {
			m.seed[i] = rand.Uint64() // ChaCha8, seeded by the runtime from the OS
		}
	}
	m.seed[1] |= 1
	m.seed[3] |= 1
	first := m.firstTables()
	for i := range m.shards {
		m.shards[i].tab.Store(first(i))
		m.shards[i].noEvictUntil = noBackoff
		m.shards[i].evictableAt = notKnown
	}
	return m, nil
}

func (m *Map) newTable() *table {
	return &table{cells: make([]cell, m.slots), marks: make([]atomic.Uint64, m.slots), m: m.slots}
}

// firstTables returns the shards' first tables, shard i's from first(i).
// On a large map they are cut from two allocations, one of every shard's
// cells and one of its marks, each advised onto 2 MiB pages
// (adviseHugePages): a take at a million keys misses in the first-level
// TLB on almost every key, and a 4 KiB page's walk costs it about a
// fifth of its miss (bench/README, "What the machine allows"). A shard's
// own table, a few MiB at most, would cover few whole huge pages. The
// cost: a shard's first table is freed only with every other shard's, so
// until the last shard has compacted, the slabs stay (at most the first
// tables' size again).
func (m *Map) firstTables() func(i int) *table {
	n := uint64(len(m.shards)) * m.slots
	if !haveHugePageAdvice || thpDisabled || uintptr(n)*unsafe.Sizeof(cell{}) < hugeSlab {
		return func(int) *table { return m.newTable() }
	}
	cells, marks := make([]cell, n), make([]atomic.Uint64, n)
	adviseHugePages(unsafe.Pointer(&cells[0]), uintptr(n)*unsafe.Sizeof(cell{}))
	adviseHugePages(unsafe.Pointer(&marks[0]), uintptr(n)*unsafe.Sizeof(marks[0]))
	// Fault the huge pages in now, a write to each, so that no take pays
	// a huge page's fault (zeroing 2 MiB, or the kernel's compaction to
	// find one) on a message's path. Where the advice took no effect this
	// faults one 4 KiB page in 512. Nothing else sees the tables yet.
	for i := uint64(0); i < n; i += hugePage / uint64(unsafe.Sizeof(cell{})) {
		cells[i].key.Store(0)
	}
	for i := uint64(0); i < n; i += hugePage / 8 {
		marks[i].Store(0)
	}
	return func(i int) *table {
		lo, hi := uint64(i)*m.slots, uint64(i+1)*m.slots
		return &table{cells: cells[lo:hi:hi], marks: marks[lo:hi:hi], m: m.slots}
	}
}

// hash is the keyed mix: two rounds of multiply-fold with secret operands.
func (m *Map) hash(key uint64) uint64 {
	hi, lo := bits.Mul64(key^m.seed[0], m.seed[1])
	hi, lo = bits.Mul64(hi^lo^m.seed[2], m.seed[3])
	return hi ^ lo
}

// Limit returns the Limit every bucket follows.
func (m *Map) Limit() *atomicbucket.Limit { return m.lim }

// Shards returns the shard count.
func (m *Map) Shards() int { return len(m.shards) }

// MaxKeys returns the configured bound.
func (m *Map) MaxKeys() int { return m.maxKeys }

// PerShard returns the most keys one shard tracks.
func (m *Map) PerShard() int { return int(m.perShard) }

// SlotsPerShard returns the length of each shard's table.
func (m *Map) SlotsPerShard() int { return int(m.slots) }

// shardIndex returns the index of hash h's shard: below the shard count
// for every h (TestIndexesInRange).
func (m *Map) shardIndex(h uint64) uint64 { return h >> 1 >> (m.shift & 63) }

// shardOf returns the shard of hash h. Its index is in range for every h,
// so the access skips the bounds check, whose load of the length is one
// more instruction in the window of a take that waits for memory (see
// BenchmarkTakeAnatomy).
func (m *Map) shardOf(h uint64) *shard {
	return (*shard)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(m.shards)), m.shardIndex(h)*uint64(unsafe.Sizeof(shard{}))))
}

// ShardOf returns the shard index of key, in [0, Shards()).
func (m *Map) ShardOf(key uint64) int { return int(m.shardIndex(m.hash(key))) }

// TakeAt takes n tokens from key's bucket at now (the caller's clock, the
// Limit's), inserting a full bucket if key is not tracked. A key whose mark
// is held at now is refused (Held) without touching its bucket. It returns
// the decision (for Held, a denial whose RetryAfter is the time left in the
// hold; for Full, a denial whose RetryAfter is the time until the shard's
// first key can be evicted, as its last full scan found it, and not before
// the shard's eviction backoff ends; 0 if that is not known) and st. A
// caller that needs the key's mark reads it with MarkOf: the pass path does
// not read it.
//
// Two results rather than one struct: a struct of them would exceed the
// four words the compiler keeps in registers, and spilling it costs more
// than the rest of a tracked take. For a tracked key it neither locks nor
// allocates.
func (m *Map) TakeAt(key uint64, now int64, n uint64) (atomicbucket.Result, Status) {
	// The pass path, inline in this one function: a tracked key that is
	// not held whose bucket has the tokens. On random keys every
	// instruction and every cache line between one take's miss and the
	// next take's delays the next (see BenchmarkTakeAnatomy), so nothing
	// here is a call, and a take reads the key's cell only: the mark is
	// read only while the shard has a key with the held bit. The clock is
	// converted first: it needs no memory.
	pass := m.lim.Snapshot().PassAt(now, n)
	h := m.hash(key)
	sh := m.shardOf(h)
	t := sh.tab.Load()
	c, i := t.find(key, h)
	if c == nil {
		// A key not tracked, or a cell the probe could not tell from an
		// empty slot without its mark: probe again with the marks.
		return m.takeAt(key, h, pass, now, n)
	}
	if sh.held.Load() != 0 {
		if mk := &t.marks[i]; Mark(mk.Load())&(markPresent|markHeld) != markPresent {
			return m.takeMarked(sh, slot{c, mk}, key, h, pass, now, n) // held, or its hold has expired
		}
	}
	for {
		old := c.word.Load()
		var next uint64
		var r atomicbucket.Result
		var ok bool
		if pass.IsFull(old) { // a branch, not a conditional move: see NextFull
			next, r, ok = pass.NextFull()
		} else {
			next, r, ok = pass.NextPartial(old)
		}
		// The dead checks are TakeLiveAt's: never write into a removed
		// or moved slot, never store the dead value.
		if !ok || old == deadWord || next == deadWord {
			break
		}
		if c.word.CompareAndSwap(old, next) {
			return r, Taken
		}
		// Another take changed the word: decide again on the new one.
	}
	// Not a pass (most often a denial): decide on the cell found, without
	// probing again. A call in tail position, so nothing is spilled around
	// it on the pass path.
	return m.takeFound(c, pass, key, h, now, n)
}

// takeMarked decides a take on the slot the pass path found for key with a
// mark it does not take inline, without probing again: a held key is
// refused at once (under a flood, the commonest refusal), and a hold that
// has ended is cleared and the take decided on the slot as takeFound does.
// A mark the probe of cells alone cannot read (a slot removed, moved or
// not yet published) goes to takeAt.
func (m *Map) takeMarked(sh *shard, s slot, key, h uint64, pass atomicbucket.Pass, now int64, n uint64) (atomicbucket.Result, Status) {
	mk := Mark(s.mark.Load())
	if mk == markDead || mk&markPresent == 0 {
		return m.takeAt(key, h, pass, now, n)
	}
	if d, held := m.holdAt(sh, s, mk, now); held {
		return atomicbucket.DeniedFor(d), Held // the hold only: see takeAt
	}
	return m.takeFound(s.cell, pass, key, h, now, n)
}

// holdAt reports the rest of the hold of a live slot whose mark is mk, if
// it is held at now. A hold that has ended carries no state: the first
// take (or sweep) that meets it clears it (as UpdateMark ends a hold: the
// shard's count falls after the mark changed), so that the shard's takes
// skip marks again without waiting for a sweep, which a caller may never
// run.
func (m *Map) holdAt(sh *shard, s slot, mk Mark, now int64) (time.Duration, bool) {
	if d, held := m.HeldAt(mk, now); held {
		return d, true
	}
	if mk.Held() { // and HeldAt says it has ended
		sh.swapMark(s, mk, MarkNone)
	}
	return 0, false
}

// takeFound decides a take on the cell the pass path found for key, not
// held, as takeAt would after the same probe, on the clock pass already
// converted.
func (m *Map) takeFound(c *cell, pass atomicbucket.Pass, key, h uint64, now int64, n uint64) (atomicbucket.Result, Status) {
	if r, ok := pass.TakeLiveAt(&c.word, now, deadWord); ok {
		return r, Taken
	}
	return m.takeAt(key, h, pass, now, n) // the word died: moved or removed
}

// takeAt is TakeAt for every take the pass path and takeMarked do not
// finish: a key not tracked, a key the probe of cells alone cannot find
// (the key 0, or a probe that crosses its cell), a slot whose mark that
// probe cannot read (not yet published), and a slot that died under the
// take (removed, or moved by a compaction). It probes again (the lines are in cache now), follows moved
// slots to the next table, clears a hold that has ended, and decides with
// pass.TakeLiveAt, which agrees with the pass path on every pass; a key it
// does not find live is inserted by slowTake.
func (m *Map) takeAt(key, h uint64, pass atomicbucket.Pass, now int64, n uint64) (atomicbucket.Result, Status) {
	sh := m.shardOf(h)
	t := sh.tab.Load()
	// decided: the hold was decided on the mark of an earlier table, live
	// there when read, whose word then turned out dead. A compaction moves
	// the word before the mark, so the key's mark in next may still be the
	// first copy, which the compaction overwrites when it moves the old
	// mark: it is neither read nor written (clearing an ended hold there
	// would lower the held count for a hold the old mark still has).
	decided := false
	for {
		s, mk := t.lookup(key, h)
		if s.cell == nil {
			break
		}
		if mk != MarkNone {
			if mk == markDead { // removed, or moved to next, where the mark is final
				if t = t.next.Load(); t == nil {
					break
				}
				decided = false
				continue
			}
			if !decided {
				if d, held := m.holdAt(sh, s, mk, now); held {
					// The hold only, not also the bucket's own wait: that
					// costs the wait's reciprocal multiply, and under a
					// flood most takes are held.
					return atomicbucket.DeniedFor(d), Held
				}
			}
		}
		// Limit.TakeLiveAt never writes into a dead word and never
		// stores the dead value, so no take is ever written into a
		// removed or moved slot.
		if r, ok := pass.TakeLiveAt(&s.word, now, deadWord); ok {
			return r, Taken
		}
		// The word was dead: moved (follow next, where the key already is
		// with its final word, and perhaps not yet its final mark) or
		// removed (insert).
		if t = t.next.Load(); t == nil {
			break
		}
		decided = true
	}
	return m.slowTake(sh, key, h, now, n)
}

// refundWord gives n tokens back to the slot's word (see
// atomicbucket.Limit.Refund). It reports false if the word is dead.
func (m *Map) refundWord(s slot, now int64, n uint64) bool {
	for {
		w := s.word.Load()
		if w == deadWord {
			return false
		}
		nw := m.lim.Refund(w, now, n)
		if nw == deadWord {
			nw++
		}
		if nw == w || s.word.CompareAndSwap(w, nw) {
			return true
		}
	}
}

// RefundAt gives n tokens back to key's bucket at now, never above the
// burst: the undo of a take that a later layer of the same message refused.
// It reports false, doing nothing, when key is not tracked (a sweep or an
// eviction forgot it, and a fresh bucket is full anyway). Like TakeAt it is
// lock-free.
func (m *Map) RefundAt(key uint64, now int64, n uint64) bool {
	return m.onLive(key, func(s slot, _ Mark) bool { return m.refundWord(s, now, n) })
}

// onLive calls f with key's slot and mark in the table a lock-free reader
// finds it in, following the link to the next table while the slot is dead
// (moved by a compaction) or f reports that it found it dead, until f
// reports done. It reports false if key is not tracked.
func (m *Map) onLive(key uint64, f func(s slot, mk Mark) (done bool)) bool {
	h := m.hash(key)
	for t := m.shardOf(h).tab.Load(); t != nil; t = t.next.Load() {
		s, mk := t.lookup(key, h)
		if s.cell == nil {
			return false
		}
		if mk != markDead && f(s, mk) {
			return true
		}
	}
	return false
}

// slowTake inserts key if needed and takes, under the shard lock. Under the
// lock no slot of the current table can be killed or moved, so the take on
// the slot found is final.
func (m *Map) slowTake(sh *shard, key, h uint64, now int64, n uint64) (atomicbucket.Result, Status) {
	// A take that can never pass (n 0, or above the burst) is Invalid
	// before anything else: it neither inserts the key nor, on a full
	// map, says Full (which would promise room later).
	if !m.lim.Valid(n) {
		return atomicbucket.InvalidTake(), Taken
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s := m.ensure(sh, key, h, now)
	if s.cell == nil {
		sh.full.Add(1)
		// The wait is until the shard's first key can be evicted, as its
		// last scan found it, and no sooner than the end of its backoff,
		// before which it does not scan again. 0 when not known: nothing
		// was scanned, or the time is past and the shard is not backing
		// off (other shards' inserts took the room).
		var wait time.Duration
		next := sh.evictableAt
		if next != notKnown && now < sh.noEvictUntil {
			next = max(next, sh.noEvictUntil)
		}
		if next > now {
			wait = time.Duration(timesat.Sub(next, now))
		}
		return atomicbucket.DeniedFor(wait), Full
	}
	if d, held := m.HeldAt(Mark(s.mark.Load()), now); held {
		return atomicbucket.DeniedFor(d), Held
	}
	// A fresh configuration: the shard lock may have been waited for.
	r, _ := m.lim.TakeLiveAt(&s.word, now, n, deadWord)
	return r, Taken
}

// maxReserveTries bounds the evictions an insert makes to win a place in
// the map-wide bound against other shards' inserts.
const maxReserveTries = 4

// ensure returns key's live slot in the shard's current table, inserting a
// full bucket (evicting or compacting first if needed); no slot if the shard is
// full and nothing could be evicted. Called with sh.mu held.
func (m *Map) ensure(sh *shard, key, h uint64, now int64) slot {
	t := sh.tab.Load()
	s, mk := t.lookup(key, h)
	if s.cell != nil && mk != markDead {
		return s
	}
	if sh.live.Load() >= m.perShard || m.total.Load() >= int64(m.maxKeys) {
		if !m.evict(sh, t, now) {
			return slot{}
		}
	}
	// Reserve the key's place in the map-wide bound. Another shard may
	// have taken the last one since the check above (even the one this
	// shard's eviction just freed): then make room here, as a full map
	// would have had this insert do, rather than refuse while this shard
	// holds idle keys. Each retry follows an eviction of at least one key.
	for tries := 0; m.total.Add(1) > int64(m.maxKeys); tries++ {
		m.total.Add(-1)
		if tries == maxReserveTries || !m.evict(sh, t, now) {
			return slot{}
		}
	}

	if s.cell == nil && sh.live.Load()+int64(sh.tombs)+1 > m.maxUsed {
		m.compact(sh)
	}
	if t2 := sh.tab.Load(); t2 != t { // compacted: the tombstone of key, if any, is gone
		t = t2
		s = slot{}
	}
	fw := m.lim.FullWord(now)
	if fw == deadWord {
		fw-- // one quantum more than full is still full
	}
	// The word stays dead until the mark is live: a take that finds the
	// key by its cell before lookups see it (they read the mark) would
	// otherwise pass, and its refund, which looks the key up, find nothing
	// and be lost. A take that meets the dead word waits for the shard
	// lock, held here.
	if s.cell != nil {
		// Revive key's own tombstone. A take that read this slot before it
		// was killed is on the same key, and a word is the whole state of a
		// bucket, so its CompareAndSwap is right if it succeeds.
		s.mark.Store(uint64(MarkNone))
		sh.tombs--
	} else {
		s = t.empty(h)
		s.word.Store(deadWord) // before the key: a take that finds the key reads the word
		s.key.Store(key)
		s.mark.Store(uint64(MarkNone)) // publishes the slot to lookups
	}
	s.word.Store(fw)
	live := sh.live.Add(1)
	if live > sh.peak.Load() {
		sh.peak.Store(live)
	}
	sh.inserted.Add(1)
	return s
}

// kill removes a live slot if force or if it is idle at now (its bucket is
// full and its mark carries no state: what eviction and sweeps may remove);
// it reports whether it did. Called with the shard lock held (no compaction
// runs).
//
// The word is swapped to dead first: from then on no take can change it. If
// the mark then turns out to have changed (a racing denial recorded state),
// an idle kill restores the word and gives up; a take that met the dead word
// meanwhile is waiting for the lock and finds the slot live again.
func (m *Map) kill(sh *shard, s slot, now int64, force bool) bool {
	for {
		mk := Mark(s.mark.Load())
		w := s.word.Load()
		if mk == markDead || mk == markEmpty || w == deadWord {
			return false
		}
		if !force && (m.Active(mk, now) || !m.lim.IsFull(w, now)) {
			return false
		}
		if !s.word.CompareAndSwap(w, deadWord) {
			if force {
				continue
			}
			return false // a take just changed it: not idle
		}
		if sh.swapMark(s, mk, markDead) {
			return true
		}
		s.word.Store(w)
		if !force {
			return false
		}
	}
}

// idleAt is the caller's time at which a live slot becomes idle (its
// bucket full, its mark without state) if nothing touches it; MaxInt64 for
// a slot that is not live.
func (m *Map) idleAt(s slot, now int64) int64 {
	mk := Mark(s.mark.Load())
	w := s.word.Load()
	if mk == markDead || mk == markEmpty || w == deadWord {
		return math.MaxInt64
	}
	at := timesat.Add(now, int64(m.lim.FullIn(w, now)))
	if m.Active(mk, now) {
		at = max(at, m.Deadline(mk))
	}
	return at
}

// evict scans the shard from its hand and kills up to m.batch idle slots.
// It reports whether it killed any. Called with sh.mu held.
func (m *Map) evict(sh *shard, t *table, now int64) bool {
	if now < sh.noEvictUntil {
		return false
	}
	var killed int64
	for scanned := uint64(0); scanned < t.m && killed < m.batch; scanned++ {
		s := t.at(sh.hand)
		if sh.hand++; sh.hand == t.m {
			sh.hand = 0
		}
		if m.kill(sh, s, now, false) {
			killed++
		}
	}
	if killed == 0 {
		// Every slot was scanned and none was idle. When the first one
		// will be is worked out only now, in a second pass: a scan that
		// kills has no use for it. It is when this shard can make room,
		// unless it holds no live key at all (MaxKeys reached by other
		// shards): then it does not know.
		first := int64(math.MaxInt64)
		for i := range t.m {
			first = min(first, m.idleAt(t.at(i), now))
		}
		sh.evictableAt = first
		if sh.live.Load() == 0 { // exact under the lock: no key to wait for
			sh.evictableAt = notKnown
		}
		if m.backoff >= 0 {
			sh.noEvictUntil = timesat.Add(now, m.backoff)
		}
		return false
	}
	sh.evictableAt = notKnown // a later Full here has not scanned: it does not know
	m.removed(sh, int(killed))
	sh.evicted.Add(uint64(killed))
	return true
}

// compact replaces the shard's table by a copy without tombstones. Called
// with sh.mu held. Takes keep running on both tables; see the package doc.
func (m *Map) compact(sh *shard) {
	old := sh.tab.Load()
	nt := m.newTable()
	old.next.Store(nt)
	for i := range old.m {
		s := old.at(i)
		mk := s.mark.Load()
		if Mark(mk) == markEmpty || Mark(mk) == markDead {
			continue // empty, or a tombstone: not carried over
		}
		k := s.key.Load()
		d := nt.empty(m.hash(k))
		// Dead until the move below. Nothing takes in nt before then (a
		// take gets there only after seeing the old word dead), and were
		// anything to, a dead word sends it to the shard lock, which this
		// compaction holds, instead of to a word not yet moved.
		d.word.Store(deadWord)
		d.key.Store(k)
		d.mark.Store(mk) // first copy: lookups in nt find the key from here on
		// Move the word, then the mark: copy the current value, then swap
		// the old field to dead, retrying if a take changed it meanwhile.
		// After the swap nobody writes the old field, and nobody writes the
		// new one until it has the final value (a take goes to nt for a
		// field only after seeing it dead in old).
		for {
			w := s.word.Load()
			d.word.Store(w)
			if s.word.CompareAndSwap(w, deadWord) {
				break
			}
		}
		for {
			mk := s.mark.Load()
			d.mark.Store(mk)
			if s.mark.CompareAndSwap(mk, uint64(markDead)) {
				break
			}
		}
	}
	sh.tab.Store(nt)
	sh.tombs = 0
	sh.hand %= nt.m
	sh.compactions.Add(1)
}

// UpdateMark replaces key's mark by f(old) with one CompareAndSwap,
// retrying with the new old value if another update raced it. f returns
// the new mark and whether to store it; it must not return the zero Mark.
// UpdateMark reports the mark now in place and whether f's was stored; it
// reports false if key is not tracked. It neither locks nor allocates (f
// does not escape).
func (m *Map) UpdateMark(key uint64, f func(old Mark) (Mark, bool)) (Mark, bool) {
	h := m.hash(key)
	sh := m.shardOf(h)
	for t := sh.tab.Load(); t != nil; t = t.next.Load() { // next: moved, and the mark is final there; nil: removed
		s, mk := t.lookup(key, h)
		if s.cell == nil {
			return 0, false
		}
		for mk != markDead {
			nw, ok := f(mk)
			if !ok {
				return mk, false
			}
			if nw == markEmpty || nw == markDead {
				panic("shardmap: UpdateMark: f returned a reserved mark")
			}
			if sh.swapMark(s, mk, nw) {
				return nw, true
			}
			mk = Mark(s.mark.Load())
		}
	}
	return 0, false
}

// MarkOf returns key's mark and whether key is tracked.
func (m *Map) MarkOf(key uint64) (Mark, bool) {
	var out Mark
	ok := m.onLive(key, func(_ slot, mk Mark) bool { out = mk; return true })
	return out, ok
}

// LevelAt returns the tokens key's bucket holds at now and whether key is
// tracked, without changing anything.
func (m *Map) LevelAt(key uint64, now int64) (float64, bool) {
	var lv float64
	ok := m.onLive(key, func(s slot, _ Mark) bool {
		w := s.word.Load()
		if w == deadWord {
			return false
		}
		lv = m.lim.Level(w, now)
		return true
	})
	return lv, ok
}

// Contains reports whether key is tracked.
func (m *Map) Contains(key uint64) bool {
	_, ok := m.MarkOf(key)
	return ok
}

// Delete removes key whatever its state and reports whether it was tracked.
// A later take on key starts from a full bucket and no mark.
func (m *Map) Delete(key uint64) bool {
	h := m.hash(key)
	sh := m.shardOf(h)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s, mk := sh.tab.Load().lookup(key, h)
	if s.cell == nil || mk == markDead || !m.kill(sh, s, 0, true) {
		return false
	}
	m.removed(sh, 1)
	sh.deleted.Add(1)
	sh.noEvictUntil = noBackoff
	m.maybeCompact(sh)
	return true
}

// removed accounts for n slots of the shard just killed: n fewer keys, in
// the shard and in the map-wide bound, and n more tombstones. Called with
// sh.mu held.
func (m *Map) removed(sh *shard, n int) {
	sh.live.Add(int64(-n))
	m.total.Add(int64(-n))
	sh.tombs += n
}

// maybeCompact compacts when tombstones take more than half the room left
// for them. Called with sh.mu held.
func (m *Map) maybeCompact(sh *shard) {
	if int64(sh.tombs) > (m.maxUsed-m.perShard)/2 {
		m.compact(sh)
	}
}

// SweepAt removes every idle key (bucket full at now, no mark state) and
// returns how many it removed; it also clears every hold that has ended
// at now (see the package doc). It locks one shard at a time.
func (m *Map) SweepAt(now int64) int {
	total := 0
	for i := range m.shards {
		total += m.sweepShard(&m.shards[i], now)
	}
	return total
}

func (m *Map) sweepShard(sh *shard, now int64) int {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	t := sh.tab.Load()
	n := 0
	for i := range t.m {
		s := t.at(i)
		if m.kill(sh, s, now, false) {
			n++
			continue
		}
		// A hold that has ended is cleared, so that the shard's count
		// of held marks goes back to 0 and its takes stop reading marks.
		if mk := Mark(s.mark.Load()); mk.Held() {
			m.holdAt(sh, s, mk, now)
		}
	}
	if n > 0 {
		m.removed(sh, n)
		sh.swept.Add(uint64(n))
		sh.noEvictUntil = noBackoff
		m.maybeCompact(sh)
	}
	return n
}

// Len returns the number of tracked keys: the map-wide count the MaxKeys
// bound is kept with, exact when no insert or removal is in flight.
func (m *Map) Len() int { return int(m.total.Load()) }

// Counters returns the map's running totals.
func (m *Map) Counters() Counters {
	var c Counters
	for i := range m.shards {
		sh := &m.shards[i]
		c.Tracked += int(sh.live.Load())
		c.PeakTracked += int(sh.peak.Load())
		c.Inserted += sh.inserted.Load()
		c.Evicted += sh.evicted.Load()
		c.Swept += sh.swept.Load()
		c.Deleted += sh.deleted.Load()
		c.Full += sh.full.Load()
		c.Compactions += sh.compactions.Load()
	}
	return c
}

// Range calls f for every tracked key with its mark, shard by shard, until
// f returns false. It takes no lock: a key inserted or removed during the
// call may or may not be seen; every other key is seen exactly once, a
// key moved by a compaction during the call with its mark where it went
// (Range scans the table it started with, and looks a moved slot's key up
// in the tables it was moved to).
func (m *Map) Range(f func(key uint64, mk Mark) bool) {
	for i := range m.shards {
		t := m.shards[i].tab.Load()
		for j := range t.m {
			s := t.at(j)
			mk := Mark(s.mark.Load())
			if mk == markEmpty {
				continue
			}
			k := s.key.Load()
			if mk == markDead {
				// Removed, or moved by a compaction: only a key still live
				// in a later table is tracked.
				var ok bool
				if mk, ok = m.MarkOf(k); !ok {
					continue
				}
			}
			if !f(k, mk) {
				return
			}
		}
	}
}
