package shardmap

import (
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/klauspost/cpuid/v2"
	"github.com/sluicedev/sluice/atomicbucket"
)

func newMap(t testing.TB, rate, burst float64, cfg Config) *Map {
	t.Helper()
	lim, err := atomicbucket.NewLimit(rate, burst, 0)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(lim, cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// setSeed fixes the hash secrets, as New fixes the drawn ones (a fixed hash
// is what an attacker would exploit). The map must be empty.
func (m *Map) setSeed(s [4]uint64) {
	s[1] |= 1
	s[3] |= 1
	m.seed = s
}

func TestShardPadding(t *testing.T) {
	sz := unsafe.Sizeof(shard{})
	if sz%64 != 0 {
		t.Fatalf("unsafe.Sizeof(shard{}) = %d, not a multiple of 64", sz)
	}
	if cl := cpuid.CPU.CacheLine; cl > 0 && sz%uintptr(cl) != 0 {
		t.Fatalf("unsafe.Sizeof(shard{}) = %d, not a multiple of the cache line %d", sz, cl)
	}
	if off := unsafe.Offsetof(shard{}.shardCold); off%padBlock != 0 || off < unsafe.Sizeof(shardHot{}) {
		t.Fatalf("cold part at offset %d: not on its own block", off)
	}
	t.Logf("shard %d bytes, cache line (cpuid) %d", sz, cpuid.CPU.CacheLine)
}

// TestCellLines pins the package doc's layout: a cell (key and word) is 16
// bytes, and a cells array above 32 KiB starts on a page, so four cells
// fill each 64-byte line and none straddles two.
func TestCellLines(t *testing.T) {
	if size := unsafe.Sizeof(cell{}); size != 16 {
		t.Fatalf("a cell is %d bytes, want 16", size)
	}
	lim, _ := atomicbucket.NewLimit(1000, 10, 0)
	m, err := New(lim, Config{MaxKeys: 4096, Shards: 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	tab := m.shards[0].tab.Load()
	if size := len(tab.cells) * int(unsafe.Sizeof(cell{})); size <= 32<<10 {
		t.Fatalf("cells of %d bytes: too small for this test", size)
	}
	base := uintptr(unsafe.Pointer(&tab.cells[0]))
	if base%64 != 0 { // with 16-byte cells, none then straddles a line
		t.Fatalf("cells at %#x: not on a 64-byte line", base)
	}
}

func TestConfigErrors(t *testing.T) {
	lim, _ := atomicbucket.NewLimit(1, 1, 0)
	for _, c := range []struct {
		cfg   Config
		field string
	}{
		{Config{}, "MaxKeys"},
		{Config{MaxKeys: -1}, "MaxKeys"},
		{Config{MaxKeys: MaxKeysLimit + 1}, "MaxKeys"},
		{Config{MaxKeys: 10, Shards: 3}, "Shards"},
		{Config{MaxKeys: 10, Shards: -2}, "Shards"},
		{Config{MaxKeys: 10, Shards: MaxShards * 2}, "Shards"},
		{Config{MaxKeys: 1<<30 + 1, Shards: 1}, "Shards"}, // more than a shard holds
	} {
		_, err := New(lim, c.cfg, 0)
		var ce *ConfigError
		if !errors.Is(err, ErrConfig) || !errors.As(err, &ce) || ce.Field != c.field {
			t.Errorf("%+v: err %v, want a ConfigError on %s", c.cfg, err, c.field)
		}
	}
	if _, err := New(nil, Config{MaxKeys: 1}, 0); !errors.Is(err, ErrConfig) {
		t.Errorf("nil limit: %v", err)
	}
	m, err := New(lim, Config{MaxKeys: 1000}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if s := m.Shards(); s&(s-1) != 0 || s < 1 {
		t.Errorf("default shards %d", s)
	}
	if m.MaxKeys() != 1000 || m.Shards()*m.PerShard() < 1000 {
		t.Errorf("bound %d, %d shards of %d for MaxKeys 1000", m.MaxKeys(), m.Shards(), m.PerShard())
	}
	if 3*m.PerShard() > 2*m.SlotsPerShard() {
		t.Errorf("load factor above 2/3: %d keys in %d slots", m.PerShard(), m.SlotsPerShard())
	}
}

func TestMarkEncoding(t *testing.T) {
	lim, _ := atomicbucket.NewLimit(1, 1, 0)
	for _, anchor := range []int64{0, -5e9, 7e15, math.MinInt64 / 2, math.MaxInt64 / 2} {
		m, _ := New(lim, Config{MaxKeys: 1}, anchor)
		for _, c := range []struct {
			count int
			held  bool
			dl    int64
			want  int64
		}{
			{0, false, anchor, anchor},
			{3, true, anchor + 30e9, anchor + 30e9},
			{255, false, anchor + 1, anchor + 1000},   // rounded up to the µs
			{300, true, anchor + 1999, anchor + 2000}, // count clamped
			{1, false, anchor - 5, anchor},            // before the anchor
			{1, true, math.MaxInt64, math.MaxInt64},
		} {
			mk := m.MakeMark(c.count, c.held, c.dl)
			if mk == markDead || mk == markEmpty || mk&1 == 0 {
				t.Fatalf("reserved mark %x", mk)
			}
			if got := m.Deadline(mk); got != c.want {
				t.Errorf("anchor %d: Deadline(MakeMark(%d)) = %d, want %d", anchor, c.dl, got, c.want)
			}
			if mk.Held() != c.held || mk.Count() != min(c.count, MaxCount) {
				t.Errorf("mark %x: held %v count %d", mk, mk.Held(), mk.Count())
			}
		}
	}
	m, _ := New(lim, Config{MaxKeys: 1}, 0)
	mk := m.MakeMark(0, true, 30e9)
	if d, ok := m.HeldAt(mk, 30e9-1); !ok || d != 1 {
		t.Errorf("HeldAt just before: %v %v", d, ok)
	}
	if _, ok := m.HeldAt(mk, 30e9); ok {
		t.Error("held at its deadline")
	}
	if m.Active(MarkNone, 0) || !m.Active(mk, 0) || m.Active(mk, 30e9) {
		t.Error("Active")
	}
}

func TestTakeInsertDelete(t *testing.T) {
	m := newMap(t, 10, 2, Config{MaxKeys: 100})
	for _, c := range []struct {
		now  int64
		want atomicbucket.Status
	}{{0, atomicbucket.Allowed}, {0, atomicbucket.Allowed}, {0, atomicbucket.Denied}, {1e8, atomicbucket.Allowed}} {
		o := take(m, 7, c.now, 1)
		if o.Status != Taken || o.Result.Status() != c.want || o.Mark != MarkNone {
			t.Fatalf("at %d: %+v, want %v", c.now, o, c.want)
		}
	}
	if o := take(m, 7, 1e8, 3); o.Result.Status() != atomicbucket.Invalid {
		t.Fatalf("n > burst: %+v", o)
	}
	if lv, ok := m.LevelAt(7, 1e8); !ok || lv != 0 {
		t.Fatalf("level %v %v", lv, ok)
	}
	if !m.Delete(7) || m.Delete(7) || m.Contains(7) || m.Len() != 0 {
		t.Fatal("delete")
	}
	// Revived from its tombstone: a full bucket again.
	if o := take(m, 7, 1e8, 2); !o.Result.OK() || m.Len() != 1 {
		t.Fatalf("after delete: %+v", o)
	}
	c := m.Counters()
	if c.Inserted != 2 || c.Deleted != 1 || c.Tracked != 1 || c.PeakTracked != 1 {
		t.Fatalf("counters %+v", c)
	}
}

func TestHeldKey(t *testing.T) {
	m := newMap(t, 10, 2, Config{MaxKeys: 100})
	m.TakeAt(1, 0, 1)
	if _, ok := m.UpdateMark(1, func(Mark) (Mark, bool) { return m.MakeMark(0, true, 5e9), true }); !ok {
		t.Fatal("UpdateMark")
	}
	o := take(m, 1, 4e9, 1)
	if o.Status != Held || o.Result.RetryAfter() != time.Second || o.Result.OK() {
		t.Fatalf("held: %+v", o)
	}
	if lv, _ := m.LevelAt(1, 4e9); lv != 2 {
		t.Fatalf("a held take took tokens: level %v", lv)
	}
	if o := take(m, 1, 5e9, 1); o.Status != Taken || !o.Result.OK() {
		t.Fatalf("after the deadline: %+v", o)
	}
	if _, ok := m.UpdateMark(99, func(Mark) (Mark, bool) { return MarkNone, true }); ok {
		t.Fatal("UpdateMark on an absent key")
	}
}

// fillTable takes n tokens at now from random keys until the map holds
// MaxKeys of them, its bound, and returns those keys. It counts the keys
// taken rather than calling Len, which sums every shard, and checks Len
// once at the end.
func fillTable(t testing.TB, m *Map, now int64, n uint64, r *rand.Rand) []uint64 {
	t.Helper()
	want := m.MaxKeys()
	keys := make([]uint64, 0, want)
	for tries := 0; len(keys) < want; tries++ {
		if tries > 100*want {
			t.Fatalf("could not fill: %d of %d", len(keys), want)
		}
		k := r.Uint64()
		if o := take(m, k, now, n); o.Status == Taken {
			keys = append(keys, k)
		}
	}
	if m.Len() != want {
		t.Fatalf("Len = %d after %d keys taken, want %d", m.Len(), len(keys), want)
	}
	return keys
}

func TestEvictionOnlyIdle(t *testing.T) {
	// rate 1/s, burst 2: a key that took 1 token at t is full at t+1s.
	m := newMap(t, 1, 2, Config{MaxKeys: 64, Shards: 4, EvictBackoff: -1})
	r := rand.New(rand.NewPCG(5, 6))
	fillTable(t, m, 0, 2, r) // every bucket empty: nothing evictable
	before := m.Counters().Full
	if o := take(m, r.Uint64(), 1e9, 1); o.Status != Full || o.Result.OK() {
		t.Fatalf("full table of throttled keys accepted a new key: %+v", o)
	}
	if c := m.Counters(); c.Full != before+1 || c.Evicted != 0 {
		t.Fatalf("counters %+v", c)
	}
	// At 2s every bucket is full again: new keys evict old ones. Each
	// churn key is taken a second after the one before, so it is idle by
	// the time the next arrives.
	for i := 0; i < 200; i++ {
		if o := take(m, r.Uint64(), 2e9+int64(i)*1e9, 1); o.Status != Taken {
			t.Fatalf("churn %d: %+v", i, o)
		}
	}
	if m.Len() > m.MaxKeys() {
		t.Fatalf("Len %d over the bound", m.Len())
	}
	if m.Counters().Evicted == 0 {
		t.Fatal("no eviction")
	}
}

func TestBackoff(t *testing.T) {
	m := newMap(t, 1, 1, Config{MaxKeys: 16, Shards: 1, EvictBackoff: time.Second})
	r := rand.New(rand.NewPCG(7, 8))
	keys := fillTable(t, m, 0, 1, r)
	if o := take(m, r.Uint64(), 0, 1); o.Status != Full {
		t.Fatal(o)
	}
	// At 0.999s no bucket is full, and the shard does not rescan before 1s.
	if o := take(m, r.Uint64(), 999e6, 1); o.Status != Full {
		t.Fatal(o)
	}
	// A Delete clears the backoff.
	m.Delete(keys[0])
	if o := take(m, r.Uint64(), 999e6, 1); o.Status != Taken {
		t.Fatal(o)
	}
	// At 1s everything is full again and the backoff is over.
	if o := take(m, r.Uint64(), 1e9, 1); o.Status != Taken {
		t.Fatal(o)
	}
}

func TestSweep(t *testing.T) {
	m := newMap(t, 1, 2, Config{MaxKeys: 100, Shards: 2})
	m.TakeAt(1, 0, 2) // empty at 0, full at 2s
	m.TakeAt(2, 0, 1) // full at 1s
	m.TakeAt(3, 0, 1)
	m.UpdateMark(3, func(Mark) (Mark, bool) { return m.MakeMark(1, false, 10e9), true })
	if n := m.SweepAt(1e9); n != 1 || m.Contains(2) || !m.Contains(1) || !m.Contains(3) {
		t.Fatalf("sweep at 1s removed %d", n)
	}
	if n := m.SweepAt(2e9); n != 1 || m.Contains(1) || !m.Contains(3) {
		t.Fatalf("sweep at 2s removed %d", n)
	}
	if n := m.SweepAt(10e9); n != 1 || m.Len() != 0 {
		t.Fatalf("sweep at 10s removed %d", n)
	}
	if c := m.Counters(); c.Swept != 3 {
		t.Fatalf("counters %+v", c)
	}
}

func TestCompactionKeepsState(t *testing.T) {
	m := newMap(t, 1, 4, Config{MaxKeys: 32, Shards: 1})
	// Churn through deletes: tombstones force compactions; surviving keys
	// keep their level and mark.
	m.TakeAt(1000, 0, 3)
	m.UpdateMark(1000, func(Mark) (Mark, bool) { return m.MakeMark(2, false, 99e9), true })
	for i := uint64(0); i < 500; i++ {
		m.TakeAt(i, 0, 1)
		if !m.Delete(i) {
			t.Fatalf("delete %d", i)
		}
	}
	if c := m.Counters(); c.Compactions == 0 {
		t.Fatalf("no compaction: %+v", c)
	}
	if lv, ok := m.LevelAt(1000, 0); !ok || lv != 1 {
		t.Fatalf("level %v %v", lv, ok)
	}
	if mk, ok := m.MarkOf(1000); !ok || mk.Count() != 2 {
		t.Fatalf("mark %x", mk)
	}
	if m.Len() != 1 {
		t.Fatalf("Len %d", m.Len())
	}
}

// TestHostileKeysSpread crafts keys that all land in shard 0 under a fixed
// hash (the secrets an attacker would have to know), then checks that a map
// with its own random secrets spreads them evenly.
func TestHostileKeysSpread(t *testing.T) {
	const shards = 16
	fixed := newMap(t, 1, 1, Config{MaxKeys: 1 << 16, Shards: shards})
	fixed.setSeed([4]uint64{1, 2, 3, 4})
	var crafted []uint64
	for k := uint64(0); len(crafted) < 4000; k++ {
		if fixed.ShardOf(k) == 0 {
			crafted = append(crafted, k)
		}
	}
	m := newMap(t, 1, 1, Config{MaxKeys: 1 << 16, Shards: shards})
	var count [shards]int
	for _, k := range crafted {
		count[m.ShardOf(k)]++
	}
	// Expected 250 per shard, σ ≈ 15.5: 6σ bounds.
	for i, c := range count {
		if c < 250-93 || c > 250+93 {
			t.Fatalf("shard %d got %d of 4000 crafted keys: %v", i, c, count)
		}
	}
	// And the keys are all tracked (none refused for a full shard).
	for _, k := range crafted {
		if o := take(m, k, 0, 1); o.Status != Taken {
			t.Fatalf("crafted key refused: %+v", o)
		}
	}
}

// TestConcurrentChurn runs takes, inserts, sweeps, evictions, compactions
// and deletes at once (run it with -race). Hot keys carry an active mark, so
// nothing but Delete may remove them, and are taken at one fixed time, so in
// all exactly burst of their takes may pass: a lost update (a take written
// into a moved or removed slot) would show as extra passes. At the end no
// key is tracked twice and the counts match the slots.
func TestConcurrentChurn(t *testing.T) {
	const burst = 50
	m := newMap(t, 1e-3, burst, Config{MaxKeys: 256, Shards: 4, EvictBackoff: -1})
	hot := []uint64{11, 22, 33, 44, 55, 66, 77, 88}
	var passed [8]atomic.Int64
	const (
		now = int64(1e9)
		t1  = now + 1e12 // churn keys taken at t1 are full at t2
		t2  = now + 3e12
		t3  = now + 5e12 // the sweeper's time: every churn key is idle
	)
	for j, k := range hot {
		if o := take(m, k, now, 1); !o.Result.OK() {
			t.Fatal(o)
		}
		passed[j].Add(1)
		m.UpdateMark(k, func(Mark) (Mark, bool) { return m.MakeMark(1, false, now+1e15), true })
	}
	var work, sweeper sync.WaitGroup
	stop := make(chan struct{})
	for g := 0; g < 4; g++ {
		work.Add(1)
		go func(g int) {
			defer work.Done()
			r := rand.New(rand.NewPCG(uint64(g), 9))
			// At least 3000 rounds, and on until the sweeper has removed
			// something while the churn runs: on a loaded machine the
			// workers can otherwise finish before the sweeper first runs.
			deadline := time.Now().Add(10 * time.Second)
			for i := 0; i < 3000 || m.Counters().Swept == 0 && time.Now().Before(deadline); i++ {
				j := r.IntN(len(hot))
				if o := take(m, hot[j], now, 1); o.Result.OK() {
					passed[j].Add(1)
				}
				k := 1000 + r.Uint64N(3000)
				switch r.IntN(5) {
				case 0:
					m.Delete(k)
				case 1, 2:
					m.TakeAt(k, t1, 1)
				default:
					m.TakeAt(k, t2, 1)
				}
			}
		}(g)
	}
	sweeper.Add(1)
	go func() {
		defer sweeper.Done()
		for {
			select {
			case <-stop:
				return
			default:
				m.SweepAt(t3)
				time.Sleep(50 * time.Microsecond)
			}
		}
	}()
	work.Wait()
	close(stop)
	sweeper.Wait()
	for j, k := range hot {
		if p := passed[j].Load(); p != burst {
			t.Errorf("hot key %d passed %d takes, want exactly %d", k, p, burst)
		}
		if !m.Contains(k) {
			t.Errorf("hot key %d lost", k)
		}
	}
	c := m.Counters()
	if c.Evicted == 0 || c.Swept == 0 || c.Deleted == 0 || c.Compactions == 0 {
		t.Errorf("churn did not exercise every path: %+v", c)
	}
	t.Logf("%+v", c)
	checkInvariants(t, m)
}

// checkInvariants scans every shard under its lock: each key at most once,
// live count equal to the live slots, tombstones counted.
func checkInvariants(t *testing.T, m *Map) {
	t.Helper()
	seen := map[uint64]bool{}
	total := 0
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		tb := sh.tab.Load()
		if tb.next.Load() != nil {
			t.Errorf("shard %d: current table has a next", i)
		}
		live, tombs, held := 0, 0, 0
		for j := range tb.m {
			s := tb.at(j)
			switch mk := Mark(s.mark.Load()); mk {
			case markEmpty:
			case markDead:
				tombs++
			default:
				if mk.Held() {
					held++
				}
				k := s.key.Load()
				if seen[k] {
					t.Errorf("key %d tracked twice", k)
				}
				seen[k] = true
				live++
				if s.word.Load() == deadWord {
					t.Errorf("key %d live with a dead word", k)
				}
				if m.ShardOf(k) != i {
					t.Errorf("key %d in shard %d, belongs to %d", k, i, m.ShardOf(k))
				}
			}
		}
		if int64(live) != sh.live.Load() || tombs != sh.tombs {
			t.Errorf("shard %d: %d live (counted %d), %d tombstones (counted %d)", i, live, sh.live.Load(), tombs, sh.tombs)
		}
		if live > m.PerShard() {
			t.Errorf("shard %d over its bound: %d", i, live)
		}
		if int64(held) != sh.held.Load() {
			t.Errorf("shard %d: %d held marks (counted %d)", i, held, sh.held.Load())
		}
		total += live
		sh.mu.Unlock()
	}
	if total != m.Len() {
		t.Errorf("Len %d, counted %d", m.Len(), total)
	}
}

func TestAllocsExistingKey(t *testing.T) {
	m := newMap(t, 1e6, 1e3, Config{MaxKeys: 1000})
	for k := uint64(0); k < 500; k++ {
		m.TakeAt(k, 0, 1)
	}
	now := int64(0)
	var k uint64
	if a := testing.AllocsPerRun(1000, func() {
		now += 1000
		k = (k + 7) % 500
		m.TakeAt(k, now, 1)
	}); a != 0 {
		t.Fatalf("%v allocations per take", a)
	}
	if a := testing.AllocsPerRun(1000, func() {
		m.UpdateMark(k, func(old Mark) (Mark, bool) { return old, true })
	}); a != 0 {
		t.Fatalf("%v allocations per UpdateMark", a)
	}
}

// MaxKeys random keys always fit, whatever the hash seed: no shard fills
// before the map does. One more key, with every bucket throttled, is Full.
func TestMaxKeysFitAndNoMore(t *testing.T) {
	for _, n := range []int{1, 7, 1000, 20000} {
		for seed := uint64(0); seed < 20; seed++ {
			m := newMap(t, 1, 1, Config{MaxKeys: n, EvictBackoff: -1})
			r := rand.New(rand.NewPCG(seed, uint64(n)))
			for i := 0; i < n; i++ {
				if o := take(m, r.Uint64(), 0, 1); o.Status != Taken {
					t.Fatalf("MaxKeys %d seed %d: key %d of %d refused: %+v", n, seed, i, n, o)
				}
			}
			if o := take(m, r.Uint64(), 0, 1); o.Status != Full {
				t.Fatalf("MaxKeys %d: key %d admitted: %+v", n, n+1, o)
			}
			if m.Len() != n {
				t.Fatalf("Len %d, want %d", m.Len(), n)
			}
		}
	}
}

// outcome bundles Map.TakeAt's two results, and the key's mark after the
// take (0 if the key is not tracked), for assertions.
type outcome struct {
	Result atomicbucket.Result
	Mark   Mark
	Status Status
}

func take(m *Map, key uint64, now int64, n uint64) outcome {
	r, st := m.TakeAt(key, now, n)
	mk, _ := m.MarkOf(key)
	return outcome{r, mk, st}
}

// A key idle long past a fill time has a full bucket, no more: the pass
// path's full-bucket branch (NextFull) leaves the burst less the take, and
// its partial branch (NextPartial) counts down from there, one token or
// several at a time, to a denial. A full bucket decided as a partial one
// would be credited with all the time it sat idle.
func TestIdleKeyTakesFromAFullBucket(t *testing.T) {
	for _, n := range []uint64{1, 2} {
		m := newMap(t, 10, 6, Config{MaxKeys: 100, Shards: 1})
		if r, st := m.TakeAt(7, 0, 1); st != Taken || !r.OK() {
			t.Fatalf("n %d: the first take: %v %v", n, r, st)
		}
		now := int64(3600e9) // an hour on: 36,000 tokens' worth of time
		for want := 6 - int64(n); want >= 0; want -= int64(n) {
			r, st := m.TakeAt(7, now, n)
			if st != Taken || !r.OK() || int64(r.Remaining()) != want {
				t.Fatalf("n %d: take at %d left: ok %v, %d remaining, status %v; want %d", n, want+int64(n), r.OK(), r.Remaining(), st, want)
			}
		}
		if r, _ := m.TakeAt(7, now, n); r.OK() {
			t.Fatalf("n %d: a take past the burst passed, %d remaining", n, r.Remaining())
		}
	}
}
