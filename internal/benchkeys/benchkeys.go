// Package benchkeys holds how the keyed benchmarks choose their keys: the
// random keys a fixture is filled with, and the draw of one of them per
// operation. The draw is a xorshift64 step and a multiply-shift onto an
// index, cheap enough not to hide the take it feeds, and the same in a
// benchmark and in the floor it is held to. Next and Pick are inlined where
// they are called, so a timed loop that uses them runs the same code as one
// that wrote them out.
//
// The functions keep no state and are safe for concurrent use.
package benchkeys

import "math/rand/v2"

// Start is the first state of a serial benchmark's draws.
const Start uint64 = 88172645463325252

// Next is one xorshift64 step: the next state after x (never 0 if x is not).
func Next(x uint64) uint64 {
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	return x
}

// Pick maps x's high bits onto [0, n) without a division.
func Pick(x uint64, n int) int { return int(((x >> 32) * uint64(n)) >> 32) }

// Stride gives each goroutine of a parallel run its own first state,
// seed.Add(Stride)|1 on an atomic.Uint64 the run's goroutines share, so
// that they draw different sequences (the |1 keeps a state from 0, where a
// xorshift stays). It is a constant, not a method on the seed, so that a
// goroutine's code is the same as with the number written out (an inlined
// method leaves a no-op instruction in front of the loop).
const Stride uint64 = 0x9e3779b97f4a7c15

// Fill draws random keys from the fixtures' fixed seed and returns the first
// n that keep accepts, in order (keep inserts a key into the fixture, and
// refuses one that a full shard has no room for). With the same keep, every
// call returns the same keys.
func Fill(n int, keep func(k uint64) bool) []uint64 {
	r := rand.New(rand.NewPCG(1, 2))
	keys := make([]uint64, 0, n)
	for len(keys) < n {
		if k := r.Uint64(); keep(k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// Random returns the first n keys Fill draws, none refused: the keys of a
// floor, a plain map that has room for all of them.
func Random(n int) []uint64 { return Fill(n, func(uint64) bool { return true }) }
