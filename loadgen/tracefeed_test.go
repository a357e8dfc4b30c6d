package loadgen

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/record"
	"github.com/sluicedev/sluice/loadgen/sim"
	"github.com/sluicedev/sluice/trace"
)

func matchTrace(t testing.TB, sessions, messages int) (string, time.Duration) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "match.trace")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := trace.NewWriter(f, trace.Header{Recorder: "test"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := sim.WriteMatchTrace(w, sessions, messages)
	if err != nil {
		t.Fatal(err)
	}
	return path, d
}

// A trace of a million messages replays with a heap bounded by what the
// replay needs at once (a block of the trace, the open sessions, the run's
// series), not by the trace's length: the records alone would take more
// than 100 MB in memory.
func TestTraceReplayMemoryIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("a million messages")
	}
	const messages = 1_000_000
	path, d := matchTrace(t, 200, messages)
	plan := behave.Plan{Seed: 1, Duration: d + time.Second, Populations: []behave.Population{
		{Name: "players", Clients: 1, Behaviour: &sim.Trace{File: path, Group: "players"}},
	}}
	var peak uint64
	var ms runtime.MemStats
	sample := func() {
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapAlloc)
	}
	runtime.GC()
	sample()
	base := peak
	spec := RunSpec{Plan: plan, Interval: 5 * time.Second, Progress: func(done, total time.Duration) { sample() }}
	res, err := RunSim(context.Background(), spec, behave.DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Recorder.KindDecisions(0, behave.KindMove)[record.Accepted]; got != messages {
		t.Fatalf("%d moves accepted of %d replayed", got, messages)
	}
	const bound = 48 << 20
	t.Logf("heap: %d MB before, peak %d MB while replaying %d messages", base>>20, peak>>20, messages)
	if peak-base > bound {
		t.Fatalf("the heap grew by %d MB replaying the trace, more than %d MB", (peak-base)>>20, bound>>20)
	}
}

// A sampled, sped-up, windowed and repeated replay: the window and speed
// place the records, the sample keeps about its share of sessions, and
// each copy brings its own sessions and accounts.
func TestTraceReplayWindowSampleRepeat(t *testing.T) {
	path, _ := matchTrace(t, 100, 100_000) // 50 s of trace
	run := func(tr *sim.Trace) *Result {
		t.Helper()
		plan := behave.Plan{Seed: 1, Duration: 20 * time.Second, Populations: []behave.Population{{Name: "players", Clients: 1, Behaviour: tr}}}
		pol := behave.DefaultPolicy()
		pol.Channels[behave.DefaultChannels[behave.KindMove]].Rate = new(1000.0) // twice the speed stays within it
		pol.Channels[behave.DefaultChannels[behave.KindMove]].Burst = new(1000.0)
		res, err := RunSim(context.Background(), RunSpec{Plan: plan}, pol)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	moves := func(r *Result) (n int64) { // decided, accepted or not (twice the speed is over the move channel's rate)
		for _, c := range r.Recorder.KindDecisions(0, behave.KindMove) {
			n += c
		}
		return n
	}
	all := moves(run(&sim.Trace{File: path, From: 10 * time.Second, To: 20 * time.Second}))
	// 10 s of trace at 2000 messages/s, less the sessions opened before the window
	// (all of them: a session opened before From is not replayed).
	if all != 0 {
		t.Fatalf("%d moves replayed from sessions opened before the window", all)
	}
	full := moves(run(&sim.Trace{File: path, To: 10 * time.Second}))
	if full < 19000 || full > 20000 {
		t.Fatalf("%d moves in the first 10 s of trace, want about 20000", full)
	}
	fast := moves(run(&sim.Trace{File: path, Speed: 2}))
	if fast < 79000 || fast > 80000 {
		t.Fatalf("%d moves in 20 s at twice the speed, want about 80000 (40 s of trace)", fast)
	}
	half := moves(run(&sim.Trace{File: path, To: 10 * time.Second, Sample: 0.5, Seed: 3}))
	if half < full*3/10 || half > full*7/10 {
		t.Fatalf("sample 0.5 replayed %d of %d", half, full)
	}
	twice := moves(run(&sim.Trace{File: path, To: 10 * time.Second, Repeat: 2, Every: 5 * time.Second}))
	if twice != 2*full {
		// The second copy of the 10 s window runs from 5 s to 15 s, within the run.
		t.Fatalf("repeat 2 every 5s replayed %d, want %d", twice, 2*full)
	}
}

// blockHeadLen is the length of a trace block's header (package trace's doc).
const blockHeadLen = 16

// A truncated trace stops the replay with an error naming the damage;
// with Partial it replays up to the damage and says what was lost.
func TestTraceReplayPartial(t *testing.T) {
	path, _ := matchTrace(t, 50, 100_000)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Cut in the middle of the payload of the block that holds the file's
	// middle byte: a cut inside a block header would lose no record the
	// header announced (the match trace's blocks compress to a few
	// hundred bytes, so a cut at the middle byte can land in one).
	off := 13 + int(binary.LittleEndian.Uint32(data[9:]))
	for {
		plen := int(binary.LittleEndian.Uint32(data[off:]))
		if off+blockHeadLen+plen > len(data)/2 {
			off += blockHeadLen + plen/2
			break
		}
		off += blockHeadLen + plen
	}
	if err := os.WriteFile(path, data[:off], 0o644); err != nil {
		t.Fatal(err)
	}
	plan := behave.Plan{Seed: 1, Duration: 60 * time.Second, Populations: []behave.Population{{Name: "p", Clients: 1, Behaviour: &sim.Trace{File: path}}}}
	_, err = RunSim(context.Background(), RunSpec{Plan: plan}, behave.DefaultPolicy())
	var fe *trace.FormatError
	if !errors.As(err, &fe) || !errors.Is(err, trace.ErrTruncated) {
		t.Fatalf("error %v, want the trace's truncation", err)
	}
	plan.Populations[0].Behaviour = &sim.Trace{File: path, Partial: true}
	res, err := RunSim(context.Background(), RunSpec{Plan: plan}, behave.DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	st := res.Traces[0]
	if st.Damage == nil || st.Damage.LostRecords == 0 || st.Frames == 0 || st.Frames >= 100_000 {
		t.Fatalf("stats %+v, damage %v", st, st.Damage)
	}
	t.Logf("replayed %d frames, then: %v", st.Frames, st.Damage)
}
