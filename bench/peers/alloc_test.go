package peers

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/sluicedev/sluice/atomicbucket"
)

// TestSluiceZeroAllocs holds every sluice path measured here to 0 allocs per
// take: the take calls themselves (strictly, with testing.AllocsPerRun), and
// the benchmark bodies exactly as BenchmarkOneBucket and BenchmarkKeyed run
// them (run through testing.Benchmark at a fixed 20000x, as allocs/op).
// Every OneBucket or keyed impl whose name starts with "sluice" is covered,
// so a sluice impl added to a registry is covered too.
func TestSluiceZeroAllocs(t *testing.T) {
	// The take calls, strictly.
	for _, c := range oneBucketConfigs {
		bk, err := atomicbucket.NewAt(c.rate, c.burst, 0)
		if err != nil {
			t.Fatal(err)
		}
		now := int64(0)
		clk := atomicbucket.StartCoarseClock(time.Millisecond)
		paths := map[string]func(){
			"Take":           func() { bk.Take(1) },
			"TakeAt":         func() { now++; bk.TakeAt(now, 1) },
			"TakeAt(coarse)": func() { bk.TakeAt(clk.Now(), 1) },
		}
		for name, f := range paths {
			if a := testing.AllocsPerRun(1000, f); a != 0 {
				t.Errorf("%s/%s: %v allocs per take, want 0", c.name, name, a)
			}
		}
		clk.Stop()
	}

	// The benchmark bodies.
	if testing.Short() {
		t.Skip("benchmark bodies skipped in -short mode")
	}
	bt := flag.Lookup("test.benchtime")
	old := bt.Value.String()
	if err := bt.Value.Set("20000x"); err != nil {
		t.Fatal(err)
	}
	defer bt.Value.Set(old)

	check := func(name string, f func(b *testing.B)) {
		t.Helper()
		r := testing.Benchmark(f)
		switch {
		case r.N == 0:
			t.Errorf("%s: the benchmark failed", name)
		case r.AllocsPerOp() != 0:
			t.Errorf("%s: %d allocs/op (%d allocs in %d ops), want 0", name, r.AllocsPerOp(), r.MemAllocs, r.N)
		}
	}
	for _, im := range oneBucketImpls {
		if !strings.HasPrefix(im.name, "sluice") {
			continue
		}
		for _, c := range oneBucketConfigs {
			check("OneBucket/"+im.name+"/"+c.name+"/serial", func(b *testing.B) { runOneBucket(b, c, im.serial) })
			check("OneBucket/"+im.name+"/"+c.name+"/parallel", func(b *testing.B) { runOneBucket(b, c, im.parallel) })
		}
	}
	for _, im := range keyedImpls {
		if !strings.HasPrefix(im.name, "sluice") {
			continue
		}
		ks := keySetOf(1_000)
		lim := im.build(t, ks, keyedCfg)
		if bl, ok := lim.(batchLimiter); ok && im.batch > 0 {
			check("Keyed/"+im.name+"/1k/serial", func(b *testing.B) { keyedSerialBatch(b, ks, bl, im.batch) })
			check("Keyed/"+im.name+"/1k/parallel", func(b *testing.B) { keyedParallelBatch(b, ks, bl, im.batch) })
			keys := ks.u[:im.batch]
			bt := bl.Batcher(im.batch)
			if a := testing.AllocsPerRun(100, func() { bt.TakeBatch(keys, atomicbucket.Nanotime()) }); a != 0 {
				t.Errorf("Keyed/%s: %v allocs per batch, want 0", im.name, a)
			}
		} else {
			check("Keyed/"+im.name+"/1k/serial", func(b *testing.B) { keyedSerial(b, ks, lim) })
			check("Keyed/"+im.name+"/1k/parallel", func(b *testing.B) { keyedParallel(b, ks, lim) })
		}
		if a := testing.AllocsPerRun(1000, func() { lim.Take(int(ks.draws[0]), ks.u[ks.draws[0]], atomicbucket.Nanotime()) }); a != 0 {
			t.Errorf("Keyed/%s: %v allocs per take, want 0", im.name, a)
		}
		lim.Close()
	}
}
