// Package lincheck holds what the linearizability tests of the keyed
// packages share: porcupine histories of takes on many keys are checked
// key by key, since takes on different keys never affect each other.
package lincheck

import "github.com/anishathalye/porcupine"

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
