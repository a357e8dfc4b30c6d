package atomicbucket

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// Linearizability of concurrent takes, checked with porcupine against the
// sequential specification refStep. An operation is a take on one of several
// buckets: input (bucket, now passed in, n), output the whole decision
// (status, remaining, and RetryAfter as well). Buckets are independent, so
// the model is partitioned per bucket.

type linInput struct {
	bucket int
	now    int64
	n      uint64
}

type linOutput struct {
	status    Status
	remaining uint32
	retry     time.Duration
}

// linState is one bucket's word; until the first step of a partition the
// state is unset and stands for the bucket's initial (full) word.
type linState struct {
	set  bool
	word uint64
}

// linBucket is one bucket of a linearizability run and how its load is
// drawn: now advances by 0..dtMax per take on a per-bucket virtual clock
// (sometimes read stale), n is 1..maxN.
type linBucket struct {
	rate, burst float64
	maxN        uint64
	dtMax       int64

	p     *params
	init  uint64
	b     *Bucket
	clock atomic.Int64
}

func newLinBuckets(t testing.TB) []*linBucket {
	t.Helper()
	bs := []*linBucket{
		{rate: 1e7, burst: 3, maxN: 2, dtMax: 120},            // a token per 100ns
		{rate: 480_000, burst: 8000, maxN: 3000, dtMax: 5000}, // bytes
		{rate: 1e9, burst: 5, maxN: 3, dtMax: 3},              // F = 0, ρ = 1
		{rate: 30, burst: 30, maxN: 10, dtMax: 1e8},           // ~3 tokens per step
	}
	for i, lb := range bs {
		b, err := NewAt(lb.rate, lb.burst, int64(i)*1e6)
		if err != nil {
			t.Fatal(err)
		}
		lb.b, lb.p, lb.init = b, b.p.Load(), b.Word()
		lb.clock.Store(int64(i) * 1e6)
	}
	return bs
}

func linModel(bs []*linBucket) porcupine.Model {
	return porcupine.Model{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			parts := make([][]porcupine.Operation, len(bs))
			for _, op := range h {
				id := op.Input.(linInput).bucket
				parts[id] = append(parts[id], op)
			}
			return nonEmpty(parts)
		},
		PartitionEvent: func(h []porcupine.Event) [][]porcupine.Event {
			parts := make([][]porcupine.Event, len(bs))
			of := map[int]int{} // event id → bucket, from the call
			for _, ev := range h {
				if ev.Kind == porcupine.CallEvent {
					of[ev.Id] = ev.Value.(linInput).bucket
				}
				parts[of[ev.Id]] = append(parts[of[ev.Id]], ev)
			}
			return nonEmpty(parts)
		},
		Init: func() any { return linState{} },
		Step: func(state, input, output any) (bool, any) {
			st, in, out := state.(linState), input.(linInput), output.(linOutput)
			lb := bs[in.bucket]
			w := lb.init
			if st.set {
				w = st.word
			}
			r, next := refStep(lb.p, w, in.now, in.n)
			if (linOutput{r.Status, r.Remaining, r.RetryAfter}) != out {
				return false, st
			}
			return true, linState{set: true, word: next}
		},
		Hash: func(state any) uint64 { return state.(linState).word },
		DescribeOperation: func(input, output any) string {
			in, out := input.(linInput), output.(linOutput)
			return fmt.Sprintf("b%d.take(now=%d, n=%d) → %v rem=%d retry=%v", in.bucket, in.now, in.n, out.status, out.remaining, out.retry)
		},
		DescribeState: func(state any) string { return fmt.Sprintf("%+v", state) },
	}
}

func nonEmpty[T any](parts [][]T) [][]T {
	out := parts[:0]
	for _, p := range parts {
		if len(p) > 0 {
			out = append(out, p)
		}
	}
	return out
}

// takeFunc is the operation under test: a take on bucket lb.
type takeFunc func(lb *linBucket, now int64, n uint64) decision

func atomicTake(lb *linBucket, now int64, n uint64) decision {
	return decisionOf(lb.b.TakeAt(now, n))
}

// racyTake is a deliberately broken take: it loads the word, computes, yields
// to widen the window, then stores without a CompareAndSwap.
func racyTake(lb *linBucket, now int64, n uint64) decision {
	old := lb.b.word.Load()
	r, next := refStep(lb.p, old, now, n)
	runtime.Gosched()
	if next != old {
		lb.b.word.Store(next)
	}
	return r
}

// recordHistory runs clients goroutines, each doing opsPerClient takes on
// random buckets, and records every take with logical call and return
// timestamps from one shared counter (so real-time order is preserved). The
// goroutines meet at a spinning barrier every few takes, so that they run
// their takes at the same moment rather than one after another. With widen,
// half the takes yield between their call and the take itself, so that
// recorded intervals overlap heavily even on a busy machine with few cores.
func recordHistory(bs []*linBucket, take takeFunc, clients, opsPerClient int, seed uint64, widen bool) []porcupine.Operation {
	const phase = 16 // takes between barriers
	var seq atomic.Int64
	var arrived atomic.Int64
	barrier := func(k int64) {
		arrived.Add(1)
		for spin := 0; arrived.Load() < k*int64(clients); spin++ {
			if spin%64 == 63 {
				runtime.Gosched() // lets the others run at GOMAXPROCS=1
			}
		}
	}
	var wg sync.WaitGroup
	hist := make([][]porcupine.Operation, clients)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			ops := make([]porcupine.Operation, 0, opsPerClient)
			for i := 0; i < opsPerClient; i++ {
				if i%phase == 0 {
					barrier(int64(i/phase + 1))
				}
				// Most takes of a phase go to one bucket, so that
				// concurrent takes meet on the same word.
				id := (i / phase) % len(bs)
				if rng.IntN(4) == 0 {
					id = rng.IntN(len(bs))
				}
				lb := bs[id]
				now := lb.clock.Add(rng.Int64N(lb.dtMax + 1))
				if rng.IntN(6) == 0 {
					now -= rng.Int64N(2*lb.dtMax + 1) // a stale or slow clock reading
				}
				n := uint64(1)
				if rng.IntN(3) == 0 {
					n = 1 + rng.Uint64N(lb.maxN)
				}
				in := linInput{bucket: id, now: now, n: n}
				call := seq.Add(1)
				if widen && rng.IntN(2) == 0 {
					// Widen the recorded interval: other takes may
					// start and finish between the call and the take.
					runtime.Gosched()
				}
				r := take(lb, now, n)
				ret := seq.Add(1)
				ops = append(ops, porcupine.Operation{
					ClientId: c, Input: in, Call: call,
					Output: linOutput{r.Status, r.Remaining, r.RetryAfter}, Return: ret,
				})
			}
			hist[c] = ops
		}(c)
	}
	wg.Wait()
	var all []porcupine.Operation
	for _, h := range hist {
		all = append(all, h...)
	}
	// After everything, one more take of one token per bucket at its
	// clock: its decision pins the state the concurrent takes left behind.
	for id, lb := range bs {
		now := lb.clock.Load()
		call := seq.Add(1)
		r := take(lb, now, 1)
		all = append(all, porcupine.Operation{
			ClientId: clients, Input: linInput{bucket: id, now: now, n: 1}, Call: call,
			Output: linOutput{r.Status, r.Remaining, r.RetryAfter}, Return: seq.Add(1),
		})
	}
	return all
}

// toEvents turns an operation history into the equivalent event history.
func toEvents(ops []porcupine.Operation) []porcupine.Event {
	type stamped struct {
		at int64
		ev porcupine.Event
	}
	var s []stamped
	for id, op := range ops {
		s = append(s,
			stamped{op.Call, porcupine.Event{ClientId: op.ClientId, Kind: porcupine.CallEvent, Value: op.Input, Id: id}},
			stamped{op.Return, porcupine.Event{ClientId: op.ClientId, Kind: porcupine.ReturnEvent, Value: op.Output, Id: id}})
	}
	sort.Slice(s, func(i, j int) bool { return s[i].at < s[j].at })
	evs := make([]porcupine.Event, len(s))
	for i := range s {
		evs[i] = s[i].ev
	}
	return evs
}

const linTimeout = 20 * time.Second // a backstop: checks take milliseconds

func TestTakeIsLinearizable(t *testing.T) {
	rounds := 8
	if testing.Short() {
		rounds = 1
	}
	for _, procs := range []int{1, 2, 4, 8} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			overlapping, total := 0, 0
			var slowest time.Duration
			defer func() {
				t.Logf("%d of %d takes overlapped another take on the same bucket; slowest check %v", overlapping, total, slowest)
			}()
			for round := 0; round < rounds; round++ {
				bs := newLinBuckets(t)
				model := linModel(bs)
				hist := recordHistory(bs, atomicTake, 8, 64, uint64(procs*100+round), round%2 == 1)
				began := time.Now()
				res, info := porcupine.CheckOperationsVerbose(model, hist, linTimeout)
				slowest = max(slowest, time.Since(began))
				if res != porcupine.Ok {
					t.Errorf("round %d: %d operations: %v%s", round, len(hist), res, visualize(model, info))
				}
				// The same history as events goes through PartitionEvent.
				if res := porcupine.CheckEventsTimeout(model, toEvents(hist), linTimeout); res != porcupine.Ok {
					t.Errorf("round %d: event history: %v", round, res)
				}
				overlapping += countOverlapping(hist)
				total += len(hist)
			}
		})
	}
}

// The checker is not vacuous: the same workload on a take that loads,
// computes, yields and stores (no CompareAndSwap) is found Illegal.
func TestCheckerCatchesNonAtomicTake(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	var results []porcupine.CheckResult
	for attempt := 0; attempt < 10; attempt++ {
		bs := newLinBuckets(t)
		res := porcupine.CheckOperationsTimeout(linModel(bs), recordHistory(bs, racyTake, 8, 40, uint64(attempt), false), linTimeout)
		results = append(results, res)
		if res == porcupine.Illegal {
			return
		}
	}
	t.Fatalf("the non-atomic take was never found illegal: %v", results)
}

// visualize writes porcupine's visualization of a failed check to a file
// that outlives the test, and returns a note naming it.
func visualize(model porcupine.Model, info porcupine.LinearizationInfo) string {
	f, err := os.CreateTemp("", "atomicbucket-linearizability-*.html")
	if err != nil {
		return ""
	}
	defer f.Close()
	if err := porcupine.Visualize(model, info, f); err != nil {
		return ""
	}
	return "; visualization in " + f.Name()
}

// countOverlapping counts the operations whose [call, return] interval
// overlaps that of another operation on the same bucket.
func countOverlapping(hist []porcupine.Operation) int {
	byBucket := map[int][]porcupine.Operation{}
	for _, op := range hist {
		id := op.Input.(linInput).bucket
		byBucket[id] = append(byBucket[id], op)
	}
	count := 0
	for _, ops := range byBucket {
		for i, a := range ops {
			for j, b := range ops {
				if i != j && a.Call < b.Return && b.Call < a.Return {
					count++
					break
				}
			}
		}
	}
	return count
}
