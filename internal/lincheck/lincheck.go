// Package lincheck holds what the linearizability tests of the keyed
// packages share: concurrent histories recorded for porcupine, and checked
// key by key, since takes on different keys never affect each other.
package lincheck

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// PartitionByKey returns a porcupine Partition function that splits a
// history by the key its operations' inputs name, keeping the order in
// which keys first appear (so checking is deterministic).
func PartitionByKey(key func(input any) uint64) func([]porcupine.Operation) [][]porcupine.Operation {
	return func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[uint64][]porcupine.Operation{}
		var order []uint64
		for _, op := range h {
			k := key(op.Input)
			if by[k] == nil {
				order = append(order, k)
			}
			by[k] = append(by[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(order))
		for _, k := range order {
			out = append(out, by[k])
		}
		return out
	}
}

// Record runs workers goroutines at once, each performing opsEach
// operations, and returns the history of all of them. For each operation,
// next draws the input from the worker's own generator (seeded by seed and
// the worker's index, so a history's inputs are reproducible), and apply
// performs it and returns its output, or false to stop that worker (the
// test has failed; the stopped worker's operations are left out). Call and
// return times are nanoseconds on one monotonic clock, read around apply
// alone, so that drawing an input never widens an operation's interval.
func Record(workers, opsEach int, seed uint64, next func(r *rand.Rand) any, apply func(input any) (output any, ok bool)) []porcupine.Operation {
	start := time.Now()
	perWorker := make([][]porcupine.Operation, workers)
	var wg sync.WaitGroup
	for g := range perWorker {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			ops := make([]porcupine.Operation, 0, opsEach)
			for range opsEach {
				in := next(r)
				call := time.Since(start).Nanoseconds()
				out, ok := apply(in)
				ret := time.Since(start).Nanoseconds()
				if !ok {
					return
				}
				ops = append(ops, porcupine.Operation{ClientId: g, Input: in, Call: call, Output: out, Return: ret})
			}
			perWorker[g] = ops
		}()
	}
	wg.Wait()
	var history []porcupine.Operation
	for _, ops := range perWorker {
		history = append(history, ops...)
	}
	return history
}
